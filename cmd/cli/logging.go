package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lmittmann/tint"
)

// newLogger builds the process logger: format "json" is slog's JSON
// handler (the audit trail, written compactly: jsonHandler), "text" is
// tint's text without colour, and "auto" picks tint's coloured text when
// w is a terminal and JSON otherwise. Every line carries replica. The
// lines of concurrent calls reach w together (loggroup.go).
func newLogger(w io.Writer, format, level, replica string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log.level %q: %w", level, err)
	}
	g := newGroupWriter(w)
	var h slog.Handler
	switch strings.ToLower(format) {
	case "json":
		h = jsonHandler(g, lv)
	case "text":
		h = tint.NewHandler(g, &tint.Options{Level: lv, NoColor: true, TimeFormat: time.RFC3339Nano, ReplaceAttr: safeMessage})
	case "auto", "":
		if isTerminal(w) {
			h = tint.NewHandler(g, &tint.Options{Level: lv, TimeFormat: time.TimeOnly, ReplaceAttr: safeMessage})
		} else {
			h = jsonHandler(g, lv)
		}
	default:
		return nil, fmt.Errorf("log.format %q: want auto, json or text", format)
	}
	return slog.New(groupHandler{h, g}).With("replica", replica), nil
}

// safeMessage quotes a text line's message when it holds a control
// character, an invalid byte or a rune that does not print. tint writes
// the message as it is (its attribute values it quotes itself), and a
// message can come from the configuration (the log plugin's message) or a
// job: a "\n" in it would forge a whole log line, an escape sequence
// would reach the operator's terminal. JSON lines escape all of it.
func safeMessage(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.MessageKey && a.Value.Kind() == slog.KindString {
		if s := a.Value.String(); !printable(s) {
			a.Value = slog.StringValue(strconv.Quote(s))
		}
	}
	return a
}

// printable reports whether s is valid UTF-8 of printable runes and
// spaces only (no control character, no other white space).
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (r != ' ' && !unicode.IsPrint(r)) {
			return false
		}
	}
	return true
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	if lw, ok := w.(*logWatch); ok {
		w = lw.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// replicaName is SLOTLOCK_REPLICA, then CONTAINER_APP_REPLICA_NAME (set by
// Azure Container Apps), then the host name.
func replicaName(getenv func(string) string) string {
	for _, k := range []string{"SLOTLOCK_REPLICA", "CONTAINER_APP_REPLICA_NAME"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "slotlock"
}
