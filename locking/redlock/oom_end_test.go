package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

// A run's end on nodes whose memory filled up while it ran (maxmemory,
// noeviction) is never cut in half: its first write frees memory (HDEL
// of the lease, or DEL of the job lease) and the done marker, which
// needs memory, comes after it. Redis refuses a script's memory-needing
// write only while the script has written nothing, so the end goes
// through whole — the claim gone and the marker set on every node — and
// the slot cannot be claimed again. Were the marker refused after the
// claim was deleted, the slot would look never claimed and run twice.
func TestEndOnFullNodesIsWhole(t *testing.T) {
	for _, tc := range []struct {
		name  string
		joint bool // with the job lease and the record (its first write a DEL)
	}{{"claim alone", false}, {"with job lease and record", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := redistest.Start(t, 3)
			l := newCostLocker(t, c, "me")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			slot := locking.Key{Family: "full", Name: "slot:1"}
			var opts []locking.ClaimOption
			if tc.joint {
				opts = append(opts, locking.With(locking.Key{Family: "full", Name: "run"}))
			}
			claim, err := l.Claim(ctx, slot, 10*time.Second, opts...)
			require.NoError(t, err)
			claim.Start()
			require.NoError(t, claim.Extend(ctx), "the start confirmed")

			for i := range 3 {
				require.NoError(t, c.Node(i).Client().ConfigSet(ctx, "maxmemory", "1").Err())
			}
			entry := locking.LogEntry{Score: 1, Value: "slot 1 succeeded"}
			end := locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Entry: &entry, Keep: 100}
			if tc.joint {
				end.Also = claim.Grant().Joined
				end.Record, end.RecordValue = locking.Key{Family: "full", Name: "last"}, 1
			}
			require.NoError(t, claim.End(ctx, end).Err, "every node took the whole end")
			for i := range 3 {
				n := c.Node(i).Client()
				require.Contains(t, n.Get(ctx, "slotlock:{full}:slot:1").Val(), "done|me|succeeded", "node %d: marker", i)
				require.Zero(t, n.HLen(ctx, "slotlock:{full}:claims").Val(), "node %d: claim", i)
				require.Zero(t, n.HLen(ctx, "slotlock:{full}:lives").Val(), "node %d: lease", i)
				if tc.joint {
					require.Zero(t, n.Exists(ctx, "slotlock:{full}:run").Val(), "node %d: job lease", i)
					require.Equal(t, "1", n.Get(ctx, "slotlock:{full}:last").Val(), "node %d: record", i)
				}
				require.NoError(t, n.ConfigSet(ctx, "maxmemory", "0").Err())
			}
			_, err = newCostLocker(t, c, "other").Claim(ctx, slot, 10*time.Second, opts...)
			requireHeld(t, err, true)
		})
	}
}
