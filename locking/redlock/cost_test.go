package redlock_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// The Redis work of one call on the common path of a slot, counted on
// real Redis: the commands each node runs for it, the EVALSHA included,
// as INFO commandstats counts them. Every replica makes these calls for
// every slot of every job on every node, so each command here is paid
// thousands of times a second at scale (issue #23: a slot cost 41
// commands per node). The bounds are what the scripts do now; a script
// that grows past one fails here, where a slower TestScale would only
// drift.
func TestCommandsPerCall(t *testing.T) {
	c := redistest.Start(t, 3)
	l := newCostLocker(t, c, "cost-1")
	ctx := context.Background()
	var err error
	m := &meter{t: t, nodes: c.Nodes()}
	fam := "costjob"
	run := locking.Key{Family: fam, Name: "run"}
	last := locking.Key{Family: fam, Name: "last"}
	slot := func(i int) locking.Key { return locking.Key{Family: fam, Name: "slot:" + strconv.Itoa(i)} }
	end := func(i int, job *locking.Lease) locking.Ending {
		entry := locking.LogEntry{Score: int64(i), Value: "slot " + strconv.Itoa(i) + " succeeded"}
		return locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Entry: &entry, Keep: 100,
			Also: job, Record: last, RecordValue: int64(i)}
	}

	// One slot's cycle, twice: the first loads the scripts and opens the
	// connections, the second is counted.
	for i := 1; i <= 2; i++ {
		counted := i == 2
		var claim *locking.Lease
		m.call(counted, "claim won, with the job lease", 9, func() {
			claim, err = l.Claim(ctx, slot(i), 10*time.Second, locking.With(run))
			require.NoError(t, err)
		})
		job := claim.Grant().Joined
		require.NotNil(t, job)
		m.call(counted, "claim refused by a live lease", 5, func() {
			_, err := l.Claim(ctx, slot(i), 10*time.Second, locking.With(run))
			requireHeld(t, err, false)
		})
		claim.Start()
		m.call(counted, "start confirmation", 6, func() { require.NoError(t, claim.Extend(ctx)) })
		m.call(counted, "end: done marker, log entry, job lease, record", 11, func() {
			require.Equal(t, driver.Released{}, claim.End(ctx, end(i, job)))
		})
		m.call(counted, "claim refused by a done marker", 2, func() {
			_, err := l.Claim(ctx, slot(i), 10*time.Second, locking.With(run))
			requireHeld(t, err, true)
		})
		var alone *locking.Lease
		m.call(counted, "claim won, alone", 8, func() {
			alone, err = l.Claim(ctx, slot(100+i), 10*time.Second)
			require.NoError(t, err)
		})
		m.call(counted, "end: done marker alone", 6, func() {
			require.NoError(t, alone.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
		})
		var plain *locking.Lease
		m.call(counted, "plain Acquire", 4, func() {
			plain, err = l.Acquire(ctx, run, 10*time.Second)
			require.NoError(t, err)
		})
		m.call(counted, "plain Release", 3, func() { require.NoError(t, plain.End(ctx, locking.Ending{}).Err) })
	}
}

// newCostLocker is a Redlock of replica on c's nodes, quiet, with a
// timeout that a loaded host meets; closed when tb ends.
func newCostLocker(tb testing.TB, c *redistest.Cluster, replica string) locking.Locker {
	tb.Helper()
	l, err := redlock.NewLocker(redlock.Config{Nodes: c.Addrs(), OpTimeout: 2 * time.Second},
		locking.Options{Replica: replica, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = l.Close() })
	return l
}

// meter counts, per node, the commands one call makes Redis run.
type meter struct {
	t     *testing.T
	nodes []*redistest.Node
}

// call runs f between a reset of the command statistics and a read of
// them; counted, it fails the test where a node ran more than bound.
func (m *meter) call(counted bool, name string, bound int, f func()) {
	m.t.Helper()
	ctx := context.Background()
	for _, n := range m.nodes {
		require.NoError(m.t, n.Client().ConfigResetStat(ctx).Err())
	}
	f()
	if !counted {
		return
	}
	for i, n := range m.nodes {
		info, err := n.Client().Info(ctx, "commandstats").Result()
		require.NoError(m.t, err)
		total, by := commandCalls(info)
		if i == 0 {
			m.t.Logf("%s: %d commands %v", name, total, by)
		}
		if total > bound {
			m.t.Errorf("node %d, %s: %d commands, want at most %d: %v", i, name, total, bound, by)
		}
	}
}

// commandCalls reads INFO commandstats, without the meter's own CONFIG
// and INFO, nor what is no call's work (a health check's PING, a new
// connection's HELLO and CLIENT).
func commandCalls(info string) (int, map[string]int) {
	by := map[string]int{}
	total := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		if strings.HasPrefix(name, "config") || strings.HasPrefix(name, "client") || name == "info" || name == "ping" || name == "hello" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.Atoi(calls)
		by[name] = n
		total += n
	}
	return total, by
}

func requireHeld(t testing.TB, err error, done bool) {
	t.Helper()
	var he *locking.HeldError
	require.True(t, errors.As(err, &he), "want a *HeldError, got %v", err)
	require.Equal(t, done, he.Done)
}

// The acquire script reads the leases of a family's other claims in
// batches of 256 (Lua's unpack is bounded): with more, each claim is
// still judged by its own lease. Half the claims here are kept, half
// abandoned; every orphan reported must be an abandoned one.
func TestOrphanScanBatches(t *testing.T) {
	c := redistest.Start(t, 3)
	l := newCostLocker(t, c, "orphans-1")
	ctx := context.Background()
	key := func(name string) locking.Key { return locking.Key{Family: "manyclaims", Name: name} }
	abandoned := map[string]bool{}
	for i := range 300 {
		_, err := l.Claim(ctx, key("kept:"+strconv.Itoa(i)), time.Minute)
		require.NoError(t, err)
		name := "dead:" + strconv.Itoa(i)
		_, err = l.Claim(ctx, key(name), time.Second)
		require.NoError(t, err)
		abandoned[name] = true
	}
	time.Sleep(1200 * time.Millisecond) // the dead claims' leases expire
	for i := range 20 {
		ls, err := l.Claim(ctx, key("new:"+strconv.Itoa(i)), time.Minute)
		require.NoError(t, err)
		o := ls.Grant().Orphan
		require.NotNil(t, o, "300 abandoned claims, none reported")
		require.True(t, abandoned[o.Key.Name], "a kept claim reported abandoned: %s", o.Key)
	}
}

// BenchmarkSlotRedisCost runs a 3-replica slot's lock calls on real Redis
// (3 nodes): the winner's claim with its job lease, a loser refused by the
// live lease, the end (done marker, log entry, job lease, record), a loser
// refused by the done marker. It reports the Redis work per slot apart
// from the host's other load: the nodes' CPU (INFO cpu, summed) and the
// commands per node (INFO commandstats).
//
//	flock /tmp/slotlock-heavy.lock go test ./locking/redlock -run '^$' -bench SlotRedisCost -benchtime 3000x
func BenchmarkSlotRedisCost(b *testing.B) {
	c := redistest.Start(b, 3)
	var ls [2]locking.Locker
	for i := range ls {
		ls[i] = newCostLocker(b, c, "bench-"+strconv.Itoa(i))
	}
	ctx := context.Background()
	run := locking.Key{Family: "benchjob", Name: "run"}
	last := locking.Key{Family: "benchjob", Name: "last"}
	slot := func(i int) {
		key := locking.Key{Family: "benchjob", Name: "slot:" + strconv.Itoa(i)}
		claim, err := ls[0].Claim(ctx, key, 10*time.Second, locking.With(run))
		require.NoError(b, err)
		_, err = ls[1].Claim(ctx, key, 10*time.Second, locking.With(run))
		requireHeld(b, err, false)
		entry := locking.LogEntry{Score: int64(i), Value: "slot " + strconv.Itoa(i) + " succeeded"}
		require.Equal(b, driver.Released{}, claim.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded",
			Entry: &entry, Keep: 100, Also: claim.Grant().Joined, Record: last, RecordValue: int64(i)}))
		_, err = ls[1].Claim(ctx, key, 10*time.Second, locking.With(run))
		requireHeld(b, err, true)
	}
	slot(0) // scripts loaded, connections open
	cpu0, cmds0, script0 := redisWork(b, c.Nodes())
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		slot(i)
	}
	b.StopTimer()
	cpu1, cmds1, script1 := redisWork(b, c.Nodes())
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "redis-µs/slot")
	b.ReportMetric(float64(cmds1-cmds0)/float64(b.N)/float64(len(c.Nodes())), "cmds/slot/node")
	b.ReportMetric(float64(script1-script0)/float64(b.N), "script-µs/slot")
}

// redisWork is the nodes' CPU time, commands and time in scripts
// (EVALSHA, microseconds) so far, summed.
func redisWork(b *testing.B, nodes []*redistest.Node) (cpu time.Duration, cmds, scriptUS int) {
	for _, n := range nodes {
		info, err := n.Client().Info(context.Background(), "cpu", "commandstats").Result()
		require.NoError(b, err)
		for _, line := range strings.Split(info, "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			if k == "used_cpu_sys" || k == "used_cpu_user" {
				s, _ := strconv.ParseFloat(v, 64)
				cpu += time.Duration(s * float64(time.Second))
			}
			if k == "cmdstat_evalsha" {
				_, us, _ := strings.Cut(v, "usec=")
				us, _, _ = strings.Cut(us, ",")
				n, _ := strconv.Atoi(us)
				scriptUS += n
			}
		}
		total, _ := commandCalls(info)
		cmds += total
	}
	return cpu, cmds, scriptUS
}
