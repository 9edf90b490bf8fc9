package redlock_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// A node that answers every read and refuses every write — a primary
// under min-replicas-to-write whose replicas fell behind (NOREPLICAS), or
// a node a failover demoted to a read-only replica (READONLY) — holds no
// claim: claims, alone and folded in a burst, are won on the other two,
// their runs end there with their done markers, and a rival is refused.
// Its reads, which still answer, never stand for a write it refused.
// Taking writes again, it holds the next claims like the others.
func TestNodeRefusingWrites(t *testing.T) {
	for _, mode := range []string{"NOREPLICAS", "READONLY"} {
		t.Run(mode, func(t *testing.T) {
			c := redistest.Start(t, 4) // node 3: the primary a demoted node follows
			nodes := c.Addrs()[:3]
			l, other := lockerOn(t, nodes, "me"), lockerOn(t, nodes, "other")
			refuse := func(on bool) {
				if mode == "NOREPLICAS" {
					require.NoError(t, c.Node(1).RefuseWrites(on))
				} else if on {
					require.NoError(t, c.Node(1).ReplicaOf(c.Node(3).Addr()))
				} else {
					require.NoError(t, c.Node(1).ReplicaOf(""))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			fam := "refuse" + mode
			claims := func(n int) int64 {
				return c.Node(n).Client().HLen(ctx, "slotlock:{"+fam+"}:claims").Val()
			}

			refuse(true)
			slot := locking.Key{Family: fam, Name: "slot:1"}
			claim, err := l.Claim(ctx, slot, 10*time.Second, locking.With(locking.Key{Family: fam, Name: "run"}))
			require.NoError(t, err, "won on the two nodes that take writes")
			require.NoError(t, claim.Start())
			require.NoError(t, claim.Extend(ctx))
			require.Equal(t, []int64{1, 0, 1}, []int64{claims(0), claims(1), claims(2)})
			_, err = other.Claim(ctx, slot, 10*time.Second)
			requireHeld(t, err, false)
			entry := locking.LogEntry{Score: 1, Value: "slot 1 succeeded"}
			end := locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Entry: &entry, Keep: 10, Also: claim.Grant().Joined}
			require.NoError(t, claim.End(ctx, end).Err)
			_, err = other.Claim(ctx, slot, 10*time.Second)
			requireHeld(t, err, true)

			// A burst: the claims of one instant fold into one call per node.
			var wg sync.WaitGroup
			errs := make([]error, 20)
			for i := range errs {
				wg.Go(func() {
					k := locking.Key{Family: fmt.Sprintf("%s%d", fam, i), Name: "slot:1"}
					lease, err := l.Claim(ctx, k, 10*time.Second)
					if err == nil {
						err = lease.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err
					}
					errs[i] = err
				})
			}
			wg.Wait()
			for i, err := range errs {
				require.NoError(t, err, "burst claim %d", i)
			}

			refuse(false)
			next, err := l.Claim(ctx, locking.Key{Family: fam, Name: "slot:2"}, 10*time.Second)
			require.NoError(t, err)
			require.EqualValues(t, 1, claims(1), "the node holds claims again")
			require.NoError(t, next.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
		})
	}
}

// lockerOn is a Locker on the given nodes, closed when the test ends.
func lockerOn(t *testing.T, nodes []string, replica string) locking.Locker {
	t.Helper()
	l, err := redlock.NewLocker(redlock.Config{Nodes: nodes, OpTimeout: 2 * time.Second},
		locking.Options{Replica: replica, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}
