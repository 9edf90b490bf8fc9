package scheduler_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/locksim"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler"
)

// simConfig is one simulated deployment.
type simConfig struct {
	seed      uint64
	duration  time.Duration
	replicas  int
	stores    int
	ttl, skew time.Duration
	// faultGap is the mean time between two faults.
	faultGap time.Duration
	// jobs are the simulated jobs (default simJobs).
	jobs []simJobDef
	// views: each replica's view of the fleet (its slots' candidates) is
	// drawn at random at every refresh instead of read from the
	// heartbeats (simView).
	views bool
	// replay numbers the replays of one seed (TestSimulationReplaysItsSeed),
	// in the names of their trace files (-sim.trace).
	replay int
}

// world is the simulated fleet: replicas (processes that crash, restart,
// pause), stores and the network between them, and a fault plan drawn
// from the seed.
type world struct {
	t      testing.TB
	cfg    simConfig
	rng    *rand.Rand
	net    *locksim.Net
	rec    *record
	start  time.Time
	reps   []*replica
	faults *faultLog
	wg     sync.WaitGroup

	mu       sync.Mutex
	triggers int
	reloads  int // hot reloads injected
	stopped  bool
	pauses   []pauseRec
	// The operators' processes (sim_backfill_test.go): how many were
	// started, backfills, reconciler passes, outage pauses and pause
	// writes that reached one store among them, and the slots a backfill
	// asked to run.
	opsSeq, backfills, backfillsKilled, reconciles, outagePauses, partialPauses int
	backfilled                                                                  map[slotKey]bool
}

// pauseRec is one pause an operator process wrote (or tried to: failed,
// the stores did not confirm it, so it may or may not hold).
type pauseRec struct {
	job                string
	from, acked, until time.Time
	failed             bool
}

type replica struct {
	name  string
	epoch int
	cur   *instance
}

// instance is one process of a replica (or of a trigger command).
type instance struct {
	name   string
	gate   *locksim.Gate
	clock  *locksim.Clock
	sched  *scheduler.Scheduler
	locker locking.Locker
	cancel context.CancelFunc
	done   chan struct{} // closed when the process's work has returned

	mu     sync.Mutex
	born   time.Time
	died   time.Time // zero while alive
	pauses [][2]time.Time
}

// activeAt reports whether the process could act at t: born, not dead,
// not paused.
func (in *instance) activeAt(t time.Time) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if t.Before(in.born) || (!in.died.IsZero() && !t.Before(in.died)) {
		return false
	}
	for _, p := range in.pauses {
		if !t.Before(p[0]) && (p[1].IsZero() || t.Before(p[1])) {
			return false
		}
	}
	return true
}

// The simulated jobs. Durations are drawn from (job, slot), the same on
// every replica: most runs are short, one in five long — longer than the
// period for the forbid jobs (overlap skips, job-lease hand-overs) and for
// the allow job (overlapping runs of one job). Two jobs have a jitter: the
// minutely one (a run_once recovery counts from the due time) and the
// five-minute one (more than a lock TTL, less than the end's two minutes
// of settling), which also recovers every missed slot of the last 20
// minutes (run_all, at most 3 at a time). The replace job's long runs
// outlast its period: the next slot, often won by another replica, cancels
// them (run.canceled reason replaced) and starts once they returned or
// their lease expired; it has a jitter and run_once too (a recovered slot
// may find a newer one asked).
type simJobDef struct {
	name, spec  string
	overlap     scheduler.Overlap
	misfire     scheduler.Misfire
	short, long [2]time.Duration
	jitter      time.Duration
	group       *scheduler.Group // its concurrency group (sim_group_test.go); nil: none
}

var simJobs = []simJobDef{
	{"minutely", "0 * * * * *", scheduler.OverlapForbid,
		scheduler.Misfire{Policy: scheduler.MisfireRunOnce, Deadline: 5 * time.Minute},
		[2]time.Duration{500 * time.Millisecond, 5 * time.Second}, [2]time.Duration{30 * time.Second, 80 * time.Second},
		20 * time.Second, nil},
	{"twomin", "20 */2 * * * *", scheduler.OverlapAllow,
		scheduler.Misfire{Policy: scheduler.MisfireSkip},
		[2]time.Duration{100 * time.Millisecond, 5 * time.Second}, [2]time.Duration{2 * time.Minute, 5 * time.Minute}, 0, nil},
	{"fivemin", "30 */5 * * * *", scheduler.OverlapForbid,
		scheduler.Misfire{Policy: scheduler.MisfireRunAll, Deadline: 20 * time.Minute, Max: 3},
		[2]time.Duration{time.Second, 5 * time.Second}, [2]time.Duration{5 * time.Second, 20 * time.Second},
		90 * time.Second, nil},
	{"hourly", "0 0 * * * *", scheduler.OverlapForbid,
		scheduler.Misfire{Policy: scheduler.MisfireRunOnce, Deadline: 30 * time.Minute},
		[2]time.Duration{time.Second, 10 * time.Second}, [2]time.Duration{time.Minute, 3 * time.Minute}, 0, nil},
	{"replacing", "40 */3 * * * *", scheduler.OverlapReplace,
		scheduler.Misfire{Policy: scheduler.MisfireRunOnce, Deadline: 2 * time.Minute},
		[2]time.Duration{time.Second, 30 * time.Second}, [2]time.Duration{4 * time.Minute, 10 * time.Minute},
		25 * time.Second, nil},
}

func (d simJobDef) duration(slot time.Time) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(d.name + strconv.FormatInt(slot.Unix(), 10)))
	x := h.Sum64()
	r := d.short
	if x%5 == 0 {
		r = d.long
	}
	return r[0] + time.Duration((x/5)%uint64(r[1]-r[0]))
}

func newWorld(t testing.TB, cfg simConfig) *world {
	if cfg.jobs == nil {
		cfg.jobs = simJobs
	}
	var stores []*locksim.Store
	for i := range cfg.stores {
		stores = append(stores, locksim.NewStore(fmt.Sprintf("store-%d", i)))
	}
	w := &world{t: t, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 0x5107)),
		net: locksim.NewNet(cfg.seed, stores...), rec: &record{}, start: time.Now(), faults: &faultLog{},
		backfilled: map[slotKey]bool{}}
	w.net.SetOrdered(true)
	for i := range cfg.replicas {
		w.reps = append(w.reps, &replica{name: fmt.Sprintf("r%d", i)})
	}
	return w
}

// simHistoryKeep holds a simulated day of every job's slots (the minutely
// job has 1,440), so that the accounted invariant can read the last day
// back.
const simHistoryKeep = 2_000

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// process starts a process named name: its gate, clock (offset within
// ±skew/2, so any two replicas differ by at most skew), locker and
// scheduler.
func (w *world) process(name string, epoch int) *instance {
	gate := w.net.NewGate(epoch)
	in := &instance{name: name, gate: gate, clock: &locksim.Clock{Gate: gate}, born: time.Now()}
	// The process's own draws, not the world's stream: a replica restarts
	// on a goroutine of its own, which may run at the instant the fault
	// plan draws.
	draw := w.draws(name, epoch)
	off := time.Duration(draw("clock offset")%uint64(w.cfg.skew+1)) - w.cfg.skew/2
	in.clock.SetOffset(off)
	locker, err := redlock.OnNodes(w.net.Nodes(name, gate), "sim", 100*time.Millisecond,
		locking.Options{Replica: name, Clock: in.clock, Logger: discard, Token: tokens(draw)})
	if err != nil {
		w.t.Fatal(err)
	}
	specs := w.specs(in, 10*time.Minute)
	s, err := scheduler.New(scheduler.Config{
		Replica: name, Locker: locker, Clock: in.clock,
		Logger:  slog.New(&auditHandler{rec: w.rec, inst: in}).With("replica", name),
		LockTTL: w.cfg.ttl, MaxClockSkew: w.cfg.skew, ShutdownGrace: 5 * time.Second, Jobs: specs,
		HistoryKeep: simHistoryKeep,
		// Sparser than the defaults (10s, 30s): the simulated jobs fire
		// every minute or less often, and these set the simulation's pace.
		Beat: 30 * time.Second, ReconcileEvery: time.Minute,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	scheduler.SetDraw(s, draw)
	if w.cfg.views {
		scheduler.SetViewSource(s, func() []string { return w.simView(name, epoch) })
	}
	in.sched, in.locker = s, locker
	in.done = make(chan struct{})
	w.wg.Go(func() { <-in.done; _ = locker.Close() })
	return in
}

// draws is the random source of process name's epoch: each number drawn
// for what (a lock key) comes from the seed, the process, what and how many
// the process drew for what before — not from a stream shared by the
// process's goroutines, which run in an order the Go scheduler picks — so
// that a replay of the seed draws the same numbers for the same things.
func (w *world) draws(name string, epoch int) func(what string) uint64 {
	var mu sync.Mutex
	drawn := map[string]uint64{}
	return func(what string) uint64 {
		mu.Lock()
		n := drawn[what]
		drawn[what]++
		mu.Unlock()
		h := fnv.New64a()
		fmt.Fprintf(h, "%s|%d|%s|%d", name, epoch, what, n)
		return rand.New(rand.NewPCG(w.cfg.seed, h.Sum64())).Uint64()
	}
}

// tokens are the lease tokens of a process whose draws are draw.
func tokens(draw func(string) uint64) func(locking.Key) [16]byte {
	return func(k locking.Key) [16]byte {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], draw("token "+k.String()))
		binary.LittleEndian.PutUint64(b[8:], draw("token "+k.String()))
		return b
	}
}

// specs are the jobs' definitions for process in, with timeout as every
// job's timeout (a reload changes it: a setting that changes nothing the
// invariants look at).
func (w *world) specs(in *instance, timeout time.Duration) []scheduler.JobSpec {
	var specs []scheduler.JobSpec
	for _, d := range w.cfg.jobs {
		sched, err := scheduler.ParseSchedule(d.spec, time.UTC)
		if err != nil {
			w.t.Fatal(err)
		}
		specs = append(specs, scheduler.JobSpec{Name: d.name, Spec: d.spec, Schedule: sched, Plugin: "sim",
			Job: &simJob{rec: w.rec, inst: in, dur: d.duration}, Timeout: timeout,
			Overlap: d.overlap, Misfire: d.misfire, Jitter: d.jitter, Group: d.group})
	}
	return specs
}

// current is rep's live process, nil while it is down.
func (w *world) current(rep *replica) *instance {
	w.mu.Lock()
	defer w.mu.Unlock()
	return rep.cur
}

func (w *world) setCurrent(rep *replica, in *instance) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rep.cur = in
}

// startReplica starts a new process of rep running its scheduler.
func (w *world) startReplica(rep *replica) {
	w.mu.Lock()
	rep.epoch++
	epoch := rep.epoch
	w.mu.Unlock()
	in := w.process(rep.name, epoch)
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	w.setCurrent(rep, in)
	w.wg.Go(func() {
		defer close(in.done)
		_ = in.sched.Run(ctx)
	})
}
