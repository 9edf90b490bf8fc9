package ui

import (
	"bytes"
	"html/template"
	"strings"
	"testing"
)

// escapeTmpl puts one value in each place the page puts values: an
// element's text, plain quoted attributes (title, class after a word,
// data-*, value) and an href's whole value.
var escapeTmpl = template.Must(template.New("escape").Parse(
	`<p>{{.}}</p><p title="{{.}}" class="dot {{.}}" data-slot="{{.}}"><input value="{{.}}"><a href="{{.}}">x</a>`))

// escapeByHand writes what escapeTmpl writes, with the page's escapers.
func escapeByHand(s string) string {
	var b bytes.Buffer
	b.WriteString("<p>")
	escapeHTML(&b, s)
	b.WriteString(`</p><p title="`)
	escapeHTML(&b, s)
	b.WriteString(`" class="dot `)
	escapeHTML(&b, s)
	b.WriteString(`" data-slot="`)
	escapeHTML(&b, s)
	b.WriteString(`"><input value="`)
	escapeHTML(&b, s)
	b.WriteString(`"><a href="`)
	escapeURL(&b, s)
	b.WriteString(`">x</a>`)
	return b.String()
}

// The page's escapers write, for any text, what html/template writes for
// it in the same places.
//
//	go test ./internal/ui -run '^$' -fuzz FuzzEscapersAgreeWithTemplate -fuzztime 1m
func FuzzEscapersAgreeWithTemplate(f *testing.F) {
	for _, s := range []string{
		"", "plain", hostile, odd, "\x00\xff\xfe invalid \xc3", "\ufdd0\ufffe\uffff\ufffd",
		"?job=a&since=1h&slot=2026-12-01T15%3A30%3A10Z#detail", "?q=r%2Be&offset=50",
		"javascript:alert(1)", "JavaScript:alert(1)", " javascript:x", "data:text/html,<b>", "vbscript:x",
		"http://example.com/a b?c=d e", "HTTPS://x/'\"()", "mailto:a@b", "/rel:ative", "a/b:c", "?x=1:2",
		"%", "%4", "%41", "%zz", "%%41", "100%", "a%4", "[]!#$&*+,/:;=?@'()~-._ \t\r\n<>\"`{}|\\^",
		"é€😀", strings.Repeat("&", 300),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want strings.Builder
		if err := escapeTmpl.Execute(&want, s); err != nil {
			t.Fatal(err)
		}
		if got := escapeByHand(s); got != want.String() {
			t.Errorf("escaping %q:\n got %s\nwant %s", s, got, want.String())
		}
	})
}
