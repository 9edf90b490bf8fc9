package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// A burst: many slots of different jobs due at the same instant, claimed
// at once and ended at once, on 3 real Redis nodes. The calls of one
// script that meet in a node's pipeline are one script call there, so a
// burst costs a handful of script calls per node, not one per slot (it
// was about three per slot per node: claim, start, end). The calls meet
// because each node is busy when they arrive (HoldNodes: a pipeline in
// flight) — in a real burst it is, with the first slot's call; here it is
// held until every call queued, since on a loaded host the test's own
// goroutines may reach the locker one by one, each finding the node idle. Counted with
// INFO commandstats; counts, not times, are bounded. The largest script
// call's duration on the node (SLOWLOG) is logged: a fold of up to
// maxBatch calls runs on the node as one step.
//
//	go test ./locking/redlock -run 'TestBurstScriptCalls' -count=1 -v
func TestBurstScriptCalls(t *testing.T) {
	c := redistest.Start(t, 3)
	l := newCostLocker(t, c, "burst-1")
	burst(t, c, l, "warm", 50) // scripts loaded, connections open
	for _, n := range []int{100, 1000} {
		for _, phase := range burst(t, c, l, "b"+strconv.Itoa(n), n) {
			t.Logf("burst of %d, %s (%d slots, %d shed): %.3f script calls/slot/node, %.2f commands/slot/node, %v/slot/node in scripts, node CPU %v/slot/node, largest script call %v; node 0: %v",
				n, phase.name, phase.slots, phase.shed, phase.scripts, phase.commands, phase.scriptTime, phase.cpu, phase.largest, phase.by)
			if phase.scripts > 0.2 {
				t.Errorf("burst of %d, %s: %.3f script calls per slot per node, want at most 0.2", n, phase.name, phase.scripts)
			}
		}
	}
}

// burstCost is one phase of a burst, per slot per node (the busiest).
type burstCost struct {
	name              string
	slots, shed       int // slots the phase ran, and of them shed
	scripts, commands float64
	largest           time.Duration
	scriptTime, cpu   time.Duration  // per slot per node: in scripts (commandstats), the node's CPU
	by                map[string]int // node 0's commands
}

// burst claims n slots of n jobs at once (each with its job's lease),
// confirms their start at once and ends them at once, and returns each
// phase's cost.
func burst(t *testing.T, c *redistest.Cluster, l locking.Locker, tag string, n int) []burstCost {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leases := make([]*locking.Lease, n)
	claim := func(i int) error {
		job := tag + "-" + strconv.Itoa(i)
		var err error
		leases[i], err = l.Claim(ctx, locking.Key{Family: job, Name: "slot:1"}, 30*time.Second,
			locking.With(locking.Key{Family: job, Name: "run"}))
		return err
	}
	start := func(i int) error {
		if leases[i] == nil {
			return errSkip
		}
		leases[i].Start()
		return leases[i].Extend(ctx)
	}
	end := func(i int) error {
		if leases[i] == nil {
			return errSkip
		}
		entry := locking.LogEntry{Score: 1, Value: "slot 1 succeeded"}
		return leases[i].End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Entry: &entry, Keep: 100,
			Also: leases[i].Grant().Joined}).Err
	}
	var out []burstCost
	for _, ph := range []struct {
		name string
		f    func(int) error
	}{{"claims", claim}, {"starts", start}, {"ends", end}} {
		for _, node := range c.Nodes() {
			cl := node.Client()
			require.NoError(t, cl.ConfigResetStat(ctx).Err())
			require.NoError(t, cl.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
			require.NoError(t, cl.ConfigSet(ctx, "slowlog-max-len", "100000").Err())
			require.NoError(t, cl.Do(ctx, "SLOWLOG", "RESET").Err())
		}
		cpu0 := map[*redistest.Node]time.Duration{}
		for _, node := range c.Nodes() {
			cpu0[node] = nodeWork(t, node).cpu
		}
		calls := n
		if ph.name != "claims" {
			calls = countLive(leases)
		}
		queued, free := redlock.HoldNodes(t, l)
		ran, shed := all(t, n, ph.f, func() {
			require.Eventually(t, func() bool { return queued() >= calls }, time.Minute, time.Millisecond,
				"%d calls queued at every node", calls)
			free()
		})
		cost := burstCost{name: ph.name, slots: ran, shed: shed}
		for _, node := range c.Nodes() {
			w := nodeWork(t, node)
			scripts, commands, largest, by := w.scripts, w.commands, w.largest, w.by
			cost.scriptTime += w.scriptTime / time.Duration(ran*len(c.Nodes()))
			cost.cpu += (w.cpu - cpu0[node]) / time.Duration(ran*len(c.Nodes()))
			if cost.by == nil {
				cost.by = by
			}
			cost.scripts = max(cost.scripts, float64(scripts)/float64(ran))
			cost.commands = max(cost.commands, float64(commands)/float64(ran))
			cost.largest = max(cost.largest, largest)
		}
		out = append(out, cost)
	}
	return out
}

// errSkip is a phase's answer for a slot it does not run (its claim was
// shed).
var errSkip = errors.New("skipped")

// countLive is how many of leases were won.
func countLive(leases []*locking.Lease) (k int) {
	for _, l := range leases {
		if l != nil {
			k++
		}
	}
	return k
}

// all runs f(0) … f(n-1) at once, each on its own goroutine released
// together, runs gathered once they are released, and returns how many ran (not errSkip) and how many of those
// this replica shed for its own overload (ErrBusy, or a deadline the
// loaded host let pass: the calls still count, per slot that ran). Any
// other error fails the test.
func all(t *testing.T, n int, f func(int) error, gathered func()) (ran, shed int) {
	t.Helper()
	var wg sync.WaitGroup
	gate := make(chan struct{})
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			errs[i] = f(i)
		}()
	}
	close(gate)
	gathered()
	wg.Wait()
	for i, err := range errs {
		switch {
		case errors.Is(err, errSkip):
			continue
		case errors.Is(err, locking.ErrBusy) || errors.Is(err, context.DeadlineExceeded):
			shed++
		default:
			require.NoError(t, err, "slot %d", i)
		}
		ran++
	}
	require.Positive(t, ran-shed, "every slot shed")
	return ran, shed
}

// work is what a node did since its statistics were reset: its script
// calls (EVALSHA and EVAL), the time in them, its commands (by name, and
// in all), its longest script call (SLOWLOG) and its CPU time so far.
type work struct {
	scripts, commands        int
	scriptTime, largest, cpu time.Duration
	by                       map[string]int
}

func nodeWork(t *testing.T, node *redistest.Node) (w work) {
	t.Helper()
	ctx := context.Background()
	info, err := node.Client().Info(ctx, "cpu", "commandstats").Result()
	require.NoError(t, err)
	w.commands, w.by = commandCalls(info)
	w.scripts = w.by["evalsha"] + w.by["eval"]
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "used_cpu_sys", "used_cpu_user":
			s, _ := strconv.ParseFloat(v, 64)
			w.cpu += time.Duration(s * float64(time.Second))
		case "cmdstat_evalsha", "cmdstat_eval":
			_, us, _ := strings.Cut(v, "usec=")
			us, _, _ = strings.Cut(us, ",")
			n, _ := strconv.Atoi(us)
			w.scriptTime += time.Duration(n) * time.Microsecond
		}
	}
	log, err := node.Client().SlowLogGet(ctx, -1).Result()
	require.NoError(t, err)
	for _, e := range log {
		if len(e.Args) > 0 && strings.HasPrefix(strings.ToLower(e.Args[0]), "eval") {
			w.largest = max(w.largest, e.Duration)
		}
	}
	return w
}
