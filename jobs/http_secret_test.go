package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// secretHeaders are credential headers as users write them; the names
// are kept in logs, the values never.
func secretHeaders() map[string]any {
	return map[string]any{
		"Authorization":             "Bearer " + secrettest.Bearer,
		"X-Api-Key":                 secrettest.APIKey + "-1",
		"api-key":                   secrettest.APIKey + "-2",
		"x-functions-key":           secrettest.APIKey + "-3",
		"Ocp-Apim-Subscription-Key": secrettest.APIKey + "-4",
		"X-Slotlock-Secret":         secrettest.SlotlockHdr,
		"Content-Type":              "application/json",
	}
}

// secretURL is base with user info and credential query values, plus one
// harmless parameter (page) that the job marks as safe to show.
func secretURL(base string) string {
	u := strings.Replace(base, "://", "://"+secrettest.URLUser+":"+secrettest.URLPassword+"@", 1)
	return u + "/api/run?sig=" + secrettest.Sig + "&code=" + secrettest.Code + "&token=" + secrettest.Token + "&page=2"
}

// requireNoSecret fails when any fake credential appears in texts.
func requireNoSecret(t *testing.T, texts ...string) {
	t.Helper()
	all := strings.Join(texts, "\n")
	for _, s := range secrettest.All() {
		require.NotContains(t, all, s, "a credential leaked")
	}
}

// Userinfo, sig, code, token and every credential header are hidden in the
// http.response line and the run's error, on success, on an unexpected
// status whose body echoes the request, and on a transport error. The
// request itself carries them all.
func TestHTTPMasksCredentialsInLogsAndErrors(t *testing.T) {
	var mu sync.Mutex
	var got *http.Request
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Clone(context.Background())
		st := status
		mu.Unlock()
		w.WriteHeader(st)
		// A careless receiver that echoes what it got.
		fmt.Fprintf(w, "%s bad request %s %s", secrettest.ResponseEcho, r.URL.String(), r.Header.Get("X-Api-Key"))
	}))
	defer srv.Close()
	j := mustJob(t, "http", map[string]any{
		"url":            secretURL(srv.URL),
		"allow_insecure": true, // the test server is plain http
		"headers":        secretHeaders(),
		"show_query":     []any{"page"},
	})

	// Success.
	run, logs := testRun(t)
	require.NoError(t, j.Run(context.Background(), run))
	mu.Lock()
	require.Equal(t, secrettest.Sig, got.URL.Query().Get("sig"), "the request must carry the real values")
	require.Equal(t, "Bearer "+secrettest.Bearer, got.Header.Get("Authorization"))
	mu.Unlock()
	line := logs.Event(t, "http.response")
	shown := line["url"].(string)
	require.Contains(t, shown, "://***@127.0.0.1:")
	require.Contains(t, shown, "/api/run?sig=***&code=***&token=***&page=2")
	hdrs := line["request_headers"].(map[string]any)
	for _, k := range []string{"Authorization", "X-Api-Key", "Api-Key", "X-Functions-Key", "Ocp-Apim-Subscription-Key", "X-Slotlock-Secret"} {
		require.Equal(t, Redacted, hdrs[k], "header %s", k)
	}
	require.Equal(t, "application/json", hdrs["Content-Type"])
	require.Equal(t, "42", hdrs["X-Slotlock-Fencing-Token"])
	requireNoSecret(t, logs.String())

	// Unexpected status; the body echoes the URL and a header.
	mu.Lock()
	status = http.StatusBadRequest
	mu.Unlock()
	logs.buf.Reset()
	err := j.Run(context.Background(), run)
	require.Error(t, err)
	secrettest.CaptureString(err.Error())
	require.Contains(t, err.Error(), "status 400")
	require.Contains(t, err.Error(), secrettest.ResponseEcho, "the body excerpt is still there")
	requireNoSecret(t, logs.String(), err.Error())

	// Transport error.
	srv.Close()
	logs.buf.Reset()
	err = j.Run(context.Background(), run)
	require.Error(t, err)
	secrettest.CaptureString(err.Error())
	require.Contains(t, err.Error(), "sig=***")
	requireNoSecret(t, logs.String(), err.Error())
}

// A URL that does not parse is not echoed in the factory's error.
func TestHTTPFactoryErrorMasksURL(t *testing.T) {
	f, _ := Lookup("http")
	_, err := f(map[string]any{"url": "https://" + secrettest.URLUser + ":" + secrettest.URLPassword + "@h/%zz?sig=" + secrettest.Sig})
	require.Error(t, err)
	secrettest.CaptureString(err.Error())
	requireNoSecret(t, err.Error())
	_, err = f(map[string]any{"url": "ftp://" + secrettest.URLUser + "@h/?code=" + secrettest.Code})
	require.Error(t, err)
	require.Contains(t, err.Error(), "ftp://***@h/?code=***")
	// A mistyped command is not shown at all: as one string it holds the
	// arguments, which are secret-bearing by their place.
	ef, _ := Lookup("exec")
	_, err = ef(map[string]any{"command": "curl https://" + secrettest.URLUser + "@h/?sig=" + secrettest.Sig})
	require.ErrorContains(t, err, `command: expected a list, got a string`)
	secrettest.CaptureString(err.Error())
	_, err = f(map[string]any{"url": "https://h/", "show_query": []any{""}})
	require.ErrorContains(t, err, "show_query[0]: must not be empty")
}

// recorder is a server that records whatever reaches it.
type recorder struct {
	mu   sync.Mutex
	hits []recordedHit
}

type recordedHit struct {
	path   string
	header http.Header
	body   string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.hits = append(rc.hits, recordedHit{path: r.URL.Path, header: r.Header.Clone(), body: string(b)})
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *recorder) all() []recordedHit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]recordedHit(nil), rc.hits...)
}

// otherHostListener listens on 127.0.0.2 (another host than the
// httptest servers' 127.0.0.1); where that address is not there, on
// localhost, which is still another origin by port.
func otherHostListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
	}
	return ln
}

// redirector is a TLS server that answers every request with a redirect
// (status code) to target.
func redirector(t *testing.T, code int, target string) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, target, code)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// tlsJob builds an http job whose client trusts srv's certificate.
func tlsJob(t *testing.T, srv *httptest.Server, params map[string]any) Job {
	t.Helper()
	j := mustJob(t, "http", params)
	j.(*httpJob).client.Transport = srv.Client().Transport
	return j
}

// An https URL that redirects (307: the body would be resent) to plain
// http on another host: with or without follow_redirects, the plain server
// receives nothing (neither the credential headers nor the body), and the
// run fails with an error naming both URLs, masked.
func TestHTTPRedirectDowngradeSendsNothing(t *testing.T) {
	plain := &recorder{}
	ln := otherHostListener(t)
	plainSrv := &http.Server{Handler: plain}
	go plainSrv.Serve(ln)
	t.Cleanup(func() { plainSrv.Close() })
	target := "http://" + ln.Addr().String() + "/steal?code=" + secrettest.Code

	for _, follow := range []bool{false, true} {
		for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
			t.Run(fmt.Sprintf("follow=%v/%d", follow, code), func(t *testing.T) {
				srv := redirector(t, code, target)
				j := tlsJob(t, srv, map[string]any{
					"url":              srv.URL + "/start?sig=" + secrettest.Sig,
					"headers":          secretHeaders(),
					"body":             `{"secret":"` + secrettest.Token + `"}`,
					"follow_redirects": follow,
				})
				run, logs := testRun(t)
				err := j.Run(context.Background(), run)
				require.Error(t, err)
				secrettest.CaptureString(err.Error())
				msg := err.Error()
				require.Contains(t, msg, "redirect from "+srv.URL+"/start?sig=***")
				require.Contains(t, msg, "to http://"+ln.Addr().String()+"/steal?code=***")
				require.Contains(t, msg, "downgrade https to http")
				requireNoSecret(t, msg, logs.String())
				require.Empty(t, plain.all(), "the plain-http server must receive nothing")
				var re *redirectError
				require.True(t, errors.As(err, &re))
			})
		}
	}
}

// A redirect to another origin fails the run by default; with
// follow_redirects it is followed, without the credential headers.
// A redirect within the origin is followed and keeps them.
func TestHTTPRedirectToAnotherOrigin(t *testing.T) {
	// Another origin by port: the test CA's certificate names 127.0.0.1
	// only, and another host would need one of its own.
	rec := &recorder{}
	other := httptest.NewTLSServer(rec)
	t.Cleanup(other.Close)

	t.Run("refused by default", func(t *testing.T) {
		srv := redirector(t, http.StatusTemporaryRedirect, other.URL+"/elsewhere")
		j := tlsJob(t, srv, map[string]any{"url": srv.URL + "/x?token=" + secrettest.Token, "headers": secretHeaders(), "body": "b"})
		run, logs := testRun(t)
		err := j.Run(context.Background(), run)
		require.Error(t, err)
		secrettest.CaptureString(err.Error())
		require.Contains(t, err.Error(), "another origin (set params.follow_redirects: true to follow it)")
		require.Contains(t, err.Error(), srv.URL+"/x?token=***")
		require.Contains(t, err.Error(), other.URL+"/elsewhere")
		requireNoSecret(t, err.Error(), logs.String())
		require.Empty(t, rec.all())
	})

	t.Run("307 with a body refused even with follow_redirects", func(t *testing.T) {
		for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
			srv := redirector(t, code, other.URL+"/elsewhere")
			j := tlsJob(t, srv, map[string]any{"url": srv.URL + "/x", "headers": secretHeaders(),
				"body": `{"password": "` + secrettest.BodySecret + `"}`, "follow_redirects": true})
			run, logs := testRun(t)
			err := j.Run(context.Background(), run)
			require.Error(t, err)
			secrettest.CaptureString(err.Error())
			require.Contains(t, err.Error(), fmt.Sprintf("a %d would resend the body to another origin (set params.resend_body: true", code))
			requireNoSecret(t, err.Error(), logs.String())
			require.Empty(t, rec.all(), "nothing reached the other origin")
		}
	})

	t.Run("followed without credentials", func(t *testing.T) {
		srv := redirector(t, http.StatusTemporaryRedirect, other.URL+"/elsewhere")
		j := tlsJob(t, srv, map[string]any{"url": srv.URL + "/x", "headers": secretHeaders(), "body": "payload",
			"follow_redirects": true, "resend_body": true})
		// Both servers share the httptest CA, so one transport trusts both.
		run, logs := testRun(t)
		require.NoError(t, j.Run(context.Background(), run))
		hits := rec.all()
		require.Len(t, hits, 1)
		h := hits[0].header
		for _, k := range []string{"Authorization", "X-Api-Key", "Api-Key", "X-Functions-Key", "Ocp-Apim-Subscription-Key", "X-Slotlock-Secret"} {
			require.Empty(t, h.Get(k), "header %s followed the redirect to another origin", k)
		}
		require.Equal(t, "application/json", h.Get("Content-Type"))
		require.Equal(t, "42", h.Get("X-Slotlock-Fencing-Token"))
		require.Equal(t, "payload", hits[0].body, "307 resends the body when the user allows the redirect")
		require.Contains(t, logs.Event(t, "http.response")["final_url"], "/elsewhere")
	})

	t.Run("same origin followed with credentials", func(t *testing.T) {
		var mu sync.Mutex
		var final http.Header
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/old" {
				http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
				return
			}
			mu.Lock()
			final = r.Header.Clone()
			mu.Unlock()
		}))
		t.Cleanup(srv.Close)
		j := tlsJob(t, srv, map[string]any{"url": srv.URL + "/old", "headers": secretHeaders()})
		run, _ := testRun(t)
		require.NoError(t, j.Run(context.Background(), run))
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, secrettest.APIKey+"-1", final.Get("X-Api-Key"))
	})
}

func TestMaskURL(t *testing.T) {
	cases := []struct {
		in   string
		show []string
		want string
	}{
		{"https://h/p", nil, "https://h/p"},
		{"https://u:p@h:8443/p?a=1&b=2#frag", nil, "https://***@h:8443/p?a=***&b=***#***"},
		{"https://u@h/p?a=1&b=2", []string{"b"}, "https://***@h/p?a=***&b=2"},
		{"https://h/p?flag&x=%2F", nil, "https://h/p?***&x=***"},
		{"https://h/p?flag", []string{"flag"}, "https://h/p?flag"},
		{"https://u:p@h/%zz", nil, "https://***"},
		{"not a url at all %zz", nil, "***"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, MaskURL(tc.in, tc.show...), tc.in)
	}
	require.Equal(t, `Post "https://***@h/x?sig=***": EOF; see http://g/?code=***`,
		MaskURLs(`Post "https://u:pw@h/x?sig=s": EOF; see http://g/?code=c`))
	// Masking is idempotent.
	m := MaskURL("https://u:p@h/p?a=1")
	require.Equal(t, m, MaskURL(m))
}

func TestValueLooksSecret(t *testing.T) {
	for _, v := range []string{"Bearer abc", "basic Zm9v", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=k==",
		"Endpoint=sb://x/;SharedAccessKeyName=n;SharedAccessKey=k", "--password=x", "a=1&sig=abc", "SharedAccessSignature sr=x&sig=y",
		"Authorization: Bearer x", "x-functions-key: abc", "--header=Authorization: token"} {
		require.True(t, ValueLooksSecret(v), v)
	}
	for _, v := range []string{"reports", "--since", "yesterday", "https://h/p?token=***", "a=1&page=2", "token rotation done",
		"https://h/p", "note: keep it", "Authorization: ***"} {
		require.False(t, ValueLooksSecret(v), v)
	}
}

// A receiver that echoes the body: the body's values are scrubbed from the
// response excerpt in the log and the error, whatever their keys.
func TestHTTPBodyScrubbedFromErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var v map[string]string
		_ = json.Unmarshal(b, &v)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "rejected %s for %s", v["pin"], v["user"])
	}))
	defer srv.Close()
	j := mustJob(t, "http", map[string]any{"url": srv.URL + "/x",
		"body": `{"user": "ops", "pin": "` + secrettest.BodySecret + `"}`})
	run, logs := testRun(t)
	err := j.Run(context.Background(), run)
	require.Error(t, err)
	secrettest.CaptureString(err.Error())
	require.Contains(t, err.Error(), "status 400")
	require.Contains(t, err.Error(), "rejected *** for ops")
	requireNoSecret(t, err.Error(), logs.String())
}
