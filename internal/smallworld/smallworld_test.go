package smallworld

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

var (
	checkWorld  = flag.String("check.world", "default", "the small world to check (world_test.go: default, big, big3, race, settlers, pair, twoslots, nofault, backfill, probe, minority, trim, pause, pauselose, cast2, cast3, reload, reloadcrash, reloadlose, reloadfast, retry, retrybackfill, failover, castfailover, failoverlimit, leap, castleap, leaplimit)")
	checkTime   = flag.Duration("check.time", 0, "stop exploring after this long and report the share of the world explored (0: to exhaustion)")
	checkPrefix = flag.String("check.prefix", "", "explore only the schedules that start with this trace file's actions (its world too)")
)

// TestSmallWorld explores every schedule of the chosen world and fails
// with the shortest counterexample of each class of broken invariant.
func TestSmallWorld(t *testing.T) {
	cfg, ok := worlds[*checkWorld]
	if !ok {
		t.Fatalf("-check.world %q: no such world", *checkWorld)
	}
	var prefix []action
	if *checkPrefix != "" {
		cfg, prefix = readTrace(t, *checkPrefix)
	}
	x := newExplorer(t, cfg)
	x.start(prefix)
	x.explore()
	t.Log(x.summary())
	if x.unreportedPath != nil {
		t.Logf("the shortest schedule to a run no line reports (%d actions):\n%s", len(x.unreportedPath), traceText(cfg, x.unreportedPath))
	}
	for _, class := range x.order {
		c := x.found[class]
		t.Errorf("%s (%d terminal states): %s\nschedule (%d actions):\n%s", class, c.count, c.v.detail, len(c.path), traceText(cfg, c.path))
	}
}

// summary is the exploration's figures, with the host.
func (x *explorer) summary() string {
	done := "exploring"
	switch {
	case x.finished:
		done = "explored to exhaustion"
	case x.cut > 0:
		done = fmt.Sprintf("stopped by -check.time, about %.2g%% explored (depth-first estimate)", 100*x.cut)
	}
	if x.cfg.failovers() {
		done += fmt.Sprintf(" (%d terminal states after a failover)", x.failedOver)
	}
	if x.cfg.leaps() {
		done += fmt.Sprintf(" (%d terminal states after a stepped clock)", x.leapt)
	}
	return done + ": " + fmt.Sprintf("world %s (%d slot(s), replicas %v, settlers %v, 3 stores, %d fault(s), %d ticks): %d distinct states, %d terminal states (%d with a run no line reports), %d branches run, %d ended on a state seen before, deepest schedule %d actions, in %v on %s/%s, %d CPUs, %s",
		x.cfg.name, x.cfg.slots, x.cfg.replicas, x.cfg.settlers, x.cfg.faults, x.cfg.ticks, len(x.seen), x.terminals, x.unreported, x.runs, x.pruned,
		x.maxDepth, time.Since(x.began).Round(time.Millisecond), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

// traceText is a schedule as a replay file (testdata/*.trace).
func traceText(cfg worldConfig, path []action) string {
	var b strings.Builder
	fmt.Fprintf(&b, "world %s\n", cfg.name)
	for _, a := range path {
		b.WriteString(a.String())
		b.WriteString("\n")
	}
	return b.String()
}
