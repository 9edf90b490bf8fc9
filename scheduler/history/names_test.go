package history

import (
	"fmt"
	"testing"
	"time"
)

func TestNameShared(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	s := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	proc := func(name, instance string, started, seen int) ReplicaInfo {
		return ReplicaInfo{Replica: name, Instance: instance, Started: s(started), Seen: s(seen), Beat: "10s"}
	}
	cases := []struct {
		name string
		a, b ReplicaInfo
		want bool
	}{
		{"two processes beating at once", proc("r1", "a", 0, 100), proc("r1", "b", 30, 100), true},
		{"a restart: the first beat last before the second started", proc("r1", "a", 0, 29), proc("r1", "b", 30, 100), false},
		{"a restart on another host, its clock 2s ahead", proc("r1", "a", 0, 32), proc("r1", "b", 30, 100), false},
		{"the second just started: not yet a beat", proc("r1", "a", 0, 100), proc("r1", "b", 95, 100), false},
		{"the first beat on a beat after the second started", proc("r1", "a", 0, 41), proc("r1", "b", 30, 100), true},
		{"one process's two heartbeats", proc("r1", "a", 0, 100), proc("r1", "a", 0, 90), false},
		{"two names", proc("r1", "a", 0, 100), proc("r2", "b", 30, 100), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NameShared(c.a, c.b); got != c.want {
				t.Fatalf("NameShared = %v, want %v", got, c.want)
			}
			if got := NameShared(c.b, c.a); got != c.want {
				t.Fatalf("NameShared reversed = %v, want %v", got, c.want)
			}
		})
	}
}

// SharedNames lists a name once with every process that shares it with
// another, and leaves out a restarted replica's earlier process.
func TestSharedNames(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	rs := func(name, instance string, started, seen int) ReplicaStatus {
		r := ReplicaStatus{ReplicaInfo: ReplicaInfo{Replica: name, Instance: instance, Beat: "10s",
			Started: t0.Add(time.Duration(started) * time.Second)}}
		r.Seen = t0.Add(time.Duration(seen) * time.Second)
		return r
	}
	st := Status{Replicas: []ReplicaStatus{
		rs("r1", "a", 0, 100), rs("r1", "b", 30, 100), rs("r1", "old", -60, -1),
		rs("r2", "c", 0, 100), rs("r3", "d", 50, 100), rs("r3", "e", 0, 49),
	}}
	if got := fmt.Sprint(st.SharedNames()); got != "[{r1 [a b]}]" {
		t.Fatalf("SharedNames = %s, want r1's a and b only", got)
	}
}
