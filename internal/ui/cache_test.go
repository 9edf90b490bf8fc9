package ui

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// counting is a render that counts its calls and answers code with the
// call's number.
type counting struct {
	calls atomic.Int32
	code  int
	gate  chan struct{} // when not nil, each call waits for it
}

func (c *counting) render(w http.ResponseWriter, r *http.Request) {
	n := c.calls.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(c.code)
	_, _ = w.Write([]byte(strconv.Itoa(int(n))))
}

func serveCached(c *answerCache, at time.Time, path string, render http.HandlerFunc) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	c.serve(rec, httptest.NewRequest("GET", path, nil), at, render)
	return rec
}

// A 200 answer is served again for the same URL until CacheFor is over;
// another URL, or the same one later, is made afresh.
func TestCacheServesOneAnswerPerURLAndSecond(t *testing.T) {
	clock := newFakeClock()
	c := &answerCache{ttl: time.Second, answers: map[string]*answer{}}
	r := &counting{code: http.StatusOK}
	for range 3 {
		rec := serveCached(c, clock.now(), "/?job=a&since=168h", r.render)
		require.Equal(t, http.StatusOK, rec.Code)
		require.Equal(t, "1", rec.Body.String())
		require.Equal(t, "text/plain", rec.Header().Get("Content-Type"))
		clock.add(300 * time.Millisecond)
	}
	require.Equal(t, "2", serveCached(c, clock.now(), "/?job=b&since=168h", r.render).Body.String())
	clock.add(100 * time.Millisecond) // 1 s after the first
	require.Equal(t, "3", serveCached(c, clock.now(), "/?job=a&since=168h", r.render).Body.String())
	require.Equal(t, int32(3), r.calls.Load())
	require.Equal(t, 2, c.size, "the kept bodies: 2 and 3 (1 expired)")
}

// An answer other than 200 (a store error, a busy refusal) is not kept.
func TestCacheKeepsOnly200(t *testing.T) {
	clock := newFakeClock()
	c := &answerCache{ttl: time.Second, answers: map[string]*answer{}}
	r := &counting{code: http.StatusServiceUnavailable}
	require.Equal(t, http.StatusServiceUnavailable, serveCached(c, clock.now(), "/", r.render).Code)
	require.Equal(t, "2", serveCached(c, clock.now(), "/", r.render).Body.String())
	require.Empty(t, c.answers)
}

// Requests for a URL whose answer is being made wait for it: N clients
// loading the same window at once cost one read and one rendering.
func TestCacheSharesTheAnswerBeingMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &answerCache{ttl: time.Second, answers: map[string]*answer{}}
		r := &counting{code: http.StatusOK, gate: make(chan struct{})}
		now := time.Now()
		recs := make([]*httptest.ResponseRecorder, 5)
		var wg sync.WaitGroup
		for i := range recs {
			wg.Go(func() { recs[i] = serveCached(c, now, "/api/v1/jobs/a/slots?since=168h", r.render) })
			synctest.Wait() // the first is making the answer; the others wait for it
		}
		close(r.gate)
		wg.Wait()
		require.Equal(t, int32(1), r.calls.Load())
		for _, rec := range recs {
			require.Equal(t, http.StatusOK, rec.Code)
			require.Equal(t, "1", rec.Body.String())
		}
	})
}

// Without a cache (CacheFor < 0) every request is made.
func TestCacheOff(t *testing.T) {
	c := &answerCache{ttl: -1}
	r := &counting{code: http.StatusOK}
	for range 3 {
		serveCached(c, time.Now(), "/", r.render)
	}
	require.Equal(t, int32(3), r.calls.Load())
}
