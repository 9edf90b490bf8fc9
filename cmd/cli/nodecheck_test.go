package cli_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A replica whose redis.nodes list one server twice (a second address:
// here a proxy, as a DNS alias or a load balancer is) and a replica
// beside its own primary says so at start, naming the entries. Of the
// five entries, two refuse every claim (the server's second address finds
// the claim its first took; the replica refuses writes): the other three
// are still a majority, and the every-second job runs. `slotlock status`
// reads the nodes too and shows the same findings, in text and JSON.
func TestNodeCheckLines(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 4)
	alias, err := redistest.NewProxy(nodes.Node(0).Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = alias.Close() })
	require.NoError(t, nodes.Node(3).ReplicaOf(nodes.Node(1).Addr()))
	addrs := append(nodes.Addrs()[:3], alias.Addr(), nodes.Node(3).Addr())
	cfg := writeConfig(t, fleetYAML(addrs)+`
jobs:
  - name: tick
    schedule: "* * * * * *"
    plugin: log
    params: {message: tick}
`)
	r := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 15*time.Second, "the node check's lines", func() bool { return len(r.events("lock.node_dependent")) == 3 })
	waitFor(t, 15*time.Second, "a run", func() bool { return len(r.events("run.succeeded")) >= 2 })
	r.stop(t, 30*time.Second)

	var got []string
	for _, e := range r.events("lock.node_dependent") {
		require.Equal(t, "WARN", e["level"], e)
		line := fmt.Sprintf("%s %v %v", e["reason"], e["node"], e["index"])
		if other, ok := e["other"]; ok {
			line += fmt.Sprintf(" %v %v", other, e["other_index"])
		}
		if p, ok := e["primary"]; ok {
			line += fmt.Sprintf(" of %v", p)
		}
		got = append(got, line)
	}
	require.Equal(t, []string{
		fmt.Sprintf("same_server %s 0 %s 3", addrs[0], addrs[3]),
		fmt.Sprintf("same_dataset %s 1 %s 4", addrs[1], addrs[4]),
		fmt.Sprintf("replica %s 4 of %s", addrs[4], addrs[1]),
	}, got)
	require.Empty(t, r.events("lock.node_independent"))

	out, errOut, code := slotlock(t, nil, "status", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		Nodes []history.NodeStatus `json:"nodes_dependent"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	three, four := 3, 4
	require.Equal(t, []history.NodeStatus{
		{Reason: "same_server", Node: addrs[0], Index: 0, Other: addrs[3], OtherIndex: &three},
		{Reason: "same_dataset", Node: addrs[1], Index: 1, Other: addrs[4], OtherIndex: &four},
		{Reason: "replica", Node: addrs[4], Index: 4, Primary: addrs[1]},
	}, st.Nodes, out)

	out, errOut, code = slotlock(t, nil, "status", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf("nodes: redis.nodes[0] %s and [3] %s are one server", addrs[0], addrs[3]))
	require.Contains(t, out, fmt.Sprintf("nodes: redis.nodes[1] %s and [4] %s replicate one dataset", addrs[1], addrs[4]))
	require.Contains(t, out, fmt.Sprintf("nodes: redis.nodes[4] %s is a read-only replica of %s:", addrs[4], addrs[1]))
}

// A replica on two nodes says at start that it tolerates none down (a
// lock needs both), and so does `slotlock status` with that
// configuration; on three neither says anything.
func TestNodeCountLine(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	job := `
jobs:
  - name: tick
    schedule: "* * * * * *"
    plugin: log
    params: {message: tick}
`
	twoCfg, threeCfg := writeConfig(t, fleetYAML(nodes.Addrs()[:2])+job), writeConfig(t, fleetYAML(nodes.Addrs())+job)
	two := startReplica(t, twoCfg, "SLOTLOCK_REPLICA=two")
	three := startReplica(t, threeCfg, "SLOTLOCK_REPLICA=three")
	waitFor(t, 15*time.Second, "the two-node replica's line, a run of the three-node one", func() bool {
		return len(two.events("lock.node_count")) > 0 && len(three.events("run.succeeded")) > 0
	})
	two.stop(t, 30*time.Second)
	three.stop(t, 30*time.Second)
	lines := two.events("lock.node_count")
	require.Len(t, lines, 1)
	require.Equal(t, "WARN", lines[0]["level"])
	require.EqualValues(t, 2, lines[0]["nodes"])
	require.EqualValues(t, 0, lines[0]["tolerates"])
	require.Empty(t, three.events("lock.node_count"))

	out, errOut, code := slotlock(t, nil, "status", "--config", twoCfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "nodes: two Redis nodes: a lock needs a majority of them, both")
	out, errOut, code = slotlock(t, nil, "status", "--config", threeCfg)
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out, "nodes:")
}
