package ui

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
)

// The zero time written as since (or until) is a time given, before any
// slot: refused, not read as "unset" (history.ParseSince).
func TestSinceZeroTimeRefused(t *testing.T) {
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	defer l.Close()
	now := time.Now().Truncate(time.Second)
	h := Handler(Backend{Locker: l, Specs: []scheduler.JobSpec{everySecond(t, "beat")}, Now: func() time.Time { return now }})
	for _, q := range []string{"since=0001-01-01T00:00:00Z", "until=0001-01-01T00:00:00Z", "since=1969-12-31T23:59:59Z"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/jobs/beat/slots?"+q, nil))
		require.Equal(t, 400, rec.Code, q)
		require.Contains(t, rec.Body.String(), "before 1970", q)
	}
}
