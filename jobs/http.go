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
//
// Every request carries X-Slotlock-Job, X-Slotlock-Slot, X-Slotlock-Run-Id,
// X-Slotlock-Fencing-Token and X-Slotlock-Attempt; they override headers of
// the same name in params, so a receiver can trust them to reject a stale
// writer by fencing token. A status outside expect_status fails the run
// with the status and the start of the response body. The plugin logs one
// line per request (event "http.response") with the method, the URL
// (password and secret-looking query values hidden), the status and the
// request headers with every credential-looking value (Authorization,
// Cookie, *-Key, *token*, ...) shown as "***".
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
}

type httpJob struct {
	p      httpParams
	client *http.Client
}

func newHTTPJob(params map[string]any) (Job, error) {
	p := httpParams{Method: http.MethodPost, Timeout: defaultHTTPTimeout}
	if err := DecodeParams(params, &p); err != nil {
		return nil, err
	}
	var errs []error
	if p.URL == "" {
		errs = append(errs, errors.New("url: required"))
	} else if u, err := url.Parse(p.URL); err != nil {
		errs = append(errs, fmt.Errorf("url: %v", redactURLError(err)))
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url: want an absolute http:// or https:// URL, got %q", redactURL(u)))
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
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &httpJob{p: p, client: &http.Client{}}, nil
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
		return fmt.Errorf("http: %w", redactURLError(err))
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

	shownURL := redactURL(req.URL)
	attrs := []any{"event", "http.response", "method", j.p.Method, "url", shownURL,
		"request_headers", redactHeaders(req.Header)}
	start := time.Now()
	resp, err := j.client.Do(req)
	if err != nil {
		attrs = append(attrs, "duration_ms", time.Since(start).Milliseconds(), "error", redactURLError(err).Error())
		run.Log().WarnContext(ctx, "http: request failed", attrs...)
		if ctx.Err() != nil {
			return fmt.Errorf("http: %s %s: %w", j.p.Method, shownURL, context.Cause(ctx))
		}
		if cause := context.Cause(reqCtx); cause != nil {
			return fmt.Errorf("http: %s %s: %w", j.p.Method, shownURL, cause)
		}
		return fmt.Errorf("http: %s %s: %w", j.p.Method, shownURL, redactURLError(err))
	}
	defer resp.Body.Close()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, httpBodyExcerpt))
	// Drain a little more so the connection can be reused; never much.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	attrs = append(attrs, "status", resp.StatusCode, "duration_ms", time.Since(start).Milliseconds())
	if !j.statusOK(resp.StatusCode) {
		snippet := bodySnippet(excerpt)
		attrs = append(attrs, "response_body", snippet)
		run.Log().WarnContext(ctx, "http: unexpected status", attrs...)
		return fmt.Errorf("http: %s %s: status %s, want %s: body %q",
			j.p.Method, shownURL, resp.Status, j.want(), snippet)
	}
	run.Log().InfoContext(ctx, "http: request succeeded", attrs...)
	return nil
}

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

// redactHeaders renders headers for a log line, hiding credential values.
func redactHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		v := strings.Join(vs, ", ")
		// The fencing token is not a credential; everything else that
		// looks like one is hidden, a user's X-Slotlock-* header included.
		if LooksSecret(k) && k != "X-Slotlock-Fencing-Token" {
			v = Redacted
		}
		out[k] = v
	}
	return out
}

// redactURL hides the password of the URL's user info and the values of
// secret-looking query parameters.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.User != nil {
		if _, has := c.User.Password(); has {
			c.User = url.UserPassword(c.User.Username(), Redacted)
		}
	}
	if c.RawQuery != "" {
		q, err := url.ParseQuery(c.RawQuery)
		if err == nil {
			changed := false
			for k := range q {
				if LooksSecret(k) {
					q[k] = []string{Redacted}
					changed = true
				}
			}
			if changed {
				c.RawQuery = strings.ReplaceAll(q.Encode(), url.QueryEscape(Redacted), Redacted)
			}
		}
	}
	return c.String()
}

// redactURLError replaces the URL inside a *url.Error with its redacted
// form, so errors never carry a password from the URL.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		shown := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil {
			shown = redactURL(u)
		} else {
			shown = "(unparsable URL)"
		}
		return &url.Error{Op: ue.Op, URL: shown, Err: ue.Err}
	}
	return err
}
