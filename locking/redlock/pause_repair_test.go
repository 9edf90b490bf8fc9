package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
	"github.com/slotlock/slotlock/locking/redistest"
)

// TestRedlockFailedResumeIsRepaired: a resume (slotlock resume) while node
// 1 is down (stopped; it keeps its data) and node 2 refuses writes (out of memory: its reads still
// answer) reaches node 0 alone and fails with a *QuorumError — the
// command exits 1. Once the nodes are back, a replica's next claim meets
// the differing registers: the newest, the resume, lets it in and is
// written back to the others, so that a claim whose majority leaves out
// node 0 is let in too (not paused on some slots and resumed on others),
// and the pause the resume ended is kept in the register's past.
func TestRedlockFailedResumeIsRepaired(t *testing.T) {
	c := redistest.Start(t, 3, redistest.AppendOnlyOn(1))
	ctx := tctx(t, 30*time.Second)
	ops := newTestRedlock(t, c.Addrs(), "ops")
	r1 := newTestRedlock(t, c.Addrs(), "r1")
	pauseKey := rkey(locking.Key{Family: "job", Name: wire.PauseName})
	registers := func() []string {
		var out []string
		for _, n := range c.Nodes() {
			out = append(out, n.Client().Get(ctx, pauseKey).Val())
		}
		return out
	}
	paused, err := ops.SetPause(ctx, "job", locking.Pause{Paused: true, By: "ops"})
	require.NoError(t, err)

	require.NoError(t, c.Node(1).Stop())
	require.NoError(t, c.Node(2).Client().ConfigSet(ctx, "maxmemory", "1").Err())
	_, err = ops.SetPause(ctx, "job", locking.Pause{By: "ops"})
	var qe *locking.QuorumError
	require.True(t, errors.As(err, &qe), "the resume reached one node: %v", err)
	require.Equal(t, 1, qe.Got)
	require.NoError(t, c.Node(2).Client().ConfigSet(ctx, "maxmemory", "0").Err())
	require.NoError(t, c.Node(1).Start())
	regs := registers()
	resumed := regs[0]
	require.Equal(t, driver.FormatPause(paused), regs[1], "node 1 was down")
	require.Equal(t, driver.FormatPause(paused), regs[2], "node 2 refused the write")
	require.NotEqual(t, resumed, regs[1])

	slot := func(n string) locking.Key { return locking.Key{Family: "job", Name: "slot:" + n} }
	lease, err := r1.Claim(ctx, slot("1"), time.Second)
	require.NoError(t, err, "the newest register, the resume, lets the claim in")
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
	require.Eventually(t, func() bool {
		r := registers()
		return r[0] == resumed && r[1] == resumed && r[2] == resumed
	}, 5*time.Second, 20*time.Millisecond, "the claim writes the resume to every node")

	require.NoError(t, c.Node(0).Pause())
	defer func() { require.NoError(t, c.Node(0).Resume()) }()
	lease, err = r1.Claim(ctx, slot("2"), time.Second)
	require.NoError(t, err, "a majority without node 0 holds the resume")
	require.NoError(t, lease.End(context.WithoutCancel(ctx), locking.Ending{}).Err)
	got, err := r1.ReadPause(ctx, "job")
	require.NoError(t, err)
	require.False(t, got.Paused)
	require.Len(t, got.Past, 1)
	require.Equal(t, paused.Since(), got.Past[0].From, "the pause the failed resume ended is in the register's past")
}
