package history

import (
	"testing"
	"time"
)

// A write's writer is the latest process of its replica started by then;
// it lived on when it beat a second after the write (scores are whole
// seconds), may still beat while counted alive, and is silent after that.
func TestAfterWrite(t *testing.T) {
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return start.Add(time.Duration(sec * float64(time.Second))) }
	f := Fleet{Replicas: []ReplicaInfo{
		{Replica: "r1", Instance: "new", Started: at(200), Seen: at(300), Beat: "10s"},
		{Replica: "r1", Instance: "old", Started: at(0), Seen: at(100), Beat: "10s"},
		{Replica: "r2", Instance: "x", Started: at(0), Seen: at(500), Beat: "10s"},
	}}
	for _, c := range []struct {
		name    string
		replica string
		w, now  float64
		want    AfterWrite
	}{
		{"beat long after", "r1", 50, 400, WriterBeatOn},
		{"beat a second after", "r1", 99, 400, WriterBeatOn},
		{"beat within the write's second", "r1", 99.5, 400, WriterSilent},
		{"last beat before the write, dead", "r1", 100.2, 400, WriterSilent},
		{"last beat before the write, alive still", "r1", 100.2, 129, WriterMayBeat},
		{"three beats after: dead", "r1", 100.2, 131, WriterSilent},
		{"the restarted process's write", "r1", 250, 400, WriterBeatOn},
		{"written before any process started", "r1", -5, 400, WriterUnseen},
		{"another replica", "r3", 50, 400, WriterUnseen},
		{"a live replica's fresh write", "r2", 499.7, 505, WriterMayBeat},
	} {
		if got := f.AfterWrite(c.replica, at(c.w), at(c.now)); got != c.want {
			t.Errorf("%s: AfterWrite(%s, %v, %v) = %v, want %v", c.name, c.replica, c.w, c.now, got, c.want)
		}
	}
}
