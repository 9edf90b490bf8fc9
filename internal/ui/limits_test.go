package ui

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/internal/secrettest"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Past MaxConcurrent requests in flight, the page and the API answer 503
// at once with Retry-After; a freed slot serves again.
func TestConcurrencyBounded(t *testing.T) {
	s := &server{busy: make(chan struct{}, 2)}
	release := make(chan struct{})
	var entered sync.WaitGroup
	entered.Add(2)
	h := s.limited(func(w http.ResponseWriter, r *http.Request) {
		entered.Done()
		<-release
	})
	var done sync.WaitGroup
	for range 2 {
		done.Add(1)
		go func() {
			defer done.Done()
			h(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		}()
	}
	entered.Wait()
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest("GET", "/", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "2", rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), "busy")
	close(release)
	done.Wait()
	entered.Add(1)
	rec = httptest.NewRecorder()
	h(rec, httptest.NewRequest("GET", "/", nil))
	require.Equal(t, http.StatusOK, rec.Code)
}

// A window lists at most MaxSlots (history.keep) slots; a larger limit is
// refused.
func TestWindowCappedAtHistoryKeep(t *testing.T) {
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	defer l.Close()
	now := time.Now().Truncate(time.Second)
	h := Handler(Backend{Locker: l, Specs: []scheduler.JobSpec{everySecond(t, "beat")}, Now: func() time.Time { return now },
		MaxSlots: 30})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/jobs/beat/slots?since=2m", nil))
	require.Equal(t, 200, rec.Code, rec.Body.String())
	var sl history.Slots
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &sl))
	require.Len(t, sl.Slots, 30)
	require.True(t, sl.Truncated)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/jobs/beat/slots?since=2m&limit=31", nil))
	require.Equal(t, 400, rec.Code)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/?job=beat&since=1h", nil))
	require.Equal(t, 200, rec.Code)
	require.Contains(t, rec.Body.String(), "30")
}

// When the stores do not answer the page says so, without the error's
// text: no node address, no Redis message, no credential (the answers go
// to the package's secrets scan).
func TestPageShowsNoRawStoreError(t *testing.T) {
	// A "node" that hangs up on every connection: the reads fail, and
	// their error names the node's address.
	addr := redistest.HangUp(t)
	l, err := redlock.New(redlock.Config{Nodes: []string{addr}, OpTimeout: 50 * time.Millisecond,
		Username: secrettest.URLUser, Password: secrettest.RedisPass}, locking.Options{Replica: "r1"})
	require.NoError(t, err)
	defer l.Close()
	h := Handler(Backend{Locker: l, Specs: []scheduler.JobSpec{everySecond(t, "beat")}})
	for _, path := range []string{"/", "/?job=beat&since=1m", "/api/v1/jobs"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		secrettest.Capture(rec.Body.Bytes())
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, path)
		require.NotContains(t, rec.Body.String(), addr, path)
		require.NotContains(t, rec.Body.String(), "EOF", path)
	}
}
