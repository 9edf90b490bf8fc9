package ui

import (
	"bytes"
	"strings"
)

// The page's escaping, written out rather than left to html/template: the
// template package finds a value's methods by name through reflection,
// which keeps every exported method of every type linked into the binary
// (megabytes in a service that embeds the scheduler). The page puts values
// in three places only, and each has its escaper here, the one html/template
// chose for that place (TestEscapersAgreeWithTemplate fuzzes each against
// it):
//
//   - an element's text and a double-quoted attribute's value (title,
//     value, class, data-*): escapeHTML, html/template's htmlEscaper and
//     attrEscaper on a string (they share one table);
//   - a URL that is a double-quoted href's whole value: escapeURL,
//     html/template's urlFilter, urlNormalizer then attrEscaper.
//
// No value goes into a script, a style, an event handler or an unquoted
// attribute: the page's script and stylesheet are files of their own
// (the Content-Security-Policy allows no inline one), and the auto-refresh
// interval reaches the script as a number in a data attribute.

// htmlEscaper is html/template's htmlReplacementTable: NUL, both quotes,
// &, + (a UTF-7 attack vector) and the angle brackets. Every other byte,
// invalid UTF-8 included, is written as it is.
var htmlEscaper = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "'", "&#39;", "&", "&amp;", "+", "&#43;",
	"<", "&lt;", ">", "&gt;")

// escapeHTML writes s as an element's text or a double-quoted attribute's
// value.
func escapeHTML(b *bytes.Buffer, s string) {
	_, _ = htmlEscaper.WriteString(b, s)
}

// unsafeURL is what html/template writes for a URL whose scheme is not
// http, https or mailto (javascript:, data:, ...): a fragment that goes
// nowhere.
const unsafeURL = "#ZgotmplZ"

// escapeURL writes s as the whole value of a double-quoted href: a URL of
// another scheme than http, https or mailto is replaced by unsafeURL, bytes
// that may not appear in a URL are percent-encoded (valid %XX escapes and
// the reserved characters are kept), and the result is escaped as an
// attribute's value.
func escapeURL(b *bytes.Buffer, s string) {
	if !isSafeURL(s) {
		s = unsafeURL
	}
	escapeHTML(b, normalizeURL(s))
}

// isSafeURL reports whether s is relative (no scheme before its first
// '/') or of a scheme the page may link to.
func isSafeURL(s string) bool {
	scheme, _, ok := strings.Cut(s, ":")
	if !ok || strings.Contains(scheme, "/") {
		return true
	}
	return strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https") || strings.EqualFold(scheme, "mailto")
}

// normalizeURL percent-encodes, in lower-case hex, every byte of s that is
// neither unreserved (RFC 3986 section 2.3) nor reserved, and every '%'
// that does not start a valid escape.
func normalizeURL(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if urlKeeps(c) || c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			continue
		}
		if written == 0 {
			b.Grow(len(s) + 16)
		}
		b.WriteString(s[written:i])
		b.WriteByte('%')
		b.WriteByte(lowerHex[c>>4])
		b.WriteByte(lowerHex[c&0xf])
		written = i + 1
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

const lowerHex = "0123456789abcdef"

// urlKeeps reports whether c stays as it is in a normalized URL: an
// unreserved character or a reserved one but the quote and parentheses
// (encoded so that the URL is safe in any attribute quoting).
func urlKeeps(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!#$&*+,/:;=?@[]", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
