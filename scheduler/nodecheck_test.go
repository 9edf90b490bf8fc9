package scheduler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// ident is a node read as server s with dataset d; replica names its
// primary ("" a primary).
func ident(s, d, primary string) locking.NodeIdentity {
	return locking.NodeIdentity{Read: true, Server: s, Dataset: d, Replica: primary != "", Primary: primary}
}

// identities addresses ids as n0, n1, ... in order.
func identities(ids ...locking.NodeIdentity) []locking.NodeIdentity {
	for i := range ids {
		ids[i].Addr = fmt.Sprintf("n%d", i)
	}
	return ids
}

// identityLocker is a Locker whose nodes' identities the test sets.
type identityLocker struct {
	locking.Locker
	stubReads[locking.NodeIdentity]
}

func (l *identityLocker) ReadIdentities(context.Context) ([]locking.NodeIdentity, error) {
	return l.read(), nil
}

// nodeCounts is a Metrics that keeps the node check's counts.
type nodeCounts struct {
	*countMetrics
	kept[int]
}

func (m *nodeCounts) NodesDependent(n int) { m.add(n) }

// TestNodeCheck: the replica asks the nodes at start and every
// nodeCheckEvery; it warns once per finding, says once when a reading of
// all its nodes no longer finds it, keeps a finding whose node did not
// answer, and exports each reading's count.
func TestNodeCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		down := locking.NodeIdentity{Err: fmt.Errorf("timeout")}
		il := &identityLocker{Locker: env.locker}
		m := &nodeCounts{countMetrics: env.metrics}
		s, err := New(Config{Replica: "r1", Locker: il, Logger: env.sink.logger("r1"), Metrics: m,
			Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
		if err != nil {
			t.Fatal(err)
		}
		steps := []readingStep[locking.NodeIdentity]{ // events as event:reason:index
			{identities(ident("a", "A", ""), ident("b", "B", ""), ident("c", "C", "")), nil},
			{identities(ident("a", "A", ""), ident("b", "B", ""), ident("c", "B", "n1")), // demoted under n1
				[]string{"lock.node_dependent:same_dataset:1", "lock.node_dependent:replica:2"}},
			{identities(ident("a", "A", ""), ident("b", "B", ""), ident("c", "B", "n1")), nil}, // once
			{identities(ident("a", "A", ""), ident("b", "B", ""), down), nil},                  // unread: kept
			{identities(ident("a", "A", ""), ident("b", "B", ""), ident("c", "C2", "")), // promoted
				[]string{"lock.node_independent:same_dataset:1", "lock.node_independent:replica:2"}},
		}
		il.set(steps[0].read)
		stop := running(t, s)
		defer stop()
		stepReadings(t, env, &il.stubReads, nodeCheckEvery, steps, func(e event) string {
			if ev := e.str("event"); ev == evNodeDependent || ev == evNodeIndependent {
				return fmt.Sprintf("%s:%s:%d", ev, e.str("reason"), int(e.num("index")))
			}
			return ""
		})
		stop()
		dep := where(env.sink.events(t), evNodeDependent)
		if dep[0].str("level") != "WARN" || dep[0].str("node") != "n1" || dep[0].str("other") != "n2" || dep[0].num("other_index") != 2 {
			t.Errorf("same_dataset line: %v", dep[0])
		}
		if dep[1].str("primary") != "n1" || dep[1].str("node") != "n2" {
			t.Errorf("replica line: %v", dep[1])
		}
		if back := where(env.sink.events(t), evNodeIndependent); back[0].str("level") != "INFO" {
			t.Errorf("lock.node_independent line: %v", back[0])
		}
		if fmt.Sprint(m.all()) != fmt.Sprint([]int{0, 1, 1, 0, 0}) {
			t.Fatalf("counts exported %v", m.all())
		}
	})
}

// Stores that cannot say who they are (the in-process store) are asked
// once.
func TestNodeCheckLocal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		il := &identityLocker{Locker: env.locker}
		il.set([]locking.NodeIdentity{{Addr: "sim"}})
		s, err := New(Config{Replica: "r1", Locker: il, Logger: env.sink.logger("r1"), Metrics: env.metrics,
			Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
		if err != nil {
			t.Fatal(err)
		}
		stop := running(t, s)
		time.Sleep(3 * nodeCheckEvery)
		stop()
		if il.count() != 1 {
			t.Fatalf("%d reads, want one", il.count())
		}
		if ids, err := env.locker.(locking.IdentityReader).ReadIdentities(context.Background()); err != nil || len(ids) != 0 {
			t.Fatalf("the in-process store read identities %v, %v", ids, err)
		}
	})
}
