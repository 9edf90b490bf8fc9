package redlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
	"github.com/slotlock/slotlock/locking/redistest"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// sendTogether sends ops to n in one pipeline (the node's sender held
// while they queue) and returns their answers, in order.
func sendTogether(t *testing.T, n *redisNode, ops []driver.Op) ([]driver.Result, []error) {
	t.Helper()
	free := holdSender(t, n)
	calls := make([]*nodeCall, len(ops))
	for i, op := range ops {
		calls[i] = n.start(context.Background(), time.Time{}, wireCall{op: op})
	}
	free()
	res, errs := make([]driver.Result, len(ops)), make([]error, len(ops))
	for i, c := range calls {
		res[i], errs[i] = c.wait()
	}
	return res, errs
}

// sendRound resets the command statistics of nodes, sends ops to n in one
// pipeline (sendTogether) and requires each call answered on its own: no
// error, but for the calls failing picks (nil: none), whose errors it
// returns for the caller to judge; a MaxSetOp's answer is its own N. It
// returns the errors and the script calls the nodes ran for ops, summed.
func sendRound(t *testing.T, n *redisNode, nodes []*redis.Client, ops []driver.Op, failing func(driver.Op) bool) (errs []error, scripts int) {
	t.Helper()
	for _, cl := range nodes {
		require.NoError(t, cl.ConfigResetStat(context.Background()).Err())
	}
	res, errs := sendTogether(t, n, ops)
	for i, op := range ops {
		if failing != nil && failing(op) {
			continue
		}
		require.NoError(t, errs[i], "call %d", i)
		if m, ok := op.(driver.MaxSetOp); ok {
			require.Equal(t, m.N, res[i].N, "call %d", i)
		}
	}
	for _, cl := range nodes {
		scripts += scriptCalls(t, cl)
	}
	return errs, scripts
}

// oneNode starts one Redis node and a redisNode that sends to it, closed
// when t ends.
func oneNode(t *testing.T) (*redis.Client, *redisNode) {
	t.Helper()
	c := redistest.Start(t, 1)
	n := newRedisNode(c.Addrs()[0], "127.0.0.1", Config{OpTimeout: time.Second}.withDefaults())
	t.Cleanup(func() { _ = n.Close() })
	return c.Node(0).Client(), n
}

// scriptCalls is how many script calls (EVALSHA and EVAL) cl's node ran
// since its statistics were last reset.
func scriptCalls(t *testing.T, cl *redis.Client) int {
	t.Helper()
	calls, _ := scriptStats(t, cl)
	return calls
}

// scriptTime is the time cl's node spent in script calls since its
// statistics were last reset.
func scriptTime(t *testing.T, cl *redis.Client) time.Duration {
	t.Helper()
	_, d := scriptStats(t, cl)
	return d
}

// scriptStats is the script calls (EVALSHA and EVAL) cl's node ran since
// its statistics were last reset, and the time it spent in them.
func scriptStats(t *testing.T, cl *redis.Client) (calls int, d time.Duration) {
	t.Helper()
	return commandStats(t, cl, "evalsha", "eval")
}

// commandCalls is how many times cl's node ran the command name (lower
// case: "time"), in scripts or not, since its statistics were last reset.
func commandCalls(t *testing.T, cl *redis.Client, name string) int {
	t.Helper()
	calls, _ := commandStats(t, cl, name)
	return calls
}

// commandStats is the calls of the commands names (lower case) cl's node
// ran since its statistics were last reset, summed, and the time it spent
// in them (INFO commandstats).
func commandStats(t *testing.T, cl *redis.Client, names ...string) (calls int, d time.Duration) {
	t.Helper()
	info, err := cl.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		stat, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		name, ok := strings.CutPrefix(stat, "cmdstat_")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		var n, us int
		_, err := fmt.Sscanf(rest, "calls=%d", &n)
		require.NoError(t, err, line)
		_, usec, _ := strings.Cut(rest, "usec=")
		_, _ = fmt.Sscanf(usec, "%d", &us)
		calls += n
		d += time.Duration(us) * time.Microsecond
	}
	return calls, d
}

// Calls of one script queued together run as one script call, each
// answered with its own reply; one that fails (a Redis error inside it)
// is that call's error alone, as it would be sent alone, and the calls
// after it run. On a node whose script cache is empty (fresh, then
// flushed) the batch form is sent with its source.
func TestFoldedCallsAnswerEachAlone(t *testing.T) {
	cl, n := oneNode(t)
	ctx := tctx(t, 10*time.Second)
	require.NoError(t, cl.RPush(ctx, "f:{bad}:rec", "not a number").Err())
	_, alone := n.Do(ctx, driver.MaxSetOp{Key: "f:{bad}:rec", N: 1})
	require.ErrorContains(t, alone, "WRONGTYPE")

	for round := range 3 {
		if round == 2 {
			require.NoError(t, cl.ScriptFlush(ctx).Err())
		}
		var ops []driver.Op
		for i := range 20 {
			ops = append(ops, driver.MaxSetOp{Key: fmt.Sprintf("f:{k%d}:rec", i), N: int64(100*round + i + 1)})
			if i == 7 {
				ops = append(ops, driver.MaxSetOp{Key: "f:{bad}:rec", N: 5})
			}
		}
		bad := func(op driver.Op) bool { return op.(driver.MaxSetOp).Key == "f:{bad}:rec" }
		errs, scripts := sendRound(t, n, []*redis.Client{cl}, ops, bad)
		for i, op := range ops {
			m := op.(driver.MaxSetOp)
			if bad(op) {
				require.ErrorContains(t, errs[i], "WRONGTYPE", "the failing call's own error")
				require.ErrorContains(t, errs[i], alone.Error()[:strings.Index(alone.Error(), " ")], "as when sent alone")
				continue
			}
			v, err := cl.Get(ctx, m.Key).Int64()
			require.NoError(t, err)
			require.Equal(t, m.N, v, "call %d, round %d", i, round)
		}
		if round == 1 {
			require.Equal(t, 1, scripts, "21 calls of one script, one script call")
		}
	}
}

// A call alone in its pipeline (the node idle) is a plain call of the
// plain script: the batch form is never loaded for it.
func TestLoneCallIsPlainScript(t *testing.T) {
	cl, n := oneNode(t)
	ctx := tctx(t, 10*time.Second)
	res, err := n.Do(ctx, driver.FenceOp{Key: "lone:{a}:fence", N: 3})
	require.NoError(t, err)
	require.EqualValues(t, 3, res.N)
	have, err := cl.ScriptExists(ctx, fenceScript.sha.(string), fenceScript.fold.sha.(string)).Result()
	require.NoError(t, err)
	require.Equal(t, []bool{true, false}, have)
}

// Folding keeps the queue's order tag by tag: a call joins an earlier
// fold of its script only where no call between touches its hash tag.
func TestFoldKeepsTagOrder(t *testing.T) {
	n := &redisNode{}
	call := func(op driver.Op) *nodeCall { return &nodeCall{op: op} }
	x1 := call(driver.MaxSetOp{Key: "p:{x}:a", N: 1})
	x2 := call(driver.FenceOp{Key: "p:{x}:b", N: 1})
	x3 := call(driver.MaxSetOp{Key: "p:{x}:a", N: 2})
	y1 := call(driver.MaxSetOp{Key: "p:{y}:a", N: 1})
	z1 := call(driver.FenceOp{Key: "p:{z}:b", N: 1})
	z2 := call(driver.GetOp{Key: "p:{z}:c"})
	z3 := call(driver.FenceOp{Key: "p:{z}:b", N: 2})
	w1 := call(driver.MaxSetOp{Key: "p:{w}:a", N: 1})
	units := n.plan([]*nodeCall{x1, x2, x3, y1, z1, z2, z3, w1}, new([1]unit))
	var got [][]*nodeCall
	for _, u := range units {
		got = append(got, u.calls)
		require.Equal(t, len(u.calls) > 1, u.fold != nil)
	}
	require.Equal(t, [][]*nodeCall{{x1}, {x2, z1}, {x3, y1, w1}, {z2}, {z3}}, got)
}

// On a Redis Cluster endpoint a script's keys must lie in one hash slot:
// a fold across slots, sent before the node knows it for a cluster
// endpoint, is refused whole and sent again through the cluster client,
// folded by slot; every call is answered with its own reply. Then each
// slot's calls are one script call on its shard.
func TestFoldOnClusterEndpoint(t *testing.T) {
	c := redistest.StartShards(t, 1, 2).Node(0)
	ctx := tctx(t, 20*time.Second)
	n := newRedisNode(c.Node(0).Addr(), "127.0.0.1", Config{OpTimeout: time.Second}.withDefaults())
	defer n.Close()
	slots, onB := map[int]bool{}, 0
	for f := range 8 {
		fam := fmt.Sprintf("job%d", f)
		slots[wire.TagSlot(fam)] = true
		if redistest.ShardOf(fam, 2) == 1 {
			onB++
		}
	}
	require.Positive(t, onB, "no family on the second shard; the test proves nothing")
	var shards []*redis.Client
	for _, node := range c.Nodes() {
		shards = append(shards, node.Client())
	}
	for round := range 2 {
		var ops []driver.Op
		for j := range 5 {
			for f := range 8 {
				ops = append(ops, driver.MaxSetOp{Key: fmt.Sprintf("t:{job%d}:rec%d", f, j), N: int64(10*round + j + f + 1)})
			}
		}
		_, calls := sendRound(t, n, shards, ops, nil)
		require.True(t, n.cluster.Load(), "switched to the cluster client")
		if round == 1 {
			require.Equal(t, len(slots), calls, "one script call per slot")
		}
	}
	// Claims of a burst, through a Locker on the same endpoint.
	l := newTestRedlock(t, []string{c.Node(0).Addr()}, "me", func(cfg *Config) { cfg.OpTimeout = time.Second })
	_, err := l.Claim(ctx, locking.Key{Family: "job0", Name: "warm"}, 5*time.Second)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := locking.Key{Family: fmt.Sprintf("job%d", i%8), Name: fmt.Sprintf("slot:%d", i)}
			lease, err := l.Claim(ctx, k, 5*time.Second)
			if err == nil {
				err = lease.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err
			}
			errc <- err
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
}

// claimOp is the claim of slot:1 of family fam (a key prefix such as
// "t:{f}:"), with its job lease, as a replica sends it.
func claimOp(fam string) driver.AcquireOp {
	return driver.AcquireOp{Key: fam + "slot:1", Value: "00ff|me", TTL: 30000, Fence: fam + "fence", N: 1,
		Tomb: fam + "tomb", Claims: fam + "claims", Lives: fam + "lives", Field: "slot:1", Pause: fam + "pause",
		Also: fam + "run", AlsoValue: "00ff|me", SentMS: time.Now().UnixMilli(), FreshMS: 60000}
}

// The node's time for a fold of maxBatch claims, against the same claims
// sent one by one (each a plain call): logged, not bounded (times depend
// on the host); the calls are bounded: one script call for the fold.
//
//	go test ./locking/redlock -run 'TestFoldLatency' -count=1 -v
func TestFoldLatency(t *testing.T) {
	cl, n := oneNode(t)
	ctx := tctx(t, 30*time.Second)
	claims := func(round int) []driver.Op {
		ops := make([]driver.Op, maxBatch)
		for i := range ops {
			ops[i] = claimOp(fmt.Sprintf("t:{lat%d-%d}:", round, i))
		}
		return ops
	}
	require.NoError(t, cl.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	sendTogether(t, n, claims(0))      // the batch form loaded
	_, err := n.Do(ctx, claims(-1)[0]) // and the plain script
	require.NoError(t, err)
	var folded, plain []time.Duration
	for round := 1; round <= 5; round++ {
		require.NoError(t, cl.Do(ctx, "SLOWLOG", "RESET").Err())
		_, scripts := sendRound(t, n, []*redis.Client{cl}, claims(round), nil)
		require.Equal(t, 1, scripts)
		folded = append(folded, scriptTime(t, cl))
		require.NoError(t, cl.ConfigResetStat(ctx).Err())
		for _, op := range claims(100 + round) {
			_, err := n.Do(ctx, op)
			require.NoError(t, err)
		}
		require.Equal(t, maxBatch, scriptCalls(t, cl))
		plain = append(plain, scriptTime(t, cl))
	}
	t.Logf("%d claims on one node, in scripts: folded %v, one by one %v (summed)", maxBatch, folded, plain)
}

// A fold reads the node's clock once (servertime), not once per call: its
// calls run as one step, at the instant that step began — each claim's
// lease deadline on the node is the same — and a renewal in a fold of its
// own judges and sets the deadlines at its own step's instant. A call
// sent alone reads the clock itself.
func TestFoldReadsTheClockOnce(t *testing.T) {
	cl, n := oneNode(t)
	ctx := tctx(t, 10*time.Second)
	const calls = 40
	fam := func(i int) string { return fmt.Sprintf("t:{clock%d}:", i) }
	claims := make([]driver.Op, calls)
	renewals := make([]driver.Op, calls)
	ops := func(from int) {
		for i := range claims {
			f := fam(from + i)
			claims[i] = claimOp(f)
			renewals[i] = driver.ExtendOp{Key: f + "slot:1", Value: "00ff|me", TTL: 40000,
				Claims: f + "claims", Lives: f + "lives", Field: "slot:1", Start: true}
		}
	}
	ops(calls) // the batch forms loaded, on other families
	sendTogether(t, n, claims)
	sendTogether(t, n, renewals)
	ops(0)
	deadlines := func() map[string]bool {
		seen := map[string]bool{}
		for i := range calls {
			live, err := cl.HGet(ctx, fam(i)+"lives", "slot:1").Result()
			require.NoError(t, err)
			_, at, _ := strings.Cut(live, "|")
			seen[at] = true
		}
		return seen
	}
	for _, round := range []struct {
		name string
		ops  []driver.Op
	}{{"claims", claims}, {"renewals", renewals}} {
		_, scripts := sendRound(t, n, []*redis.Client{cl}, round.ops, nil)
		require.Equal(t, 1, scripts, round.name)
		require.Equal(t, 1, commandCalls(t, cl, "time"), "%s: %d calls in one fold read the clock once", round.name, calls)
		require.Len(t, deadlines(), 1, "%s: every lease of the fold has the same deadline", round.name)
	}
	for i := range 3 {
		require.NoError(t, cl.ConfigResetStat(ctx).Err())
		op := claims[0].(driver.AcquireOp)
		op.Key, op.Field = fam(0)+"slot:2", "slot:2"
		op.Value = fmt.Sprintf("%04x|me", i)
		res, err := n.Do(ctx, op)
		require.NoError(t, err)
		require.Contains(t, []int64{0, 1}, res.Status)
		require.Equal(t, 1, commandCalls(t, cl, "time"), "a claim sent alone reads the clock itself")
	}
}
