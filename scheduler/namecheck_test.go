package scheduler

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestNameCheck: a replica restarted under its name warns of nothing; two
// processes of one name at once warn once each, naming the other; a
// replica of another name beside them is never named.
func TestNameCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		start := func(name string) (*Scheduler, func()) {
			s, err := New(Config{Replica: name, Locker: env.locker, Logger: env.sink.logger(name), Metrics: env.metrics,
				Beat: time.Second, Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
			if err != nil {
				t.Fatal(err)
			}
			return s, running(t, s)
		}
		shared := func() []event { return where(env.sink.events(t), evReplicaNameShared) }

		_, stopOther := start("r2")
		defer stopOther()
		_, stop1 := start("r1")
		time.Sleep(5 * time.Second)
		stop1() // a restart: the next process of r1 starts after this one ended
		s2, stop2 := start("r1")
		defer stop2()
		time.Sleep(10 * time.Second)
		if got := shared(); len(got) != 0 {
			env.sink.dump(t)
			t.Fatalf("a restart warned of a shared name: %v", got)
		}

		s3, stop3 := start("r1")
		defer stop3()
		time.Sleep(10 * time.Second)
		got := shared()
		if len(got) != 2 {
			env.sink.dump(t)
			t.Fatalf("%d %s lines with two processes of r1 at once, want one each", len(got), evReplicaNameShared)
		}
		pair := map[string]string{got[0].str("instance"): got[0].str("other_instance"),
			got[1].str("instance"): got[1].str("other_instance")}
		i2, i3 := s2.fleet.instance, s3.fleet.instance
		if pair[i2] != i3 || pair[i3] != i2 || got[0].str("level") != "WARN" || got[0].str("other_started") == "" {
			t.Fatalf("lines %v; want r1's processes %s and %s to name each other", got, i2, i3)
		}
		time.Sleep(10 * time.Second)
		if n := len(shared()); n != 2 {
			t.Fatalf("%d lines after ten more beats, want the two (once per process)", n)
		}
	})
}
