package history

import (
	"context"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// The reconciler's reasons come from the fleet's records: a slot is
// no_replica only when no process had started by then and beaten after it,
// and no_quorum when a recorded outage covers it.
func TestFleetAliveAndDown(t *testing.T) {
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }
	f := Fleet{
		Replicas: []ReplicaInfo{
			{Instance: "a", Started: at(0), Seen: at(100), Beat: "10s"},
			{Instance: "b", Started: at(200), Seen: at(300), Beat: "10s"},
		},
		Outages: []Outage{{From: at(400), To: at(420)}},
	}
	for _, c := range []struct {
		sec         int
		alive, down bool
	}{
		{-1, false, false},
		{0, true, false},
		{100, true, false},
		{111, true, false},  // within a beat (and a second) of the last heartbeat
		{112, false, false}, // a live process would have beaten since
		{150, false, false},
		{200, true, false},
		{400, false, true},
		{425, false, true}, // within the slack
		{430, false, false},
	} {
		if got := f.AliveAt(at(c.sec)); got != c.alive {
			t.Errorf("aliveAt(%d) = %v, want %v", c.sec, got, c.alive)
		}
		if got := f.DownAt(at(c.sec), 5*time.Second); got != c.down {
			t.Errorf("downAt(%d) = %v, want %v", c.sec, got, c.down)
		}
	}
	if got := f.Alive(at(305)); len(got) != 1 || got[0].Instance != "b" {
		t.Errorf("Alive(305) = %v, want b", got)
	}
	if got := f.Alive(at(331)); len(got) != 0 {
		t.Errorf("Alive(331) = %v, want none (three beats passed)", got)
	}
}

// ReadAlive reads the heartbeats scored since or later, keeps each
// instance's newest, and answers Fleet.Alive of them; outages and older
// heartbeats are left out.
func TestReadAlive(t *testing.T) {
	ctx := context.Background()
	store := locking.NewLocal(locking.Options{})
	t.Cleanup(func() { _ = store.Close() })
	now := time.Unix(1_000_000, 0)
	beat := func(instance string, ago time.Duration) {
		ri := ReplicaInfo{Replica: "r-" + instance, Instance: instance, Beat: "10s"}
		if err := store.AppendLog(ctx, FleetFamily, ri.Append(now.Add(-ago))); err != nil {
			t.Fatal(err)
		}
	}
	beat("old", 5*time.Minute) // long gone
	beat("b", 25*time.Second)
	beat("b", 5*time.Second) // b's newest
	beat("c", 40*time.Second)
	o := Outage{Replica: "r-b", From: now.Add(-20 * time.Second), To: now.Add(-15 * time.Second)}
	if err := store.AppendLog(ctx, FleetFamily, o.Append(now.Add(-14*time.Second))); err != nil {
		t.Fatal(err)
	}
	alive, err := ReadAlive(ctx, store, now.Add(-30*time.Second), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(alive) != 1 || alive[0].Instance != "b" || !alive[0].Seen.Equal(now.Add(-5*time.Second)) {
		t.Fatalf("ReadAlive = %+v, want b seen 5s ago", alive)
	}
}

// A replica that stopped cleanly says so in its last heartbeat (Stopped):
// from then on it fires no slot, so a slot after it is no replica's —
// not unknown for the beat its heartbeat would otherwise still cover (the
// first slots after a clean stop of the whole fleet read missed/unknown,
// later ones no_replica).
func TestFleetAliveAtAfterACleanStop(t *testing.T) {
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }
	f := Fleet{Replicas: []ReplicaInfo{{Instance: "c", Started: at(0), Seen: at(100), Beat: "10s", Stopped: at(100)}}}
	for sec, want := range map[int]bool{99: true, 100: false, 105: false, 111: false} {
		if got := f.AliveAt(at(sec)); got != want {
			t.Errorf("AliveAt(%d) = %v, want %v", sec, got, want)
		}
	}
}

// A replica that stops within the second of its last regular heartbeat
// writes its Stopped heartbeat with the same score: the two then come in
// the order of their values, and the Stopped one sorts after. The readers
// still see the replica stopped.
func TestStoppedInTheSecondOfABeat(t *testing.T) {
	ctx := context.Background()
	store := locking.NewLocal(locking.Options{})
	t.Cleanup(func() { _ = store.Close() })
	now := time.Unix(1_000_000, 0)
	ri := ReplicaInfo{Replica: "r1", Instance: "a", Beat: "10s", Started: now.Add(-time.Minute)}
	if err := store.AppendLog(ctx, FleetFamily, ri.Append(now.Add(-2*time.Second))); err != nil {
		t.Fatal(err)
	}
	ri.Stopped = now.Add(-2 * time.Second).Add(300 * time.Millisecond)
	if err := store.AppendLog(ctx, FleetFamily, ri.Append(ri.Stopped)); err != nil {
		t.Fatal(err)
	}
	alive, err := ReadAlive(ctx, store, now.Add(-30*time.Second), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(alive) != 1 || !alive[0].Stopped.Equal(ri.Stopped) {
		t.Fatalf("ReadAlive = %+v, want r1 stopped at %v", alive, ri.Stopped)
	}
	f, err := ReadFleet(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Replicas) != 1 || !f.Replicas[0].Stopped.Equal(ri.Stopped) {
		t.Fatalf("ReadFleet replicas = %+v, want r1 stopped at %v", f.Replicas, ri.Stopped)
	}
}
