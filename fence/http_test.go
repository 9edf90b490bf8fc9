package fence_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/fence"
	"github.com/slotlock/slotlock/jobs"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// receiver is a service behind the middleware that records what it saw.
func receiver(h fence.HTTP, seen *[]fence.Admitted) *httptest.Server {
	h.Logger = quiet
	return httptest.NewServer(h.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, ok := fence.FromContext(r.Context()); ok {
			*seen = append(*seen, a)
		}
		io.WriteString(w, "done")
	})))
}

func post(t *testing.T, url string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func fenced(job string, token uint64) map[string]string {
	return map[string]string{fence.HeaderJob: job, fence.HeaderToken: strconv.FormatUint(token, 10)}
}

func TestHTTPMiddlewareRefusesLowerToken(t *testing.T) {
	var seen []fence.Admitted
	srv := receiver(fence.HTTP{}, &seen)
	defer srv.Close()
	for _, step := range []struct {
		job     string
		token   uint64
		status  int
		highest string
	}{
		{"report", 5, 200, ""},
		{"report", 4, 409, "5"},
		{"report", 5, 200, ""},  // the same run again (a retry attempt)
		{"billing", 1, 200, ""}, // another job has its own highest
		{"report", 6, 200, ""},
		{"report", 5, 409, "6"},
	} {
		resp, body := post(t, srv.URL, fenced(step.job, step.token))
		if resp.StatusCode != step.status || resp.Header.Get(fence.HeaderTokenHighest) != step.highest {
			t.Fatalf("%s token %d: %d %q (highest %q), want %d (highest %q)", step.job, step.token,
				resp.StatusCode, body, resp.Header.Get(fence.HeaderTokenHighest), step.status, step.highest)
		}
		if step.status == 409 && !strings.Contains(body, "stale fencing token "+strconv.FormatUint(step.token, 10)) {
			t.Fatalf("409 body %q does not name the stale token", body)
		}
	}
	want := []fence.Admitted{{"report", 5}, {"report", 5}, {"billing", 1}, {"report", 6}}
	if len(seen) != len(want) {
		t.Fatalf("handler saw %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("handler saw %v, want %v", seen, want)
		}
	}
}

func TestHTTPMiddlewareMissingOrBadHeaders(t *testing.T) {
	var seen []fence.Admitted
	strict := receiver(fence.HTTP{}, &seen)
	defer strict.Close()
	for _, h := range []map[string]string{
		{},
		{fence.HeaderJob: "report"},
		{fence.HeaderToken: "3"},
		{fence.HeaderJob: "report", fence.HeaderToken: "-1"},
		{fence.HeaderJob: "report", fence.HeaderToken: "1e3"},
	} {
		if resp, body := post(t, strict.URL, h); resp.StatusCode != 400 {
			t.Errorf("headers %v: %d %q, want 400", h, resp.StatusCode, body)
		}
	}
	lax := receiver(fence.HTTP{AllowUnfenced: true}, &seen)
	defer lax.Close()
	if resp, _ := post(t, lax.URL, nil); resp.StatusCode != 200 {
		t.Errorf("AllowUnfenced, no headers: %d, want 200", resp.StatusCode)
	}
	if resp, _ := post(t, lax.URL, map[string]string{fence.HeaderJob: "j", fence.HeaderToken: "x"}); resp.StatusCode != 400 {
		t.Errorf("AllowUnfenced, malformed token: %d, want 400", resp.StatusCode)
	}
	if len(seen) != 0 {
		t.Errorf("unfenced requests reached the handler with a token: %v", seen)
	}
}

type brokenStore struct{}

func (brokenStore) Advance(context.Context, string, uint64) error { return errors.New("store down") }

// A store that cannot answer lets nothing through (503).
func TestHTTPMiddlewareFailsClosed(t *testing.T) {
	var seen []fence.Admitted
	srv := receiver(fence.HTTP{Store: brokenStore{}}, &seen)
	defer srv.Close()
	if resp, body := post(t, srv.URL, fenced("report", 1)); resp.StatusCode != 503 || len(seen) != 0 {
		t.Fatalf("%d %q (handler ran %d times), want 503 and no handler", resp.StatusCode, body, len(seen))
	}
}

// Two instances of a receiver share their highest tokens through Redis: a
// stale request is refused by the instance that did not see the newer one.
func TestHTTPMiddlewareRedisStoreAcrossInstances(t *testing.T) {
	store := fence.Redis{Client: redisClient(t)}
	var seenA, seenB []fence.Admitted
	a := receiver(fence.HTTP{Store: store, KeyPrefix: "http-test:"}, &seenA)
	defer a.Close()
	b := receiver(fence.HTTP{Store: store, KeyPrefix: "http-test:"}, &seenB)
	defer b.Close()
	if resp, _ := post(t, a.URL, fenced("report", 8)); resp.StatusCode != 200 {
		t.Fatalf("instance A, token 8: %d", resp.StatusCode)
	}
	resp, _ := post(t, b.URL, fenced("report", 7))
	if resp.StatusCode != 409 || resp.Header.Get(fence.HeaderTokenHighest) != "8" {
		t.Fatalf("instance B, token 7: %d highest %q, want 409 and 8", resp.StatusCode, resp.Header.Get(fence.HeaderTokenHighest))
	}
	if got := redisClient(t).Get(context.Background(), "{http-test:report}:fence").Val(); got != "8" {
		t.Fatalf("fence key holds %q, want 8", got)
	}
}

// slotlock's own http plugin sends the headers the middleware reads, and a
// refusal fails its run with error class stale_token.
func TestHTTPPluginAgainstMiddleware(t *testing.T) {
	var seen []fence.Admitted
	srv := receiver(fence.HTTP{}, &seen)
	defer srv.Close()
	factory, ok := jobs.Lookup("http")
	if !ok {
		t.Fatal("no http plugin")
	}
	job, err := factory(map[string]any{"url": srv.URL, "timeout": "5s"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(token uint64) error {
		return job.Run(context.Background(), jobs.Run{Job: "nightly", Slot: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC),
			RunID: "r" + strconv.FormatUint(token, 10), Replica: "r1", FencingToken: token, Attempt: 1, Logger: quiet})
	}
	if err := run(12); err != nil {
		t.Fatalf("token 12: %v", err)
	}
	err = run(11)
	var c interface{ ErrorClass() string }
	if err == nil || !errors.As(err, &c) || c.ErrorClass() != fence.ErrorClass {
		t.Fatalf("token 11 after 12: err = %v, want a run error of class %q", err, fence.ErrorClass)
	}
	if len(seen) != 1 || seen[0] != (fence.Admitted{Job: "nightly", Token: 12}) {
		t.Fatalf("handler saw %v, want only nightly/12", seen)
	}
}
