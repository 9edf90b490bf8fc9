package scheduler

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// Integration tests: three real redis-server nodes (locking/redistest),
// three schedulers in this process with distinct replica names, their
// clocks at +0.8, 0 and -0.8 × max_clock_skew. They run in parallel to keep
// the package's wall time down.

const itSkew = 2 * time.Second

// itOffsets are the replicas' clock offsets: ±0.8 × max_clock_skew.
var itOffsets = []time.Duration{itSkew * 8 / 10, 0, -itSkew * 8 / 10}

func needRedis(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip(redistest.ErrNoServer)
	}
}

// realTimeNodes starts a test that runs in real time over three real
// Redis nodes (skipped without redis-server and in -short mode, parallel
// to the others) and returns the nodes and a log sink.
func realTimeNodes(t *testing.T) (*redistest.Cluster, *logSink) {
	t.Helper()
	needRedis(t)
	if testing.Short() {
		t.Skip("real time")
	}
	t.Parallel()
	return redistest.Start(t, 3), &logSink{}
}

type replica struct {
	name   string
	sched  *Scheduler
	locker locking.Locker
	stop   func()
}

// cluster is three schedulers over three nodes sharing one log sink.
type cluster struct {
	nodes    *redistest.Cluster
	sink     *logSink
	replicas []*replica
}

func startCluster(t *testing.T, mkSpecs func() []JobSpec, tweak func(*Config)) *cluster {
	t.Helper()
	c := &cluster{nodes: redistest.Start(t, 3), sink: &logSink{}}
	for i, off := range itOffsets {
		name := fmt.Sprintf("replica-%d", i)
		clock := locking.SystemClock(off)
		l, err := redlock.New(redlock.Config{Nodes: c.nodes.Addrs()},
			locking.Options{Replica: name, Clock: clock, Logger: c.sink.logger(name)})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Replica: name, Locker: l, Clock: clock, Logger: c.sink.logger(name),
			MaxClockSkew: itSkew, LockTTL: 10 * time.Second, ShutdownGrace: 5 * time.Second,
			Jobs: mkSpecs()}
		if tweak != nil {
			tweak(&cfg)
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{name: name, sched: s, locker: l}
		r.stop = running(t, s)
		c.replicas = append(c.replicas, r)
	}
	t.Cleanup(func() {
		for _, r := range c.replicas {
			r.stop()
			_ = r.locker.Close()
		}
	})
	return c
}

func (c *cluster) stopAll() {
	var wg sync.WaitGroup
	for _, r := range c.replicas {
		wg.Go(r.stop)
	}
	wg.Wait()
}

// ledger is a job that records every run with real (unskewed) times.
type ledger struct {
	mu   sync.Mutex
	runs []record
	d    time.Duration
}

func (l *ledger) Run(ctx context.Context, run jobs.Run) error {
	start := time.Now()
	var err error
	if l.d > 0 {
		select {
		case <-time.After(l.d):
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
	}
	l.mu.Lock()
	l.runs = append(l.runs, record{Run: run, Start: start, End: time.Now(), Err: err})
	l.mu.Unlock()
	return err
}

func (l *ledger) all() []record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.runs)
}

// perSlot counts runs by slot (unix seconds).
func perSlot(runs []record) map[int64]int {
	m := map[int64]int{}
	for _, r := range runs {
		m[r.Run.Slot.Unix()]++
	}
	return m
}

// TestRedisSixtySlotsExactlyOnce: 60 slots of an every-second job, three
// replicas with skewed clocks: each slot runs exactly once, and fencing
// tokens strictly increase with the slot.
func TestRedisSixtySlotsExactlyOnce(t *testing.T) {
	needRedis(t)
	if testing.Short() {
		t.Skip("62s of real time")
	}
	t.Parallel()
	job := &ledger{d: 50 * time.Millisecond}
	// Every replica a candidate, as with clocks 3.2s apart a fallback's
	// check (1s after the due time on the fastest clock) comes before the
	// slowest candidates' claims: the fallback would claim slot t together
	// with its own claim of slot t+1, and tokens would not follow the
	// slots. Candidates under skew: the simulation and candidates_test.go.
	c := startCluster(t, func() []JobSpec { return []JobSpec{everySecond(t, "sixty", job)} }, func(cfg *Config) { cfg.Candidates = -1 })
	begin := time.Now()
	time.Sleep(63 * time.Second)
	c.stopAll()

	runs := job.all()
	counts := perSlot(runs)
	// Slots every replica took part in: from 2s after the start (the
	// slowest clock is 1.6s behind) to 2s before the stop.
	first := begin.Truncate(time.Second).Add(2 * time.Second)
	n := 0
	for sl := first; n < 60; sl = sl.Add(time.Second) {
		if got := counts[sl.Unix()]; got != 1 {
			c.sink.dump(t)
			t.Fatalf("slot %s ran %d times", slotString(sl), got)
		}
		n++
	}
	for sl, k := range counts {
		if k > 1 {
			t.Errorf("slot %d ran %d times", sl, k)
		}
	}
	// Tokens follow the order in which runs acquired their leases (at the
	// start a slow clock may still handle an older slot nobody else was up
	// for); once all replicas are up, that is the slots' order.
	slices.SortFunc(runs, func(a, b record) int { return a.Start.Compare(b.Start) })
	for i := 1; i < len(runs); i++ {
		if runs[i].Run.FencingToken <= runs[i-1].Run.FencingToken {
			t.Errorf("slot %s token %d not above the previous run's (slot %s) token %d", slotString(runs[i].Run.Slot),
				runs[i].Run.FencingToken, slotString(runs[i-1].Run.Slot), runs[i-1].Run.FencingToken)
		}
		if !runs[i].Run.Slot.Before(first) && !runs[i].Run.Slot.After(first.Add(59*time.Second)) &&
			!runs[i].Run.Slot.After(runs[i-1].Run.Slot) {
			t.Errorf("slot %s ran after slot %s", slotString(runs[i].Run.Slot), slotString(runs[i-1].Run.Slot))
		}
	}
	// The logs agree with the job: one run.succeeded per run, same token.
	evs := c.sink.events(t)
	for _, r := range runs {
		ok := where(evs, "run.succeeded", "slot", slotString(r.Run.Slot), "run_id", r.Run.RunID, "replica", r.Run.Replica)
		if len(ok) != 1 || ok[0].num("fencing_token") != float64(r.Run.FencingToken) {
			t.Errorf("slot %s: run.succeeded lines %v", slotString(r.Run.Slot), ok)
		}
	}
	if nq := where(evs, "slot.skipped", "reason", "no_quorum"); len(nq) != 0 {
		t.Errorf("no_quorum skips on healthy nodes: %v", nq[0])
	}
	t.Logf("%d runs; by replica: %v", len(runs), byReplica(runs))
}

func byReplica(runs []record) map[string]int {
	m := map[string]int{}
	for _, r := range runs {
		m[r.Run.Replica]++
	}
	return m
}

// TestRedisOverlapForbid: a job that runs 2.5s, scheduled every second, on
// three replicas: runs never overlap and fencing tokens strictly increase;
// the slots in between are skipped with reason overlap.
func TestRedisOverlapForbid(t *testing.T) {
	needRedis(t)
	if testing.Short() {
		t.Skip("real time")
	}
	t.Parallel()
	job := &ledger{d: 2500 * time.Millisecond}
	c := startCluster(t, func() []JobSpec { return []JobSpec{everySecond(t, "long", job)} }, nil)
	time.Sleep(20 * time.Second)
	c.stopAll()
	runs := job.all()
	slices.SortFunc(runs, func(a, b record) int { return a.Start.Compare(b.Start) })
	if len(runs) < 5 {
		t.Fatalf("%d runs in 20s", len(runs))
	}
	for i := 1; i < len(runs); i++ {
		if runs[i].Start.Before(runs[i-1].End) {
			t.Errorf("run of %s (%s) started before run of %s (%s) ended", slotString(runs[i].Run.Slot),
				runs[i].Run.Replica, slotString(runs[i-1].Run.Slot), runs[i-1].Run.Replica)
		}
		if runs[i].Run.FencingToken <= runs[i-1].Run.FencingToken {
			t.Errorf("tokens %d then %d", runs[i-1].Run.FencingToken, runs[i].Run.FencingToken)
		}
	}
	evs := c.sink.events(t)
	if n := len(where(evs, "slot.skipped", "reason", "overlap")); n < 10 {
		t.Errorf("%d overlap skips", n)
	}
	for sl, k := range perSlot(runs) {
		if k > 1 {
			t.Errorf("slot %d ran %d times", sl, k)
		}
	}
}

// TestRedisQuorumLost: two of three nodes frozen (SIGSTOP) for 9s — longer
// than a slot's attempts span across the replicas (real T-1.6s .. T+1.6s+L,
// L = 3s, as a missing majority is retried while the slot is fresh), so
// some slots are missed by every replica: no slot
// runs twice, the slots in the outage are skipped with no_quorum, and runs
// resume from the next slot after the nodes come back.
//
// Under run_once the latest slot that no replica could run is recovered,
// once.
func TestRedisQuorumLost(t *testing.T) {
	needRedis(t)
	if testing.Short() {
		t.Skip("real time")
	}
	t.Parallel()
	// One job per misfire policy, in the same cluster and outage.
	policies := []MisfirePolicy{MisfireSkip, MisfireRunOnce}
	ledgers := map[MisfirePolicy]*ledger{}
	for _, p := range policies {
		ledgers[p] = &ledger{d: 100 * time.Millisecond}
	}
	c := startCluster(t, func() []JobSpec {
		var specs []JobSpec
		for _, p := range policies {
			spec := everySecond(t, "outage-"+string(p), ledgers[p])
			spec.Misfire = Misfire{Policy: p, Deadline: time.Minute}
			specs = append(specs, spec)
		}
		return specs
	}, nil)
	time.Sleep(4 * time.Second)
	pausedAt := time.Now()
	for _, i := range []int{1, 2} {
		if err := c.nodes.Node(i).Pause(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(9 * time.Second)
	for _, i := range []int{1, 2} {
		if err := c.nodes.Node(i).Resume(); err != nil {
			t.Fatal(err)
		}
	}
	resumedAt := time.Now()
	// A recovery waits 6.5s after the latest slot due when its replica
	// saw the stores again, and retries every lock.ttl/3 while the slot
	// looks held: requests queued on a frozen node run when it resumes and
	// may hold the slot until lock.ttl (10s) expires.
	time.Sleep(15 * time.Second)
	c.stopAll()

	evs := c.sink.events(t)
	for _, p := range policies {
		t.Run(string(p), func(t *testing.T) {
			checkOutage(t, c, evs, "outage-"+string(p), p, ledgers[p], pausedAt, resumedAt)
		})
	}
}

func checkOutage(t *testing.T, c *cluster, evs []event, job string, policy MisfirePolicy, l *ledger, pausedAt, resumedAt time.Time) {
	counts := perSlot(l.all())
	for sl, k := range counts {
		if k > 1 {
			t.Errorf("slot %s ran %d times", slotString(time.Unix(sl, 0)), k)
		}
	}
	nq := where(evs, "slot.skipped", "reason", "no_quorum", "job", job)
	if len(nq) < 6 {
		t.Errorf("%d no_quorum skips for a 9s outage", len(nq))
	}
	// Slots are nominal times; the fastest clock fires them 1.6s early.
	// From the first slot that it fires after the resume on, every slot
	// must run: no waiting for a lease to expire.
	from := resumedAt.Add(itSkew*8/10 + 100*time.Millisecond).Truncate(time.Second).Add(time.Second)
	to := time.Now().Add(-3 * time.Second).Truncate(time.Second)
	for sl := from; !sl.After(to); sl = sl.Add(time.Second) {
		if counts[sl.Unix()] != 1 {
			c.sink.dump(t)
			t.Fatalf("slot %s after the outage ran %d times (resumed at %s)", slotString(sl), counts[sl.Unix()],
				resumedAt.UTC().Format(time.RFC3339Nano))
		}
	}
	fast := itSkew * 8 / 10
	recovered := where(evs, "misfire.recovered", "job", job)
	if policy == MisfireSkip && len(recovered) != 0 {
		t.Errorf("misfire.recovered under skip: %v", recovered)
	}
	// The outage is reported as one: late is a replica's own overload (a
	// slot shed, its queue to the nodes full), and these replicas run two
	// jobs. Calls held behind a frozen node's pipeline were once taken for
	// the replica's full queue, and a third of the outage's slots logged
	// late instead of no_quorum.
	if policy == MisfireSkip {
		for _, e := range where(evs, "slot.skipped", "reason", "late", "job", job) {
			at, _ := time.Parse(time.RFC3339Nano, e.str("time"))
			if at.After(pausedAt) && at.Before(resumedAt) {
				t.Errorf("%s skipped slot %s late during the outage, not no_quorum (error %q)", e.str("replica"), e.str("slot"), e.str("error"))
			}
		}
	}
	if policy == MisfireRunOnce {
		if len(recovered) != 1 {
			c.sink.dump(t)
			t.Fatalf("misfire.recovered %d times, want once: %v", len(recovered), recovered)
		}
		sl, _ := time.Parse(time.RFC3339, recovered[0].str("slot"))
		if sl.Add(-fast).Before(pausedAt) || sl.Add(fast).After(resumedAt) {
			t.Errorf("recovered slot %s was not missed by every replica (outage %s .. %s)", slotString(sl),
				pausedAt.UTC().Format(time.RFC3339Nano), resumedAt.UTC().Format(time.RFC3339Nano))
		}
		if counts[sl.Unix()] != 1 {
			t.Errorf("recovered slot ran %d times", counts[sl.Unix()])
		}
		delete(counts, sl.Unix())
	}
	// Slots whose every attempt (real times T-1.6s .. T+1.6s+L: a missing
	// majority is retried while the slot is fresh) fell inside the outage
	// did not run.
	lateness := itSkew + time.Second
	for sl := pausedAt.Add(fast).Truncate(time.Second).Add(time.Second); sl.Add(fast + lateness + 300*time.Millisecond).Before(resumedAt); sl = sl.Add(time.Second) {
		if counts[sl.Unix()] != 0 {
			c.sink.dump(t)
			t.Fatalf("slot %s ran during the outage (paused at %s, resumed at %s)", slotString(sl),
				pausedAt.UTC().Format(time.RFC3339Nano), resumedAt.UTC().Format(time.RFC3339Nano))
		}
	}
}

// TestRedisShutdownDuringRun: the replica running a slot is told to stop:
// the run finishes within the grace, Run returns, and the next slot runs
// on another replica.
func TestRedisShutdownDuringRun(t *testing.T) {
	needRedis(t)
	if testing.Short() {
		t.Skip("real time")
	}
	t.Parallel()
	job := &ledger{d: 1500 * time.Millisecond}
	sched, _ := ParseSchedule("*/3 * * * * *", time.UTC)
	c := startCluster(t, func() []JobSpec {
		return []JobSpec{{Name: "handover", Schedule: sched, Job: job}}
	}, nil)
	// Wait until a run is going on, then stop the replica running it.
	var victim record
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		evs := c.sink.events(t)
		if st := where(evs, "run.started"); len(st) > 0 {
			last := st[len(st)-1]
			victim.Run.Replica = last.str("replica")
			victim.Run.RunID = last.str("run_id")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if victim.Run.RunID == "" {
		t.Fatal("no run started")
	}
	var r *replica
	for _, x := range c.replicas {
		if x.name == victim.Run.Replica {
			r = x
		}
	}
	stopAt := time.Now()
	r.stop()
	stopped := time.Since(stopAt)
	if stopped > 2*time.Second {
		t.Errorf("Run took %v to return; the run takes 1.5s", stopped)
	}
	time.Sleep(7 * time.Second)
	c.stopAll()
	evs := c.sink.events(t)
	ok := where(evs, "run.succeeded", "run_id", victim.Run.RunID)
	if len(ok) != 1 {
		t.Fatalf("the victim's run did not succeed: %v", where(evs, "run_id", victim.Run.RunID))
	}
	// Later slots ran elsewhere.
	var after []record
	for _, run := range job.all() {
		if run.Start.After(stopAt) && run.Run.RunID != victim.Run.RunID {
			after = append(after, run)
			if run.Run.Replica == victim.Run.Replica {
				t.Errorf("stopped replica ran slot %s", slotString(run.Run.Slot))
			}
		}
	}
	if len(after) < 2 {
		t.Errorf("%d runs after the shutdown, want the next slots to run on the others", len(after))
	}
	if c := where(evs, "run.canceled"); len(c) != 0 {
		t.Errorf("canceled runs: %v", c)
	}
}
