package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock      { return &fakeClock{t: time.Date(2026, 3, 9, 10, 0, 0, 0, time.UTC)} }
func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.t = c.t.Add(d)
}

// limitedHandler is the page over a local store with the given rates and
// no answer cache, on clock c.
func limitedHandler(t *testing.T, c *fakeClock, client, total Rate) http.Handler {
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	t.Cleanup(func() { l.Close() })
	return Handler(Backend{Locker: l, Specs: []scheduler.JobSpec{everySecond(t, "beat")}, Now: c.now,
		ClientRate: client, TotalRate: total, CacheFor: -1})
}

// get serves path to a client at addr.
func get(h http.Handler, addr, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", path, nil)
	r.RemoteAddr = addr
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// One client past its burst is answered 429 with the Retry-After its
// bucket needs, before its query is even read (a bad one is not a 400);
// another client is still served, and the first is again once a token
// has come back.
func TestClientRateLimited(t *testing.T) {
	c := newFakeClock()
	h := limitedHandler(t, c, Rate{PerSecond: 0.5, Burst: 2}, Rate{PerSecond: 100, Burst: 100})
	const a, b = "192.0.2.1:1000", "192.0.2.2:1000"
	for range 2 {
		rec := get(h, a, "/api/v1/jobs")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	}
	rec := get(h, a, "/api/v1/jobs?limit=nonsense")
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, "2", rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), "too many requests")
	require.Equal(t, csp, rec.Header().Get("Content-Security-Policy"))
	// The page itself is refused with a line that reloads it.
	rec = get(h, "192.0.2.1:2000", "/?job=beat")
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Contains(t, rec.Body.String(), `<meta http-equiv="refresh" content="2">`)
	// Its assets are not counted.
	require.Equal(t, http.StatusOK, get(h, a, "/static/style.css").Code)

	require.Equal(t, http.StatusOK, get(h, b, "/api/v1/jobs").Code, "another client")
	c.add(1500 * time.Millisecond)
	rec = get(h, a, "/api/v1/jobs")
	require.Equal(t, http.StatusTooManyRequests, rec.Code, "0.75 of a token")
	require.Equal(t, "1", rec.Header().Get("Retry-After"), "0.5 s rounded up")
	c.add(500 * time.Millisecond)
	require.Equal(t, http.StatusOK, get(h, a, "/api/v1/jobs").Code)
	require.Equal(t, http.StatusTooManyRequests, get(h, a, "/api/v1/jobs").Code)
}

// All clients together are bounded too: many addresses (one script on
// many, or many people) get no more than TotalRate.
func TestTotalRateLimited(t *testing.T) {
	c := newFakeClock()
	h := limitedHandler(t, c, Rate{PerSecond: 10, Burst: 10}, Rate{PerSecond: 0.25, Burst: 3})
	for i := range 3 {
		require.Equal(t, http.StatusOK, get(h, fmt.Sprintf("192.0.2.%d:1", i), "/api/v1/jobs").Code)
	}
	rec := get(h, "192.0.2.9:1", "/api/v1/jobs")
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, "4", rec.Header().Get("Retry-After"))
	c.add(4 * time.Second)
	require.Equal(t, http.StatusOK, get(h, "192.0.2.9:1", "/api/v1/jobs").Code)
	require.Equal(t, http.StatusTooManyRequests, get(h, "192.0.2.10:1", "/api/v1/jobs").Code)
}

// A refused request takes no token: a client that waits its Retry-After
// is served then, however often it was refused before.
func TestRefusalTakesNoToken(t *testing.T) {
	c := newFakeClock()
	l := newLimiter(Rate{PerSecond: 1, Burst: 1}, Rate{PerSecond: 1, Burst: 1})
	ok, _ := l.take("a", c.now())
	require.True(t, ok)
	for range 5 {
		ok, wait := l.take("a", c.now())
		require.False(t, ok)
		require.Equal(t, time.Second, wait)
	}
	c.add(time.Second)
	ok, _ = l.take("a", c.now())
	require.True(t, ok)
}

// The client buckets held are bounded: refilled ones are dropped for new
// addresses, and while every held one is in use, new addresses share one
// overflow bucket (and the total bucket bounds them all anyway).
func TestClientBucketsBounded(t *testing.T) {
	c := newFakeClock()
	l := newLimiter(Rate{PerSecond: 1, Burst: 1}, Rate{PerSecond: 1e6, Burst: 1e6})
	for i := range maxClients {
		ok, _ := l.take(fmt.Sprint(i), c.now())
		require.True(t, ok)
	}
	ok, _ := l.take("new-1", c.now())
	require.True(t, ok, "the overflow bucket's token")
	ok, _ = l.take("new-2", c.now())
	require.False(t, ok, "the overflow bucket is shared")
	require.Len(t, l.clients, maxClients+1)
	c.add(time.Second) // every bucket full again: as good as absent
	ok, _ = l.take("new-3", c.now())
	require.True(t, ok)
	require.Len(t, l.clients, 1)
}

// promptHandler is the page with the default limits and answer cache,
// on clock c, over a local store; it counts the answers that waited for
// the quiet phase (Yield).
func promptHandler(t *testing.T, c *fakeClock) (http.Handler, *int) {
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	t.Cleanup(func() { l.Close() })
	waited := new(int)
	return Handler(Backend{Locker: l, Specs: []scheduler.JobSpec{everySecond(t, "beat")}, Now: c.now,
		Yield: func(context.Context) error { *waited++; return nil }}), waited
}

// One person, with the default settings, is answered at once and never
// refused: a browser loading the page, its stylesheet and script, its
// favicon, a job's timeline and the JSON API, then clicking through a
// few windows, then reloading every 15 s; and a script that asks the API
// once a second for ten minutes.
func TestPersonAnsweredAtOnce(t *testing.T) {
	c := newFakeClock()
	h, waited := promptHandler(t, c)
	const browser = "192.0.2.1:50000"
	load := []string{"/", "/static/style.css", "/static/refresh.js", "/favicon.ico",
		"/?job=beat", "/static/style.css", "/api/v1/jobs", "/api/v1/jobs/beat/slots?since=1h"}
	for _, since := range []string{"1h", "24h", "168h", "1h"} {
		load = append(load, "/?job=beat&since="+since)
	}
	for _, path := range load {
		rec := get(h, browser, path)
		require.NotEqual(t, http.StatusTooManyRequests, rec.Code, path)
		require.Contains(t, []int{200, 404}, rec.Code, path)
		require.Empty(t, rec.Header().Values("Server-Timing"), path)
		c.add(50 * time.Millisecond)
	}
	for range 40 { // ten minutes of reloads
		c.add(15 * time.Second)
		require.Equal(t, http.StatusOK, get(h, browser, "/?job=beat").Code)
	}
	require.Zero(t, *waited, "an answer to the only person waited for the quiet phase")

	const script = "192.0.2.2:40000"
	for i := range 600 {
		c.add(time.Second)
		rec := get(h, script, "/api/v1/jobs/beat/slots?since=10m")
		require.Equal(t, http.StatusOK, rec.Code, "request %d", i)
	}
	require.Zero(t, *waited, "an answer to a script asking once a second waited for the quiet phase")
}

// A storm (many requests at once, here from many addresses) drains the
// bucket of all clients: past its first half every answer waits for the
// quiet phase, past all of it they are refused; and the page answers at
// once again only when the bucket has refilled past half, not with the
// storm's next token.
func TestStormWaitsForQuietPhase(t *testing.T) {
	c := newFakeClock()
	h, waited := promptHandler(t, c)
	client := func(i int) string { return fmt.Sprintf("198.51.100.%d:1", i) }
	n := 0 // a URL of its own per request: no answer comes from the cache
	url := func() string { n++; return fmt.Sprintf("/api/v1/jobs?offset=%d", n) }
	burst := DefaultTotalRate.Burst
	for i := range burst {
		rec := get(h, client(i), url())
		require.Equal(t, http.StatusOK, rec.Code)
		require.Equal(t, max(0, i+1-burst/2), *waited, "request %d", i)
		if i < burst/2 {
			require.Empty(t, rec.Header().Values("Server-Timing"), "request %d", i)
		} else {
			require.Equal(t, []string{`quiet;dur=0;desc="waited for the quiet part of the second"`},
				rec.Header().Values("Server-Timing"), "request %d", i)
		}
	}
	require.Equal(t, http.StatusTooManyRequests, get(h, client(burst), url()).Code)
	// Honouring Retry-After, the storm comes back with each token: its
	// answers keep waiting.
	for i := range 20 {
		c.add(time.Duration(float64(time.Second) / DefaultTotalRate.PerSecond))
		before := *waited
		require.Equal(t, http.StatusOK, get(h, client(i), url()).Code)
		require.Equal(t, before+1, *waited, "storm request %d answered at once", i)
	}
	// Once quiet long enough to refill half the bucket, a person is
	// answered at once again.
	c.add(time.Duration(float64(burst/2+1) / DefaultTotalRate.PerSecond * float64(time.Second)))
	before := *waited
	require.Equal(t, http.StatusOK, get(h, "192.0.2.1:1", "/").Code)
	require.Equal(t, before, *waited)
}

// An answer made in the quiet phase says how long it waited for it, in
// milliseconds on the replica's clock, in its Server-Timing header.
func TestQuietWaitInServerTiming(t *testing.T) {
	c := newFakeClock()
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	t.Cleanup(func() { l.Close() })
	h := Handler(Backend{Locker: l, Specs: []scheduler.JobSpec{everySecond(t, "beat")}, Now: c.now,
		Yield: func(context.Context) error { c.add(350250 * time.Microsecond); return nil }})
	var rec *httptest.ResponseRecorder
	for i := 0; i <= DefaultTotalRate.Burst/2; i++ { // the storm's first answer that waits
		rec = get(h, fmt.Sprintf("198.51.100.%d:1", i), fmt.Sprintf("/api/v1/jobs?offset=%d", i))
		require.Equal(t, http.StatusOK, rec.Code)
	}
	require.Equal(t, `quiet;dur=350.25;desc="waited for the quiet part of the second"`, rec.Header().Get("Server-Timing"))
}

// Only GET and HEAD are answered; any other method, known or not, is 405
// with Allow before any token is taken, so a client past its rate gets
// 405 for FOO as for POST, and its refused methods cost it nothing. Other
// paths than the page's and the API's (a favicon) take no token either.
func TestMethodRefusedBeforeRate(t *testing.T) {
	c := newFakeClock()
	h := limitedHandler(t, c, Rate{PerSecond: 0.5, Burst: 1}, Rate{PerSecond: 100, Burst: 100})
	const a = "192.0.2.1:1000"
	serve := func(method, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		r.RemoteAddr = a
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	for _, m := range []string{"POST", "FOO", "DELETE", "PUT", "OPTIONS"} {
		for _, path := range []string{"/", "/healthz", "/api/v1/jobs"} {
			rec := serve(m, path)
			require.Equal(t, http.StatusMethodNotAllowed, rec.Code, "%s %s", m, path)
			require.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
		}
	}
	require.Equal(t, http.StatusNotFound, serve("GET", "/favicon.ico").Code)
	require.Equal(t, http.StatusOK, serve("HEAD", "/api/v1/jobs").Code, "the client's one token is still there")
	require.Equal(t, http.StatusTooManyRequests, serve("GET", "/api/v1/jobs").Code)
	require.Equal(t, http.StatusMethodNotAllowed, serve("FOO", "/healthz").Code, "past the rate: still 405")
	require.Equal(t, http.StatusMethodNotAllowed, serve("POST", "/healthz").Code)
}
