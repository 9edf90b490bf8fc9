package cli_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
)

// Two replicas started with one name — as two `slotlock run` on one host
// both take the host name — run every slot once (a lease is its random
// token), and each says, once, that another process runs under its name;
// `slotlock status` says so too.
func TestReplicaNameShared(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	cfg := writeConfig(t, fleetYAML(nodes.Addrs())+`
jobs:
  - name: tick
    schedule: "* * * * * *"
    plugin: log
    params: {message: tick}
`)
	a := startReplica(t, cfg, "SLOTLOCK_REPLICA=twin")
	b := startReplica(t, cfg, "SLOTLOCK_REPLICA=twin")
	shared := func(r *replicaProc) int { return len(r.events("replica.name_shared")) }
	waitFor(t, 45*time.Second, "both processes' replica.name_shared", func() bool { return shared(a) == 1 && shared(b) == 1 })
	ea, eb := a.events("replica.name_shared")[0], b.events("replica.name_shared")[0]
	require.Equal(t, "WARN", ea["level"], ea)
	require.Equal(t, ea["instance"], eb["other_instance"], "each names the other")
	require.Equal(t, eb["instance"], ea["other_instance"], "each names the other")

	out, errOut, code := slotlock(t, nil, "status", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "replicas: twin is the name of 2 processes alive at once (instances ")

	a.stop(t, 30*time.Second)
	b.stop(t, 30*time.Second)
	slots := map[any]int{}
	for _, r := range []*replicaProc{a, b} {
		for _, e := range r.events("run.started") {
			slots[e["slot"]]++
		}
	}
	require.NotEmpty(t, slots)
	for slot, n := range slots {
		require.Equal(t, 1, n, "slot %v ran %d times", slot, n)
	}
}
