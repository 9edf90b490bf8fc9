package redlock

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

// Faults a node's other clients or its operator cause: a script that
// keeps it busy, its connections closed under the replica.

// A node kept busy by another client's runaway script (a shared Redis:
// Redis runs one script at a time and nothing beside it) first holds
// every call, then, past busy-reply-threshold, answers each with a BUSY
// error, unexecuted, until the script ends. The other two nodes are a
// majority: every claim and end goes through, nothing is written on the
// busy node, the node is logged unreachable once, and it is back, taking
// claims, once the script is over.
func TestNodeBusyWithAnotherScript(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 30*time.Second)
	l, buf := loggedRedlock(t, c.Addrs())
	busy := c.Node(0)
	cycle := func(name string) { runSlot(t, ctx, l, "busy-"+name) }
	cycle("before") // scripts loaded, connections open

	done := make(chan error, 1)
	go func() { done <- busy.BusyScript(2*time.Second, 100*time.Millisecond) }()
	require.Eventually(t, func() bool {
		err := busy.Client().Ping(ctx).Err()
		return err != nil && strings.HasPrefix(err.Error(), "BUSY")
	}, 2*time.Second, 10*time.Millisecond, "the node answers BUSY")
	var during []string
	for i := 0; len(done) == 0 && i < 20; i++ {
		name := fmt.Sprintf("during-%d", i)
		cycle(name)
		during = append(during, name)
	}
	require.NoError(t, <-done)
	require.NotEmpty(t, during)
	t.Logf("%d cycles while the node was busy", len(during))
	for _, name := range during {
		n, err := busy.Client().Exists(ctx, "t:{busy-"+name+"}:slot:1", "t:{busy-"+name+"}:fence").Result()
		require.NoError(t, err)
		require.Zero(t, n, "%s: written on the busy node", name)
	}
	require.Equal(t, 1, strings.Count(buf.String(), "redis node unreachable"), "log:\n%s", buf.String())
	require.Contains(t, buf.String(), "BUSY")

	cycle("after")
	requireRanOn(t, ctx, busy, "busy-after")
	require.Equal(t, 1, strings.Count(buf.String(), "reachable again"), "log:\n%s", buf.String())
}

// A node that closes every client connection (a managed Redis patching
// or scaling) between and during calls: each call goes through on the
// others or on a new connection, and the node takes claims again at once.
func TestNodeClosesItsConnections(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 30*time.Second)
	l, buf := loggedRedlock(t, c.Addrs())
	closing := c.Node(1)
	var closed int64
	for i := range 20 {
		n, err := closing.KillClients()
		require.NoError(t, err)
		closed += n
		runSlot(t, ctx, l, fmt.Sprintf("kill-%d", i))
	}
	require.Positive(t, closed, "connections were closed")
	t.Logf("%d connections closed; log:\n%s", closed, buf.String())
	runSlot(t, ctx, l, "kill-after")
	requireRanOn(t, ctx, closing, "kill-after")
}

// runSlot claims slot:1 of job family with its job lease, confirms its
// start and ends it done, each step required to succeed.
func runSlot(t *testing.T, ctx context.Context, l locking.Locker, family string) {
	t.Helper()
	key := locking.Key{Family: family, Name: "slot:1"}
	claim, err := l.Claim(ctx, key, 5*time.Second, locking.With(locking.Key{Family: family, Name: "run"}))
	require.NoError(t, err, "%s: the other two nodes are a majority", family)
	require.NoError(t, claim.Start(), family)
	end := claim.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Also: claim.Grant().Joined})
	require.NoError(t, end.Err, family)
}

// requireRanOn requires node to hold the done marker of slot:1 of job
// family (loggedRedlock's key prefix): the node took its claim and end.
func requireRanOn(t *testing.T, ctx context.Context, node *redistest.Node, family string) {
	t.Helper()
	marker, err := node.Client().Get(ctx, "t:{"+family+"}:slot:1").Result()
	require.NoError(t, err, "%s: the node takes claims and ends again", family)
	require.Contains(t, marker, "succeeded")
}
