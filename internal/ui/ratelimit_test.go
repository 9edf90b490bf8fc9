package ui

import (
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
