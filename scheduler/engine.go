package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"

	"go.opentelemetry.io/otel/trace"
)

// engine is what every component of the scheduler shares: the settings,
// the clock, the logger, the metrics, the job set in force, and the
// tracking of goroutines, so that shutdown waits for every one. Scheduler
// and each component embed the one engine New makes; none of it is a
// component's own state.
type engine struct {
	cfg      Config
	scrub    *jobs.Scrubber // Config.Secrets and URL credentials, out of every error text logged
	clock    locking.Clock
	log      *slog.Logger
	metrics  Metrics
	groups   *groupGauge  // the permits held here, per concurrency group (group.go)
	tracer   trace.Tracer // nil: tracing off (trace.go)
	doneTTL  time.Duration
	lateness time.Duration
	draw     func(what string) uint64 // nil: math/rand/v2 (draw.go)
	// defs is the job set in force: replaced whole by Reload (timer_reload.go),
	// never changed in place; read it through jobSet, job and jobList.
	defs atomic.Pointer[defs]

	// inflight holds one token per Acquire or record call in flight
	// (MaxInFlight): the calls of every component share the limit.
	inflight chan struct{}

	state atomic.Int32 // stateNew, stateRunning, stateStopping, stateStopped

	// defsUnread: Run has started and the fleet's definitions were not
	// read yet (fleet_defs.go's learnDefinitions clears it). Until then a
	// replica cannot know whether another runs its jobs under another
	// overlap policy, so its slots keep both sides of a rolling change
	// apart as within their windows (guards_rolling.go).
	defsUnread atomic.Bool

	// Goroutines: every one is started by spawn (or bracketed by enter
	// and leave) and tracked by wg.
	mu      sync.Mutex
	closed  bool // no more goroutines may start
	wg      sync.WaitGroup
	workers workerPool // the goroutines of deep work, reused while Run runs

	stopping   chan struct{} // closed once when Run's ctx ends: fire no more
	stopOnce   sync.Once
	runCtx     context.Context // parent of every run; canceled with ErrShutdown after the grace
	cancelRuns context.CancelCauseFunc
}

// newEngine makes the shared services of a scheduler with the checked
// and defaulted configuration c, its jobs in force.
func newEngine(c Config) (*engine, error) {
	e := &engine{
		cfg:      c,
		clock:    c.Clock,
		log:      c.Logger,
		metrics:  c.Metrics,
		groups:   newGroupGauge(c.Metrics),
		tracer:   tracerOf(c.TracerProvider),
		lateness: c.Lateness,
		stopping: make(chan struct{}),
		inflight: make(chan struct{}, c.MaxInFlight),
		scrub:    jobs.NewScrubber(c.Secrets...),
	}
	// The done marker must outlive every normal attempt at the slot: the
	// slowest clock fires up to MaxClockSkew after the fastest, may be up to
	// Lateness late and its Acquire may take acquireSlack more; one more
	// MaxClockSkew and a second of margin, and never less than a lease.
	e.doneTTL = max(c.LockTTL, 2*c.MaxClockSkew+c.Lateness+acquireSlack+time.Second)
	e.runCtx, e.cancelRuns = context.WithCancelCause(context.Background())
	d, err := e.buildJobs(c.Jobs, c.Clock.Now())
	if err != nil {
		return nil, err
	}
	d.hash = c.DefinitionsHash
	if d.hash == "" {
		d.hash = specsHash(d.order)
	}
	e.defs.Store(d)
	return e, nil
}

// spawn starts f on a tracked goroutine of its own (track).
func (e *engine) spawn(f func()) bool {
	return e.track(f, func(g func()) { go g() })
}

// track starts f, tracked, through launch (a new goroutine, or a worker);
// it returns false, and does not start f, once the scheduler has
// finished shutting down.
func (e *engine) track(f func(), launch func(func())) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	launch(func() {
		defer e.wg.Done()
		f()
	})
	return true
}

// spawnDeep is spawn for work that goes down the lock path — a slot's
// claim, its run and its end pass through scheduler, locking, redlock and
// go-redis, about 16 KB of stack. A goroutine starts smaller, and the
// runtime grows a stack by copying it and adjusting every frame on it: met
// at the claim's depth, that walk was 11 % of a replica's CPU at 1,000
// every-second jobs (BenchmarkScale's profile). Grown first, with two
// frames on it, the copy is cheap; the stack reaches that size anyway.
//
// Its goroutine is a reused worker while the scheduler runs (workers.go).
func (e *engine) spawnDeep(f func()) bool { return e.track(f, e.workers.run) }

// growStack takes a frame big enough that the runtime grows the stack
// once, to the size a slot's attempt needs, while it is shallow.
//
//go:noinline
func growStack() {
	var buf [12 << 10]byte
	stackSink(&buf)
}

// stackSink keeps growStack's frame from being optimized away.
//
//go:noinline
func stackSink(b *[12 << 10]byte) { b[0]++ }

// enter and leave bracket work done on a caller's goroutine (Trigger) so
// that shutdown waits for it too. Once shutdown began, enter refuses: only
// tracked goroutines may then start others, so the WaitGroup never goes
// up from zero while Run waits on it.
func (e *engine) enter() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.isStopping() {
		return false
	}
	e.wg.Add(1)
	return true
}

func (e *engine) leave() { e.wg.Done() }

func (e *engine) isStopping() bool {
	select {
	case <-e.stopping:
		return true
	default:
		return false
	}
}

// sleep waits d on the clock; it returns false when abort closes first.
func (e *engine) sleep(d time.Duration, abort <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := e.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-abort:
		return false
	}
}

// repeat runs check at once, then every d, until check reports that there
// is nothing more to check or the scheduler stops (the clock and node
// checks).
func (e *engine) repeat(d time.Duration, check func() bool) {
	for check() && e.sleep(d, e.stopping) {
	}
}
