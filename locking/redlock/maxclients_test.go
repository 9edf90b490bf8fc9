package redlock

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

// A node at its connection limit (maxclients: a managed Redis tier's
// limit, or other clients' leaked connections) refuses each new
// connection. The other two are a majority: every cycle succeeds, the
// node is logged unreachable once, each call costs it one refused dial
// at most (no redial storm), and it is back on the first call after
// the limit is lifted.
func TestNodeAtMaxClients(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 30*time.Second)
	admin := c.Node(1).Client()
	stat := func(name string) int {
		t.Helper()
		for _, l := range strings.Split(admin.Info(ctx, "clients", "stats").Val(), "\r\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				n, err := strconv.Atoi(v)
				require.NoError(t, err)
				return n
			}
		}
		t.Fatalf("INFO has no %s", name)
		return 0
	}
	require.NoError(t, admin.ConfigSet(ctx, "maxclients", strconv.Itoa(stat("connected_clients"))).Err())
	l, buf := loggedRedlock(t, c.Addrs())
	const cycles = 20
	for i := range cycles {
		lease, err := l.Acquire(ctx, locking.Key{Family: "limit", Name: fmt.Sprint(i)}, 5*time.Second)
		require.NoError(t, err, "the other two are a majority")
		require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
	}
	refused := stat("rejected_connections")
	require.Positive(t, refused, "the limit was reached")
	require.LessOrEqual(t, refused, 2*cycles, "one refused dial per call at most")
	require.Equal(t, 1, strings.Count(buf.String(), "redis node unreachable"), "log:\n%s", buf.String())

	require.NoError(t, admin.ConfigSet(ctx, "maxclients", "10000").Err())
	lease, err := l.Acquire(ctx, locking.Key{Family: "limit", Name: "after"}, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
	require.Equal(t, 1, strings.Count(buf.String(), "reachable again"), "log:\n%s", buf.String())
}
