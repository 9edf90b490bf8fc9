package history

import (
	"testing"
	"time"
)

func TestClocks(t *testing.T) {
	ms := func(v int64) *int64 { return &v }
	replica := func(name string, clock *int64) ReplicaStatus {
		return ReplicaStatus{ReplicaInfo: ReplicaInfo{Replica: name, ClockOffsetMS: clock}}
	}
	for _, c := range []struct {
		name       string
		replicas   []ReplicaStatus
		fast, slow string
		apart      time.Duration
	}{
		{"none known", []ReplicaStatus{replica("a", nil), replica("b", nil)}, "", "", 0},
		{"one known", []ReplicaStatus{replica("a", ms(900)), replica("b", nil)}, "", "", 0},
		{"fastest and slowest", []ReplicaStatus{replica("a", ms(-800)), replica("b", ms(5)), replica("c", ms(1700))}, "c", "a", 2500 * time.Millisecond},
		{"alike", []ReplicaStatus{replica("a", ms(3)), replica("b", ms(3))}, "", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			fast, slow, apart := Status{Replicas: c.replicas}.ClocksApart()
			if fast != c.fast || slow != c.slow || apart != c.apart {
				t.Fatalf("ClocksApart = %q, %q, %v; want %q, %q, %v", fast, slow, apart, c.fast, c.slow, c.apart)
			}
		})
	}
	for clock, want := range map[*int64]string{nil: "-", ms(250): "+0.250s", ms(-40): "-0.040s", ms(0): "+0.000s", ms(2500): "+2.500s"} {
		if got := (ReplicaInfo{ClockOffsetMS: clock}).ClockText(); got != want {
			t.Errorf("ClockText(%v) = %q, want %q", clock, got, want)
		}
	}
}
