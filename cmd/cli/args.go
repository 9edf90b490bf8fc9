package cli

import (
	"strconv"
	"unicode/utf8"
)

// maxArgEcho is how much of a command-line argument an error quotes back:
// enough to recognise it, not a screenful (a 70 KB job name was echoed
// whole).
const maxArgEcho = 80

// quoteArg quotes an argument for an error, cut to maxArgEcho bytes on a
// rune boundary, with its full length said when cut.
func quoteArg(s string) string {
	if len(s) <= maxArgEcho {
		return strconv.Quote(s)
	}
	cut := maxArgEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
