package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// receiver is a webhook that keeps every request it gets.
type receiver struct {
	mu   sync.Mutex
	got  []got
	code func(n int) int // the status of the n-th request (1-based); nil: 200
}

type got struct {
	path   string
	header http.Header
	body   []byte
	at     time.Time
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, got{path: req.URL.Path, header: req.Header.Clone(), body: b, at: time.Now()})
	n := len(r.got)
	r.mu.Unlock()
	if r.code != nil {
		w.WriteHeader(r.code(n))
	}
}

// RoundTrip serves a request in process: inside a synctest bubble, where
// a real socket would not let fake time advance.
func (r *receiver) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return rec.Result(), nil
}

func (r *receiver) requests() []got {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]got(nil), r.got...)
}

type countMetrics struct {
	mu sync.Mutex
	n  map[string]int // "to/result"
}

func (m *countMetrics) Notification(to, result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[to+"/"+result]++
}

func (m *countMetrics) get(k string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[k]
}

// fixture is a notifier on in-process stores, logging to a buffer.
type fixture struct {
	n       *Notifier
	store   locking.Locker
	log     *syncBuffer
	metrics *countMetrics
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := &fixture{store: locking.NewLocal(locking.Options{Replica: "r1"}), log: &syncBuffer{}, metrics: &countMetrics{}}
	t.Cleanup(func() { _ = f.store.Close() })
	cfg.Store, cfg.Replica, cfg.Metrics = f.store, "r1", f.metrics
	cfg.Logger = slog.New(slog.NewJSONHandler(f.log, nil))
	f.n = New(cfg)
	return f
}

func (f *fixture) records(t *testing.T) []Record {
	t.Helper()
	rs, err := ReadRecords(context.Background(), f.store, "", 0)
	require.NoError(t, err)
	return rs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var slot = time.Date(2026, 11, 29, 10, 0, 5, 0, time.UTC)

func failedRun(rules ...scheduler.NotifyRule) scheduler.Written {
	return scheduler.Written{Job: "nightly", Slot: slot, Rules: rules, Entry: history.Entry{
		Slot: "2026-11-29T10:00:05Z", Outcome: history.OutcomeFailed, Replica: "r2", RunID: "run-1", ErrorClass: "exit"}}
}

// One event, three targets in the three formats: each gets one request
// with the Idempotency-Key <run id>:<event>, the target's headers and
// its body; each result is recorded and counted.
func TestSendsEachFormatWithKey(t *testing.T) {
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	f := newFixture(t, Config{Targets: []Target{
		{Name: "plain", URL: srv.URL + "/json", Headers: map[string]string{"Authorization": "Bearer tok-123456"}},
		{Name: "chat", URL: srv.URL + "/slack", Format: FormatSlack},
		{Name: "teams", URL: srv.URL + "/teams", Format: FormatTeams},
	}})
	on := []string{EventFailed}
	f.n.Written(failedRun(scheduler.NotifyRule{To: "plain", On: on}, scheduler.NotifyRule{To: "chat", On: on},
		scheduler.NotifyRule{To: "teams", On: on}, scheduler.NotifyRule{To: "plain", On: []string{EventMissed}}))
	f.n.Wait()

	reqs := rec.requests()
	require.Len(t, reqs, 3)
	byPath := map[string]got{}
	for _, g := range reqs {
		byPath[g.path] = g
		require.Equal(t, "run-1:failed", g.header.Get("Idempotency-Key"))
		require.Equal(t, "nightly", g.header.Get("X-Slotlock-Job"))
		require.Empty(t, g.header.Get("X-Slotlock-Resend"))
	}
	require.Equal(t, "Bearer tok-123456", byPath["/json"].header.Get("Authorization"))
	var m Message
	require.NoError(t, json.Unmarshal(byPath["/json"].body, &m))
	require.Equal(t, Message{Job: "nightly", Slot: "2026-11-29T10:00:05Z", RunID: "run-1", Event: "failed", Outcome: "failed",
		ErrorClass: "exit", Replica: "r2", Sender: "r1", Time: m.Time, Key: "run-1:failed"}, m)
	var slack map[string]any
	require.NoError(t, json.Unmarshal(byPath["/slack"].body, &slack))
	require.Contains(t, slack["text"], "slotlock job nightly: slot 2026-11-29T10:00:05Z failed")
	require.Len(t, slack["blocks"], 2)
	var teams map[string]any
	require.NoError(t, json.Unmarshal(byPath["/teams"].body, &teams))
	require.Equal(t, "MessageCard", teams["@type"])
	require.NotEmpty(t, teams["sections"])

	rs := f.records(t)
	require.Len(t, rs, 3, "one record per notification: the pending one replaced by its result")
	for _, r := range rs {
		require.Equal(t, StateSent, r.State)
		require.Equal(t, "run-1:failed", r.Key)
		require.Equal(t, 1, f.metrics.get(r.To+"/sent"))
	}
	require.Equal(t, 3, strings.Count(f.log.String(), `"event":"notify.sent"`))
}

// A missed slot has no run id: its key is the slot's.
func TestKeyOfAMissedSlotIsTheSlot(t *testing.T) {
	w := scheduler.Written{Job: "j", Slot: slot, Entry: history.Entry{Outcome: history.OutcomeMissed, Reason: history.ReasonNoReplica}}
	require.Equal(t, "2026-11-29T10:00:05Z:missed", idempotencyKey(w, EventMissed))
}

// Which outcomes are which events.
func TestEntryEvents(t *testing.T) {
	for _, c := range []struct {
		e    history.Entry
		want []string
	}{
		{history.Entry{Outcome: history.OutcomeFailed}, []string{EventFailed}},
		{history.Entry{Outcome: history.OutcomeCanceled, Reason: history.ReasonTimeout}, []string{EventFailed}},
		{history.Entry{Outcome: history.OutcomeCanceled, Reason: history.ReasonShutdown}, nil},
		{history.Entry{Outcome: history.OutcomeCanceled, Reason: history.ReasonReplaced}, nil},
		{history.Entry{Outcome: history.OutcomeMissed, Reason: history.ReasonUnknown, MayHaveStarted: true}, []string{EventMissed}},
		{history.Entry{Outcome: history.OutcomeAbandoned}, []string{EventAbandoned}},
		{history.Entry{Outcome: history.OutcomeSucceeded}, nil},
		{history.Entry{Outcome: history.OutcomeSkipped, Reason: history.ReasonPaused}, nil},
	} {
		require.Equal(t, c.want, entryEvents(c.e), "%+v", c.e)
	}
}

// recovered: a success whose job's previous outcome was bad; skipped
// entries between them are passed over.
func TestRecovered(t *testing.T) {
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	f := newFixture(t, Config{Targets: []Target{{Name: "t", URL: srv.URL}}})
	write := func(at time.Time, e history.Entry) {
		require.NoError(t, f.store.AppendLog(context.Background(), "nightly", locking.LogAppend{Entry: e.LogEntry(at), Keep: 100}))
	}
	rule := scheduler.NotifyRule{To: "t", On: []string{EventRecovered}}
	success := func(at time.Time, id string) scheduler.Written {
		e := history.Entry{Slot: at.Format(time.RFC3339), Outcome: history.OutcomeSucceeded, RunID: id}
		write(at, e)
		return scheduler.Written{Job: "nightly", Slot: at, Entry: e, Rules: []scheduler.NotifyRule{rule}}
	}
	write(slot, history.Entry{Outcome: history.OutcomeFailed, RunID: "a"})
	write(slot.Add(time.Second), history.Entry{Outcome: history.OutcomeSkipped, Reason: history.ReasonPaused})
	f.n.Written(success(slot.Add(2*time.Second), "b"))
	f.n.Wait()
	f.n.Written(success(slot.Add(3*time.Second), "c")) // after a success: nothing
	f.n.Wait()
	reqs := rec.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "b:recovered", reqs[0].header.Get("Idempotency-Key"))
}
