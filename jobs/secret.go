package jobs

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/slotlock/slotlock/internal/strictdecode"
)

// This file is the one home of masking in slotlock: the configuration dump
// (start-up line, `validate -v`) and the plugins' log lines and errors all
// go through it, so a credential is hidden the same way everywhere.

// Redacted is what secret values are replaced with in logs and in the
// redacted configuration.
const Redacted = "***"

// LooksSecret reports whether a header, parameter or environment name looks
// like it holds a credential, so its value must never be logged. It matches,
// case-insensitively: Authorization, Proxy-Authorization, Cookie,
// Set-Cookie, sig, code, sas, IDENTITY_HEADER, and names containing "token", "secret",
// "password", "passwd", "credential", "apikey", "api_key", "api-key",
// "signature", "private", "auth", "accesskey", "accountkey",
// "sharedaccess", "connectionstring", "connection_string", or ending in
// "key" after a separator ("X-Api-Key", "access_key", "key"). It errs on
// the side of hiding.
func LooksSecret(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie", "key", "auth", "pass", "pwd",
		"sig", "code", "sas", "identity_header", "x-identity-header":
		return true
	}
	for _, s := range []string{"token", "secret", "password", "passwd", "credential", "apikey", "api_key", "api-key",
		"signature", "private", "auth", "accesskey", "accountkey", "sharedaccess", "connectionstring", "connection_string"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	for _, s := range []string{"-key", "_key", ".key"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// ValueLooksSecret reports whether a value is a credential whatever its
// name: an Authorization-style value ("Bearer ...", "Basic ...",
// "SharedAccessSignature ...", also after a space), a header written as
// one string ("X-Api-Key: ..."), or a connection string, query string or
// option with a credential-looking part ("AccountKey=...;",
// "a=1&sig=...", "--password=..."); a part whose value is already "***"
// does not count.
func ValueLooksSecret(v string) bool {
	lv := strings.ToLower(strings.TrimSpace(v))
	for _, p := range []string{"bearer ", "basic ", "digest ", "sharedaccesssignature "} {
		if strings.HasPrefix(lv, p) || strings.Contains(lv, " "+p) {
			return true
		}
	}
	// A header as a command-line argument: "X-Api-Key: ...".
	if k, val, ok := strings.Cut(v, ":"); ok && !strings.HasPrefix(val, "//") && strings.TrimSpace(val) != "" &&
		strings.TrimSpace(val) != Redacted && LooksSecret(k) {
		return true
	}
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == '&' || r == ' ' }) {
		k, val, ok := strings.Cut(part, "=")
		if ok && val != "" && val != Redacted && LooksSecret(strings.TrimLeft(k, "-")) {
			return true
		}
	}
	return false
}

// MaskURL returns rawURL fit for a log line, an error or the configuration
// dump: the user info (user name and password) becomes "***", every query
// value becomes "***" unless its parameter's name is in show (names are
// case-sensitive, as in URLs), and a fragment becomes "***". Scheme, host,
// port, path and the query's parameter names stay, so the line still says
// where the request went. A URL that does not parse is shown as
// "<scheme>://***" (or "***").
func MaskURL(rawURL string, show ...string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if scheme, _, ok := strings.Cut(rawURL, "://"); ok && schemePattern.MatchString(scheme) {
			return scheme + "://" + Redacted
		}
		return Redacted
	}
	return maskParsedURL(u, show)
}

func maskParsedURL(u *url.URL, show []string) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	s := c.String()
	if u.User != nil {
		if i := strings.Index(s, "//"); i >= 0 {
			s = s[:i+2] + Redacted + "@" + s[i+2:]
		}
	}
	if u.RawQuery != "" || u.ForceQuery {
		s += "?" + maskQuery(u.RawQuery, show)
	}
	if u.Fragment != "" {
		s += "#" + Redacted
	}
	return s
}

// maskQuery replaces every value of a raw query by "***", except those of
// the parameters named in show; order and encoding are kept. A part with no
// "=" (a bare value) is masked whole unless show names it.
func maskQuery(raw string, show []string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		if p == "" {
			continue
		}
		k, _, hasValue := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		switch {
		case slices.Contains(show, name):
		case hasValue:
			parts[i] = k + "=" + Redacted
		default:
			parts[i] = Redacted
		}
	}
	return strings.Join(parts, "&")
}

var (
	schemePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)
	// urlInText finds URLs with an authority inside free text; it stops at
	// white space, quotes and angle brackets (Go quotes URLs in its errors).
	urlInText = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>`]+")
)

// MaskURLs applies MaskURL to every URL ("scheme://...") found in text: an
// error message, a command line, a response excerpt.
func MaskURLs(text string, show ...string) string {
	if !strings.Contains(text, "://") {
		return text
	}
	return urlInText.ReplaceAllStringFunc(text, func(u string) string { return MaskURL(u, show...) })
}

// MaskValue masks the URLs inside v (MaskURLs), then hides the result
// whole if it still looks like a credential (ValueLooksSecret).
func MaskValue(v string, show ...string) string {
	m := MaskURLs(v, show...)
	if ValueLooksSecret(m) {
		return Redacted
	}
	return m
}

// shownHeaders are the request headers whose values are shown in logs;
// they never carry credentials. Every other header's value is "***":
// custom credential headers (X-Api-Key, api-key, x-functions-key,
// Ocp-Apim-Subscription-Key, X-Slotlock-Secret, ...) have too many names
// to list.
var shownHeaders = map[string]bool{
	"Accept": true, "Accept-Encoding": true, "Accept-Language": true, "Cache-Control": true,
	"Content-Encoding": true, "Content-Language": true, "Content-Length": true, "Content-Type": true,
	"User-Agent": true, "Pragma": true,
	"X-Slotlock-Job": true, "X-Slotlock-Slot": true, "X-Slotlock-Run-Id": true,
	"X-Slotlock-Fencing-Token": true, "X-Slotlock-Attempt": true,
	"Traceparent": true, // ids and flags only (W3C Trace Context); tracestate is vendor data: hidden
}

// headerShown reports whether a header's value may be logged: only the
// standard content-negotiation headers, User-Agent and slotlock's own
// run headers (job, slot, run id, fencing token, attempt) and traceparent
// are.
func headerShown(name string) bool {
	return shownHeaders[http.CanonicalHeaderKey(strings.TrimSpace(name))]
}

// RedactHeaders renders headers for a log line: every name, and the value
// only for the standard content-negotiation headers, User-Agent,
// slotlock's own run headers and traceparent; the rest are "***".
func RedactHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		v := Redacted
		if headerShown(k) {
			v = strings.Join(vs, ", ")
		}
		out[k] = v
	}
	return out
}

// RedactMap returns a deep copy of m fit for the configuration dump: the
// value of every key that LooksSecret is replaced by Redacted, at any
// depth; every other string (in maps and lists) goes through MaskValue,
// so URLs lose their user info and query values (except the parameters
// named in show) and credential-looking values are hidden whole. m is not
// modified.
func RedactMap(m map[string]any, show ...string) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if LooksSecret(k) && v != nil {
			out[k] = Redacted
			continue
		}
		out[k] = redactValue(v, show)
	}
	return out
}

func redactValue(v any, show []string) any {
	switch x := strictdecode.Normalize(v).(type) {
	case map[string]any:
		return RedactMap(x, show...)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e, show)
		}
		return out
	case string:
		return MaskValue(x, show...)
	default:
		return x
	}
}

// ParamsRedactor is implemented by a Job that knows better than RedactMap
// how to show its params in the configuration dump (the http plugin shows
// the query parameters listed in show_query and hides header values as in
// its log lines). RedactParams must not modify params.
type ParamsRedactor interface {
	RedactParams(params map[string]any) map[string]any
}

// RedactParams returns a job's params fit for the configuration dump:
// first the values at the job's SecretParams are hidden (by structure),
// then the job's own RedactParams, else RedactMap, masks URLs and hides
// what looks like a credential by its name or shape.
func RedactParams(j Job, params map[string]any) map[string]any {
	if params == nil {
		return nil
	}
	if sp, ok := j.(SecretParams); ok {
		params = hidePaths(params, sp.SecretParams())
	}
	if r, ok := j.(ParamsRedactor); ok {
		return r.RedactParams(params)
	}
	return RedactMap(params)
}

// Scrubber is the one scrubber of texts that reach a log line, a span or
// an error: a program's output, a response excerpt, an error message. It
// masks every URL (MaskURL: user info, query values, fragment) and hides
// known secret values (a job's SecretValues, the Redis password) wherever
// they turn up. Values shorter than 4 bytes are left alone: too short to
// be a credential, and replacing them would garble the text. A nil
// *Scrubber only masks URLs.
type Scrubber struct {
	r    *strings.Replacer
	show []string // query parameters whose values MaskURLs shows
}

const minScrubbed = 4

// NewScrubber returns a Scrubber hiding secrets.
func NewScrubber(secrets ...string) *Scrubber { return newScrubber(nil, secrets...) }

func newScrubber(showQuery []string, secrets ...string) *Scrubber {
	var olds []string
	for _, s := range secrets {
		if len(s) >= minScrubbed && s != Redacted && !slices.Contains(olds, s) {
			olds = append(olds, s)
		}
	}
	sc := &Scrubber{show: showQuery}
	if len(olds) == 0 {
		return sc
	}
	// Longest first, so a secret that contains another is hidden whole.
	slices.SortFunc(olds, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(olds))
	for _, s := range olds {
		pairs = append(pairs, s, Redacted)
	}
	sc.r = strings.NewReplacer(pairs...)
	return sc
}

// String returns text with its URLs masked and the secrets hidden.
func (s *Scrubber) String(text string) string {
	if s == nil {
		return MaskURLs(text)
	}
	if s.r != nil {
		text = s.r.Replace(text)
	}
	return MaskURLs(text, s.show...)
}

// Error returns err with a scrubbed message, or nil; errors.Is and
// errors.As still see the original.
func (s *Scrubber) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := s.String(err.Error())
	if msg == err.Error() {
		return err
	}
	return &maskedError{msg: msg, err: err}
}

// maskedError shows a masked message but keeps the original error for
// errors.Is and errors.As (a canceled run's cause, for instance).
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }
