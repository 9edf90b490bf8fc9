package scheduler

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotlock/slotlock/internal/secrettest"
	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// logSink collects JSON log lines from several schedulers.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	secrettest.Capture(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// logger returns a debug-level JSON logger carrying replica, as the command builds it.
func (l *logSink) logger(replica string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})).With("replica", replica)
}

type event map[string]any

func (e event) str(k string) string {
	v, _ := e[k].(string)
	return v
}

func (e event) num(k string) float64 {
	v, _ := e[k].(float64)
	return v
}

// events parses every line; lines that are not JSON fail the test.
func (l *logSink) events(t testing.TB) []event {
	t.Helper()
	l.mu.Lock()
	data := slices.Clone(l.buf.Bytes())
	l.mu.Unlock()
	var out []event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// where returns the events named ev whose attributes equal kv pairs.
func where(evs []event, ev string, kv ...string) []event {
	var out []event
next:
	for _, e := range evs {
		if e.str("event") != ev {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if e.str(kv[i]) != kv[i+1] {
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

func (l *logSink) dump(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("logs:\n%s", l.buf.String())
}

// funcJob is the library's adapter of a function to jobs.Job.
type funcJob = jobs.Func

// record is one observed run of a test job.
type record struct {
	Run        jobs.Run
	Start, End time.Time
	Err        error
	Cause      error
}

// recorder is a job that sleeps for d (or until ctx ends) and records each
// attempt, so tests can count runs per slot and check overlap.
type recorder struct {
	mu   sync.Mutex
	runs []record
	d    time.Duration
	fail atomic.Int32 // the next fail attempts return an error
	now  func() time.Time
}

func (r *recorder) Run(ctx context.Context, run jobs.Run) error {
	start := r.now()
	var err error
	if r.fail.Add(-1) >= 0 {
		err = errors.New("planned failure")
	} else if r.d > 0 {
		t := time.NewTimer(r.d)
		select {
		case <-t.C:
		case <-ctx.Done():
			err = fmt.Errorf("stopped: %w", context.Cause(ctx))
		}
		t.Stop()
	}
	r.mu.Lock()
	r.runs = append(r.runs, record{Run: run, Start: start, End: r.now(), Err: err, Cause: context.Cause(ctx)})
	r.mu.Unlock()
	return err
}

func (r *recorder) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs)
}

// jumpClock is the system clock (fake inside a synctest bubble) plus an
// offset the test can move forward to model a paused process, or fixed to
// model a skewed replica.
type jumpClock struct{ offset atomic.Int64 }

func newJumpClock(offset time.Duration) *jumpClock {
	c := &jumpClock{}
	c.offset.Store(int64(offset))
	return c
}

func (c *jumpClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *jumpClock) NewTimer(d time.Duration) locking.Timer {
	return locking.SystemClock(0).NewTimer(d)
}
func (c *jumpClock) jump(d time.Duration) { c.offset.Add(int64(d)) }

// faultyLocker wraps a Locker: while down, every call fails with a
// *QuorumError; split makes the next n Acquires fail with a split vote,
// blip the next n with a *QuorumError (a node down and another stalled
// past op_timeout for a moment); unconfirmed makes the next n Claims
// refused by another replica's claim not confirmed started
// (HeldError.Unconfirmed), held the next n by its live claim.
type faultyLocker struct {
	locking.Locker
	down        atomic.Bool
	split       atomic.Int32
	blip        atomic.Int32
	unconfirmed atomic.Int32
	held        atomic.Int32
	acquires    atomic.Int64
}

func (f *faultyLocker) quorumErr(op string, key locking.Key) error {
	return &locking.QuorumError{Op: op, Key: key, Need: 2, Got: 0,
		Err: errors.Join(&locking.NodeError{Addr: "test:1", Err: errors.New("down")})}
}

// fault is the injected failure of an acquisition of key, if any.
func (f *faultyLocker) fault(key locking.Key) error {
	f.acquires.Add(1)
	if f.down.Load() {
		return f.quorumErr("acquire", key)
	}
	if f.blip.Add(-1) >= 0 {
		return f.quorumErr("acquire", key)
	}
	if f.split.Add(-1) >= 0 {
		return &locking.SplitVoteError{Held: &locking.HeldError{Key: key, Holder: "other"}}
	}
	return nil
}

func (f *faultyLocker) Acquire(ctx context.Context, key locking.Key, ttl time.Duration) (*locking.Lease, error) {
	if err := f.fault(key); err != nil {
		return nil, err
	}
	return f.Locker.Acquire(ctx, key, ttl)
}

func (f *faultyLocker) Claim(ctx context.Context, key locking.Key, ttl time.Duration, opts ...locking.ClaimOption) (*locking.Lease, error) {
	if f.unconfirmed.Add(-1) >= 0 {
		f.acquires.Add(1)
		return nil, &locking.HeldError{Key: key, Holder: "r9", Unconfirmed: true}
	}
	if f.held.Add(-1) >= 0 {
		f.acquires.Add(1)
		return nil, &locking.HeldError{Key: key, Holder: "r9"}
	}
	if err := f.fault(key); err != nil {
		return nil, err
	}
	return f.Locker.Claim(ctx, key, ttl, opts...)
}

func (f *faultyLocker) AdvanceRecord(ctx context.Context, key locking.Key, v int64) error {
	if f.down.Load() {
		return f.quorumErr("record", key)
	}
	return f.Locker.AdvanceRecord(ctx, key, v)
}

func (f *faultyLocker) ReadRecord(ctx context.Context, key locking.Key) (int64, error) {
	if f.down.Load() {
		return 0, f.quorumErr("record", key)
	}
	return f.Locker.ReadRecord(ctx, key)
}

func (f *faultyLocker) Ping(ctx context.Context) ([]locking.NodeStatus, error) {
	if f.down.Load() {
		return nil, f.quorumErr("ping", locking.Key{})
	}
	return f.Locker.Ping(ctx)
}

// countMetrics records the hooks' calls.
type countMetrics struct {
	mu      sync.Mutex
	skipped map[string]int // "job/reason"
	runs    map[string]int // "job/outcome"
	delays  []time.Duration
	acq     int
	lost    int
}

func newCountMetrics() *countMetrics {
	return &countMetrics{skipped: map[string]int{}, runs: map[string]int{}}
}

func (m *countMetrics) SlotSkipped(job string, reason history.Reason) {
	m.mu.Lock()
	m.skipped[job+"/"+string(reason)]++
	m.mu.Unlock()
}
func (m *countMetrics) RunFinished(job string, outcome history.Outcome, d time.Duration) {
	m.mu.Lock()
	m.runs[job+"/"+string(outcome)]++
	m.mu.Unlock()
}
func (m *countMetrics) StartDelay(job string, d time.Duration) {
	m.mu.Lock()
	m.delays = append(m.delays, d)
	m.mu.Unlock()
}
func (m *countMetrics) LockAcquire(job string, d time.Duration, err error) {
	m.mu.Lock()
	m.acq++
	m.mu.Unlock()
}
func (m *countMetrics) LeaseLost(job string) {
	m.mu.Lock()
	m.lost++
	m.mu.Unlock()
}
func (m *countMetrics) JobPaused(job string, paused bool) {
	m.mu.Lock()
	m.runs[job+"/paused"] = map[bool]int{false: 0, true: 1}[paused]
	m.mu.Unlock()
}
func (m *countMetrics) RunAbandoned(job string) {
	m.mu.Lock()
	m.runs[job+"/abandoned"]++
	m.mu.Unlock()
}

func (m *countMetrics) SlotMissed(job string, reason history.Reason) {
	m.mu.Lock()
	m.runs[job+"/missed/"+string(reason)]++
	m.mu.Unlock()
}
func (m *countMetrics) JobOutcome(job string, outcome history.Outcome, at time.Time) {}

func (m *countMetrics) get(key string, runs bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if runs {
		return m.runs[key]
	}
	return m.skipped[key]
}

// everySecond is a JobSpec for a job that fires every second.
func everySecond(t testing.TB, name string, j jobs.Job) JobSpec {
	t.Helper()
	sched, err := ParseSchedule("* * * * * *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return JobSpec{Name: name, Spec: "* * * * * *", Schedule: sched, Job: j, Plugin: "test"}
}

// running starts s.Run and returns a stop function (idempotent) that ends
// it and waits for Run to return, failing the test on an error.
func running(t testing.TB, s *Scheduler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

// bubbleStart is the fake clock's start inside synctest bubbles.
var bubbleStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func slotAt(sec int) string { return slotString(bubbleAt(sec)) }

// bubbleAt is the instant sec seconds into the bubble.
func bubbleAt(sec int) time.Time { return bubbleStart.Add(time.Duration(sec) * time.Second) }

// pausableClock models a paused process: while paused, none of its timers
// deliver; they deliver (late) when it resumes, as after SIGSTOP/SIGCONT.
type pausableClock struct {
	mu     sync.Mutex
	resume chan struct{} // nil while running
}

func (c *pausableClock) Now() time.Time { return time.Now() }

func (c *pausableClock) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resume == nil {
		c.resume = make(chan struct{})
	}
}

func (c *pausableClock) cont() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resume != nil {
		close(c.resume)
		c.resume = nil
	}
}

func (c *pausableClock) gate() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resume
}

type pausableTimer struct {
	c  *pausableClock
	ch chan time.Time
	t  *time.Timer
}

func (c *pausableClock) NewTimer(d time.Duration) locking.Timer {
	pt := &pausableTimer{c: c, ch: make(chan time.Time, 1)}
	pt.t = time.AfterFunc(d, pt.fire)
	return pt
}

func (p *pausableTimer) fire() {
	if g := p.c.gate(); g != nil {
		<-g
	}
	select {
	case p.ch <- time.Now():
	default:
	}
}

func (p *pausableTimer) C() <-chan time.Time { return p.ch }
func (p *pausableTimer) Stop() bool {
	active := p.t.Stop()
	select {
	case <-p.ch:
	default:
	}
	return active
}
func (p *pausableTimer) Reset(d time.Duration) bool {
	active := p.Stop()
	p.t.Reset(d)
	return active
}

// testEngine is the shared services of a scheduler with cfg (defaulted),
// for a component built alone over fakes of what it calls.
func testEngine(t testing.TB, cfg Config) *engine {
	t.Helper()
	c, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
