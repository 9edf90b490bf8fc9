package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The http plugin sends one request per run.
//
//	params:
//	  url: https://example.com/hook     # required, http or https
//	  method: POST                      # default POST
//	  headers: {Authorization: "Bearer ..."}
//	  body: ""                          # sent as is
//	  expect_status: [200, 204]         # default: any 2xx
//	  timeout: 30s                      # per request; the job's timeout still applies
//	  follow_redirects: false           # true: also follow redirects to another origin
//	  show_query: [page]                # query parameters whose values may be logged
//	  show_body: false                  # true: the body may be shown in the dump and errors
//	  resend_body: false                # true: a 307/308 to another origin may resend the body
//	  secret_headers: [X-Token]         # more headers that carry credentials (see allow_insecure)
//	  allow_insecure: false             # true: credentials may be sent over http://
//
// Every request carries X-Slotlock-Job, X-Slotlock-Slot, X-Slotlock-Run-Id,
// X-Slotlock-Fencing-Token and X-Slotlock-Attempt; they override headers of
// the same name in params, so a receiver can trust them to reject a stale
// writer by fencing token. When slotlock exports traces it also carries
// the run's traceparent (and tracestate: trace.go), W3C Trace Context, so
// the receiver's spans join the run's trace. A status outside
// expect_status fails the run with the status and the start of the
// response body; a 409 carrying X-Slotlock-Fencing-Highest (the fence
// package's middleware refusing a stale token) fails it with error class
// "stale_token".
//
// Redirects: one within the URL's origin (scheme, host, port) is followed;
// one to another origin fails the run unless follow_redirects is true, and
// then it carries none of the headers from params except the harmless ones
// (Content-Type, Accept, ...: headerShown). A 307 or 308 resends the body:
// to another origin that fails the run too unless resend_body is true. A
// redirect from https to http always fails the run. At most 10 redirects
// are followed.
//
// Credentials over plain http:// (user info in the URL, an Authorization,
// Proxy-Authorization or Cookie header, a header named in secret_headers)
// are a configuration error unless allow_insecure is true, as for Redis.
//
// The plugin logs one line per request (event "http.response") with the
// method, the URL (user info, every query value except those named in
// show_query, and the fragment as "***": MaskURL), the status and the
// request headers, with every value other than the harmless ones shown as
// "***". The configured secrets (user info, query values, header values)
// are also scrubbed from the response excerpt and from every error.
func init() { Register("http", newHTTPJob) }

const (
	defaultHTTPTimeout = 30 * time.Second
	httpBodyExcerpt    = 512
)

type httpParams struct {
	URL          string            `yaml:"url"`
	Method       string            `yaml:"method"`
	Headers      map[string]string `yaml:"headers"`
	Body         string            `yaml:"body"`
	ExpectStatus []int             `yaml:"expect_status"`
	Timeout      time.Duration     `yaml:"timeout"`
	// FollowRedirects allows redirects to another origin (never https -> http).
	FollowRedirects bool `yaml:"follow_redirects"`
	// ShowQuery names the query parameters whose values may be logged.
	ShowQuery []string `yaml:"show_query"`
	// ShowBody lets the body be shown; it is a secret otherwise.
	ShowBody bool `yaml:"show_body"`
	// ResendBody lets a 307/308 redirect to another origin resend the body.
	ResendBody bool `yaml:"resend_body"`
	// SecretHeaders names more headers that carry credentials.
	SecretHeaders []string `yaml:"secret_headers"`
	// AllowInsecure accepts credentials sent over http://.
	AllowInsecure bool `yaml:"allow_insecure"`
}

// maxRedirects is how many redirects one request follows at most (as Go's
// default client).
const maxRedirects = 10

type httpJob struct {
	p      httpParams
	client *http.Client
	scrub  *Scrubber // the configured secrets, hidden in every text logged
}

func newHTTPJob(params map[string]any) (Job, error) {
	p := httpParams{Method: http.MethodPost, Timeout: defaultHTTPTimeout}
	if err := DecodeParamsHiding(params, &p, func(path string) bool { return path == "body" }); err != nil {
		return nil, err
	}
	var errs []error
	if p.URL == "" {
		errs = append(errs, errors.New("url: required"))
	} else if u, err := url.Parse(p.URL); err != nil {
		errs = append(errs, fmt.Errorf("url: %v", maskURLError(err, p.ShowQuery)))
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url: want an absolute http:// or https:// URL, got %q", maskParsedURL(u, p.ShowQuery)))
	}
	for i, name := range p.ShowQuery {
		if name == "" {
			errs = append(errs, fmt.Errorf("show_query[%d]: must not be empty", i))
		}
	}
	p.Method = strings.ToUpper(p.Method)
	if !validToken(p.Method) {
		errs = append(errs, fmt.Errorf("method: invalid HTTP method %q", p.Method))
	}
	for k, v := range p.Headers {
		if !validToken(k) {
			errs = append(errs, fmt.Errorf("headers: invalid header name %q", k))
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			errs = append(errs, fmt.Errorf("headers.%s: value must not contain CR, LF or NUL", k))
		}
	}
	for i, s := range p.ExpectStatus {
		if s < 100 || s > 599 {
			errs = append(errs, fmt.Errorf("expect_status[%d]: %d is not an HTTP status (100-599)", i, s))
		}
	}
	if p.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: must not be negative, got %s", p.Timeout))
	}
	if err := checkInsecure(p); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	j := &httpJob{p: p, scrub: newScrubber(p.ShowQuery, httpSecrets(p)...)}
	j.client = &http.Client{CheckRedirect: j.checkRedirect}
	return j, nil
}

// checkRedirect follows a redirect within the URL's origin, refuses one
// from https to http, and one to another origin unless follow_redirects;
// a followed redirect to another origin loses the headers from params
// that may hold credentials.
func (j *httpJob) checkRedirect(req *http.Request, via []*http.Request) error {
	first, from := via[0].URL, via[len(via)-1].URL
	refuse := func(why string) error {
		return &redirectError{from: MaskURL(from.String(), j.p.ShowQuery...), to: MaskURL(req.URL.String(), j.p.ShowQuery...), why: why}
	}
	for _, v := range via {
		if v.URL.Scheme == "https" && req.URL.Scheme != "https" {
			return refuse("it would downgrade https to " + req.URL.Scheme)
		}
	}
	if len(via) >= maxRedirects {
		return refuse(fmt.Sprintf("stopped after %d redirects", maxRedirects))
	}
	if sameOrigin(first, req.URL) {
		return nil
	}
	if !j.p.FollowRedirects {
		return refuse("it leads to another origin (set params.follow_redirects: true to follow it)")
	}
	if resp := req.Response; resp != nil && j.p.Body != "" && !j.p.ResendBody &&
		(resp.StatusCode == http.StatusTemporaryRedirect || resp.StatusCode == http.StatusPermanentRedirect) {
		return refuse(fmt.Sprintf("a %d would resend the body to another origin (set params.resend_body: true to allow it)",
			resp.StatusCode))
	}
	for k := range req.Header {
		if !headerShown(k) {
			req.Header.Del(k)
		}
	}
	return nil
}

// redirectError is a refused redirect; both URLs are already masked.
type redirectError struct{ from, to, why string }

func (e *redirectError) Error() string {
	return fmt.Sprintf("redirect from %s to %s refused: %s", e.from, e.to, e.why)
}

// sameOrigin compares scheme, host and port (default ports filled in).
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if u.Scheme == "https" {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// validToken reports whether s is an RFC 9110 token (method, header name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func (j *httpJob) statusOK(code int) bool {
	if len(j.p.ExpectStatus) == 0 {
		return code >= 200 && code <= 299
	}
	return slices.Contains(j.p.ExpectStatus, code)
}

func (j *httpJob) want() string {
	if len(j.p.ExpectStatus) == 0 {
		return "2xx"
	}
	return strings.Trim(fmt.Sprint(j.p.ExpectStatus), "[]")
}

func (j *httpJob) Run(ctx context.Context, run Run) error {
	reqCtx := ctx
	if j.p.Timeout > 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeoutCause(ctx, j.p.Timeout,
			fmt.Errorf("http: no response within timeout %s", j.p.Timeout))
		defer cancel()
	}
	var body io.Reader
	if j.p.Body != "" {
		body = strings.NewReader(j.p.Body)
	}
	req, err := http.NewRequestWithContext(reqCtx, j.p.Method, j.p.URL, body)
	if err != nil {
		return j.maskErr(fmt.Errorf("http: %w", err))
	}
	for k, v := range j.p.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "slotlock")
	}
	req.Header.Set("X-Slotlock-Job", run.Job)
	req.Header.Set("X-Slotlock-Slot", run.SlotString())
	req.Header.Set("X-Slotlock-Run-Id", run.RunID)
	req.Header.Set("X-Slotlock-Fencing-Token", strconv.FormatUint(run.FencingToken, 10))
	req.Header.Set("X-Slotlock-Attempt", strconv.Itoa(run.Attempt))
	InjectTrace(ctx, req.Header) // the run's traceparent, when slotlock exports traces

	shownURL := MaskURL(j.p.URL, j.p.ShowQuery...)
	attrs := []any{"event", "http.response", "method", j.p.Method, "url", shownURL,
		"request_headers", RedactHeaders(req.Header)}
	start := time.Now()
	resp, err := j.client.Do(req)
	if err != nil {
		// A refused redirect says it all; Go's wrapping would only repeat
		// the target URL.
		var re *redirectError
		if errors.As(err, &re) {
			err = re
		}
		attrs = append(attrs, "duration_ms", time.Since(start).Milliseconds(), "error", j.mask(err.Error()))
		run.Log().WarnContext(ctx, "http: request failed", attrs...)
		if ctx.Err() != nil {
			return j.maskErr(fmt.Errorf("http: %s %s: %w", j.p.Method, shownURL, context.Cause(ctx)))
		}
		if cause := context.Cause(reqCtx); cause != nil {
			return j.maskErr(fmt.Errorf("http: %s %s: %w", j.p.Method, shownURL, cause))
		}
		return j.maskErr(fmt.Errorf("http: %s %s: %w", j.p.Method, shownURL, err))
	}
	defer resp.Body.Close()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, httpBodyExcerpt))
	// Drain a little more so the connection can be reused; never much.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	attrs = append(attrs, "status", resp.StatusCode, "duration_ms", time.Since(start).Milliseconds())
	if resp.Request != nil && resp.Request.URL.String() != req.URL.String() {
		attrs = append(attrs, "final_url", MaskURL(resp.Request.URL.String(), j.p.ShowQuery...))
	}
	if !j.statusOK(resp.StatusCode) {
		snippet := j.mask(bodySnippet(excerpt))
		attrs = append(attrs, "response_body", snippet)
		run.Log().WarnContext(ctx, "http: unexpected status", attrs...)
		err := j.maskErr(fmt.Errorf("http: %s %s: status %s, want %s: body %q",
			j.p.Method, shownURL, resp.Status, j.want(), snippet))
		if staleRefusal(resp) {
			return &staleTokenError{err: err}
		}
		return err
	}
	run.Log().InfoContext(ctx, "http: request succeeded", attrs...)
	return nil
}

// staleRefusal reports whether the receiver refused the request for a
// stale fencing token, as the fence package's middleware does: 409 Conflict
// with X-Slotlock-Fencing-Highest, the highest token it already accepted.
func staleRefusal(resp *http.Response) bool {
	return resp.StatusCode == http.StatusConflict && resp.Header.Get("X-Slotlock-Fencing-Highest") != ""
}

// staleTokenError is a run refused by its receiver (http: 409 from the
// fence middleware; exec: the recipes' exit 75) because a newer run of the
// job already wrote: its error class is "stale_token", the class of the
// fence package's ErrStale, without jobs importing fence.
type staleTokenError struct{ err error }

func (e *staleTokenError) Error() string      { return e.err.Error() }
func (e *staleTokenError) Unwrap() error      { return e.err }
func (e *staleTokenError) ErrorClass() string { return "stale_token" }

// bodySnippet makes a short printable excerpt of a response body.
func bodySnippet(b []byte) string {
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	return s
}
