package jobs

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

type recorded struct {
	mu     sync.Mutex
	method string
	header http.Header
	body   string
}

func recordingServer(t *testing.T, status int, respBody string) (*httptest.Server, *recorded) {
	t.Helper()
	rec := &recorded{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.method, rec.header, rec.body = r.Method, r.Header.Clone(), string(b)
		rec.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, respBody)
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

func TestHTTPSendsSlotlockHeaders(t *testing.T) {
	srv, rec := recordingServer(t, http.StatusNoContent, "")
	run, logs := testRun(t)
	j := mustJob(t, "http", map[string]any{
		"url":     srv.URL + "/hook",
		"headers": map[string]any{"Content-Type": "application/json", "X-Slotlock-Fencing-Token": "1"},
		"body":    `{"hello":"world"}`,
	})
	if err := j.Run(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.method != "POST" || rec.body != `{"hello":"world"}` {
		t.Fatalf("method %q body %q", rec.method, rec.body)
	}
	want := map[string]string{
		"X-Slotlock-Job":           "nightly-report",
		"X-Slotlock-Slot":          "2026-11-29T10:00:05Z",
		"X-Slotlock-Run-Id":        "r-123",
		"X-Slotlock-Fencing-Token": "42", // params cannot fake it
		"X-Slotlock-Attempt":       "2",
		"Content-Type":             "application/json",
	}
	for k, v := range want {
		if got := rec.header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	line := logs.Event(t, "http.response")
	if line["status"] != 204.0 || line["level"] != "INFO" || line["method"] != "POST" {
		t.Fatalf("http.response line: %v", line)
	}
}

func TestHTTPStatusHandling(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		expect  []any
		wantErr []string
	}{
		{"2xx default ok", 201, nil, nil},
		{"5xx default fails", 503, nil, []string{"status 503 Service Unavailable", "want 2xx", `body "database is down"`}},
		{"3xx not followed is not 2xx", 304, nil, []string{"status 304"}},
		{"explicit list accepts", 409, []any{200, 409}, nil},
		{"explicit list rejects 200", 200, []any{202}, []string{"status 200 OK", "want 202"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := recordingServer(t, tc.status, "database is down")
			params := map[string]any{"url": srv.URL, "method": "get"}
			if tc.expect != nil {
				params["expect_status"] = tc.expect
			}
			run, logs := testRun(t)
			err := mustJob(t, "http", params).Run(context.Background(), run)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("status %d: %v", tc.status, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("status %d did not fail", tc.status)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			wantBody := "database is down"
			if tc.status == 304 {
				wantBody = "" // a 304 has no body
			}
			if line := logs.Event(t, "http.response"); line["level"] != "WARN" || line["response_body"] != wantBody {
				t.Errorf("failure line: %v", line)
			}
		})
	}
}

func TestHTTPLongBodyExcerptIsShort(t *testing.T) {
	srv, _ := recordingServer(t, 500, strings.Repeat("x", 100_000))
	run, _ := testRun(t)
	err := mustJob(t, "http", map[string]any{"url": srv.URL}).Run(context.Background(), run)
	if err == nil || len(err.Error()) > 400 {
		t.Fatalf("error should carry a short excerpt, got %d bytes", len(err.Error()))
	}
}

func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	run, _ := testRun(t)
	j := mustJob(t, "http", map[string]any{"url": srv.URL, "timeout": "100ms"})
	start := time.Now()
	err := j.Run(context.Background(), run)
	if err == nil || !strings.Contains(err.Error(), "no response within timeout 100ms") {
		t.Fatalf("timeout error = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("timeout of 100ms took %v", took)
	}

	// The run's own context ending is reported with its cause.
	cause := errors.New("lease lost")
	ctx, cancel := context.WithCancelCause(context.Background())
	j = mustJob(t, "http", map[string]any{"url": srv.URL})
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx, run) }()
	time.Sleep(50 * time.Millisecond)
	cancel(cause)
	if err := <-done; !errors.Is(err, cause) {
		t.Fatalf("canceled run = %v, want cause %v", err, cause)
	}
}

func TestHTTPNeverLogsCredentials(t *testing.T) {
	secrets := []string{"s3cr3t-bearer", "k3y-value", "t0ken-value", "c00kie-value", "urlpa55", "qt0ken"}
	srv, rec := recordingServer(t, 500, "nope")
	u := strings.Replace(srv.URL, "http://", "http://user:urlpa55@", 1) + "/x?token=qt0ken&page=2"
	run, logs := testRun(t)
	j := mustJob(t, "http", map[string]any{
		"url":            u,
		"allow_insecure": true, // the test server is plain http
		"show_query":     []any{"page"},
		"headers": map[string]any{
			"Authorization":   "Bearer s3cr3t-bearer",
			"X-Api-Key":       "k3y-value",
			"X-Session-Token": "t0ken-value",
			"cookie":          "c00kie-value",
			"Accept":          "text/plain",
		},
	})
	err := j.Run(context.Background(), run)
	if err == nil {
		t.Fatal("status 500 did not fail")
	}
	rec.mu.Lock()
	if rec.header.Get("Authorization") != "Bearer s3cr3t-bearer" {
		t.Fatal("credentials were not sent to the server")
	}
	rec.mu.Unlock()
	logged := logs.String() + "\n" + err.Error()
	for _, s := range secrets {
		if strings.Contains(logged, s) {
			t.Errorf("secret %q appears in logs or error:\n%s", s, logged)
		}
	}
	line := logs.Event(t, "http.response")
	hdrs := line["request_headers"].(map[string]any)
	for _, k := range []string{"Authorization", "X-Api-Key", "X-Session-Token", "Cookie"} {
		if hdrs[k] != "***" {
			t.Errorf("logged header %s = %v, want ***", k, hdrs[k])
		}
	}
	if hdrs["X-Slotlock-Fencing-Token"] != "42" {
		t.Errorf("the fencing token is not a secret and must stay visible: %v", hdrs)
	}
	if hdrs["Accept"] != "text/plain" || !strings.Contains(line["url"].(string), "page=2") {
		t.Errorf("non-secret values should stay visible: %v", line)
	}

	// A transport error (connection refused) must not leak the URL password either.
	srv.Close()
	logs.buf.Reset()
	err = j.Run(context.Background(), run)
	if err == nil {
		t.Fatal("request to a closed server succeeded")
	}
	for _, s := range secrets[4:] {
		if strings.Contains(err.Error()+logs.String(), s) {
			t.Errorf("secret %q leaked through a transport error: %v", s, err)
		}
	}
}

func TestHTTPFactoryErrors(t *testing.T) {
	f, _ := Lookup("http")
	cases := []struct {
		params map[string]any
		want   []string
	}{
		{map[string]any{}, []string{"url: required"}},
		{map[string]any{"url": "ftp://x/y"}, []string{"want an absolute http:// or https:// URL"}},
		{map[string]any{"url": "/relative"}, []string{"want an absolute"}},
		{map[string]any{"url": "http://u:pa55@h/%zz"}, []string{"url:"}},
		{map[string]any{"url": "http://h", "method": "GE T"}, []string{"method: invalid HTTP method"}},
		{map[string]any{"url": "http://h", "expect_status": []any{200, 99}}, []string{"expect_status[1]: 99 is not an HTTP status"}},
		{map[string]any{"url": "http://h", "expect_status": "2xx"}, []string{"expect_status: expected a list"}},
		{map[string]any{"url": "http://h", "headers": map[string]any{"Bad Name": "x"}}, []string{`invalid header name "Bad Name"`}},
		{map[string]any{"url": "http://h", "headers": map[string]any{"X": "a\r\nInjected: 1"}}, []string{"headers.X: value must not contain CR"}},
		{map[string]any{"url": "http://h", "timeout": "-1s"}, []string{"timeout: must not be negative"}},
		{map[string]any{"url": "http://h", "heders": map[string]any{}}, []string{`heders: unknown key (did you mean "headers"?)`}},
		{map[string]any{"url": "http://u:pa55@h/"}, []string{"url: credentials (the URL's user info) would be sent over plain http://", "allow_insecure: true"}},
		{map[string]any{"url": "http://h/", "headers": map[string]any{"authorization": "Bearer pa55"}}, []string{"(header Authorization)"}},
		{map[string]any{"url": "http://h/", "headers": map[string]any{"Cookie": "s=pa55"}}, []string{"(header Cookie)"}},
		{map[string]any{"url": "http://h/", "headers": map[string]any{"X-Token": "pa55"}, "secret_headers": []any{"x-token"}}, []string{"(header X-Token)"}},
	}
	for _, tc := range cases {
		_, err := f(tc.params)
		if err == nil {
			t.Errorf("%v: no error", tc.params)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", tc.params, err, w)
			}
		}
		if strings.Contains(err.Error(), "pa55") {
			t.Errorf("factory error leaks the URL password: %v", err)
		}
	}
}

// Credentials over http:// are accepted with allow_insecure, over https://
// always; a header nobody marked secret is no credential for the check.
func TestHTTPInsecureAllowed(t *testing.T) {
	for _, p := range []map[string]any{
		{"url": "http://u:pa55@h/", "allow_insecure": true},
		{"url": "https://u:pa55@h/", "headers": map[string]any{"Authorization": "Bearer pa55"}},
		{"url": "http://h/", "headers": map[string]any{"X-Request-Kind": "warmup"}},
	} {
		mustJob(t, "http", p)
	}
}

// Only slotlock's own fencing-token header is shown despite its name; a
// user's credential header that merely starts with X-Slotlock- is hidden.
func TestRedactHeadersOnlyExemptsTheFencingToken(t *testing.T) {
	h := http.Header{}
	h.Set("X-Slotlock-Fencing-Token", "42")
	h.Set("X-Slotlock-Api-Token", "user-secret")
	h.Set("Authorization", "Bearer x")
	got := RedactHeaders(h)
	if got["X-Slotlock-Fencing-Token"] != "42" {
		t.Errorf("fencing token hidden: %v", got)
	}
	if got["X-Slotlock-Api-Token"] != Redacted || got["Authorization"] != Redacted {
		t.Errorf("credential shown: %v", got)
	}
}

// A 409 with X-Slotlock-Fencing-Highest is the fence middleware refusing a
// stale token: the run fails with error class stale_token. A bare 409 (or
// the header on another status) is an ordinary failed status.
func TestHTTPStaleTokenRefusalHasItsClass(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		highest string
		class   string
	}{
		{"409 with highest", 409, "12", "stale_token"},
		{"bare 409", 409, "", ""},
		{"highest on a 500", 500, "12", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.highest != "" {
					w.Header().Set("X-Slotlock-Fencing-Highest", tc.highest)
				}
				http.Error(w, "refused", tc.status)
			}))
			defer srv.Close()
			run, _ := testRun(t)
			err := mustJob(t, "http", map[string]any{"url": srv.URL}).Run(context.Background(), run)
			if err == nil || !strings.Contains(err.Error(), "status") {
				t.Fatalf("err = %v, want the failed status", err)
			}
			var c interface{ ErrorClass() string }
			got := ""
			if errors.As(err, &c) {
				got = c.ErrorClass()
			}
			if got != tc.class {
				t.Fatalf("error class %q, want %q", got, tc.class)
			}
		})
	}
}
