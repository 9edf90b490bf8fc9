//go:build linux

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// nodeFault is one fault on one Redis node in a scenario: when it lasted
// and how many commands the node processed meanwhile.
type nodeFault struct {
	node        *redistest.Node
	from, until time.Time
	before      int64
	executed    int64
}

func (f *nodeFault) begin() { f.from, f.before = time.Now(), commandsProcessed(f.node) }

func (f *nodeFault) end() {
	f.until = time.Now()
	f.executed = commandsProcessed(f.node) - f.before
}

// requireSeen fails unless some replica logged the node unreachable
// while the fault lasted (the replicas' first call to it after the fault
// began counts it failed; a healthy node's calls never do), and when one
// logged it more than once: the node was never back in between (a write
// paused node answering reads used to be logged back after each).
func (f *nodeFault) requireSeen(t *testing.T, evs []Event, what string) {
	t.Helper()
	seen := f.unreachable(evs)
	by := map[string]int{}
	for _, e := range seen {
		by[e.Replica]++
	}
	for r, n := range by {
		if n > 1 {
			t.Errorf("%s on node 2: %s logged it unreachable %d times, want once (it flapped)", what, r, n)
		}
	}
	if len(seen) > 0 {
		t.Logf("%s on node 2 (%s..%s): logged unreachable %d time(s)", what, stamp(f.from), stamp(f.until), len(seen))
		return
	}
	t.Errorf("%s on node 2 (%s..%s): no replica logged it unreachable", what, stamp(f.from), stamp(f.until))
}

// requireUnseen fails when a replica logged the node unreachable while
// the fault lasted: one the node answers in full (a lost script cache is
// answered NOSCRIPT, and the call sent again with the script's source) is
// no fault of the node's.
func (f *nodeFault) requireUnseen(t *testing.T, evs []Event, what string) {
	t.Helper()
	for _, e := range f.unreachable(evs) {
		t.Errorf("%s on node 2 (%s..%s): %s logged it unreachable at %s", what, stamp(f.from), stamp(f.until), e.Replica, stamp(e.Time))
	}
}

// unreachable is the "redis node unreachable" lines of evs logged while
// the fault lasted.
func (f *nodeFault) unreachable(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if e.Msg == "locking: redis node unreachable" && !e.Time.Before(f.from) && !e.Time.After(f.until) {
			out = append(out, e)
		}
	}
	return out
}

// commandsProcessed is the node's total_commands_processed (INFO stats),
// or -1 when it cannot be read.
func commandsProcessed(n *redistest.Node) int64 {
	return infoInt(n, "stats", "total_commands_processed:")
}

// infoInt is the number after prefix on a line of the node's INFO section
// (up to a comma, as in commandstats' calls=N,usec=…): 0 when no line has
// it, -1 when INFO cannot be read.
func infoInt(n *redistest.Node, section, prefix string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := n.Client().Info(ctx, section).Result()
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			v, _, _ = strings.Cut(v, ",")
			x, _ := strconv.ParseInt(v, 10, 64)
			return x
		}
	}
	return 0
}

// setMaxmemory sets the node's maxmemory (noeviction, Redis's default
// policy): "1" makes it refuse every write with an OOM error while it
// answers reads, as a node whose memory is full does; "0" lifts it.
func setMaxmemory(t *testing.T, n *redistest.Node, v string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := n.Client().ConfigSet(ctx, "maxmemory", v).Err(); err != nil {
		t.Fatalf("node maxmemory %s: %v", v, err)
	}
}

// flushScripts empties the node's script cache (SCRIPT FLUSH), as an
// operator does, or a failover to a node that never loaded the scripts.
func flushScripts(t *testing.T, n *redistest.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := n.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatalf("node script flush: %v", err)
	}
}

// evalCalls is how many EVAL calls (scripts sent with their source) the
// node has run, or -1 when it cannot be read.
func evalCalls(n *redistest.Node) int64 { return infoInt(n, "commandstats", "cmdstat_eval:calls=") }
