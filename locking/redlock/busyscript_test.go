package redlock

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

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
	cycle := func(name string) {
		t.Helper()
		key := locking.Key{Family: "busy-" + name, Name: "slot:1"}
		claim, err := l.Claim(ctx, key, 5*time.Second, locking.With(locking.Key{Family: key.Family, Name: "run"}))
		require.NoError(t, err, "%s: the other two are a majority", name)
		require.NoError(t, claim.Start())
		end := claim.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Also: claim.Grant().Joined})
		require.NoError(t, end.Err, name)
	}
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
	marker, err := busy.Client().Get(ctx, "t:{busy-after}:slot:1").Result()
	require.NoError(t, err, "the node takes claims and ends again")
	require.Contains(t, marker, "succeeded")
	require.Equal(t, 1, strings.Count(buf.String(), "reachable again"), "log:\n%s", buf.String())
}
