package scheduler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// nodeClocks builds a reading: each offset a node's clock minus ours,
// read with uncertainty unc; a negative unc is a node that did not
// answer.
func nodeClocks(unc time.Duration, offsets ...time.Duration) []locking.NodeClock {
	out := make([]locking.NodeClock, len(offsets))
	for i, o := range offsets {
		out[i] = locking.NodeClock{Addr: fmt.Sprintf("n%d", i), Read: unc >= 0, Offset: o, Uncertainty: max(unc, 0)}
	}
	return out
}

func TestReadingOf(t *testing.T) {
	ms := time.Millisecond
	unread := locking.NodeClock{Addr: "down"}
	cases := []struct {
		name   string
		clocks []locking.NodeClock
		ok     bool
		want   clockReading
	}{
		{"all agree", nodeClocks(ms, 0, 0, 0), true, clockReading{0, ms, 3}},
		{"replica ahead: nodes read behind", nodeClocks(ms, -1500*ms, -1490*ms, -1510*ms), true, clockReading{1500 * ms, ms, 3}},
		{"one node stepped is outvoted", nodeClocks(ms, 60*time.Second, 2*ms, 3*ms), true, clockReading{-3 * ms, ms, 3}},
		{"even count: mean of the middle two", nodeClocks(ms, 0, 10*ms, 20*ms, 900*ms), true, clockReading{-15 * ms, ms, 4}},
		{"a majority read", append(nodeClocks(ms, 100*ms, 300*ms), unread), true, clockReading{-200 * ms, ms, 2}},
		{"two read of three, one stepped: no majority agrees", append(nodeClocks(ms, 0, 60*time.Second), unread), false, clockReading{}},
		{"three read, all apart", nodeClocks(ms, -5*time.Second, 0, 5*time.Second), false, clockReading{}},
		{"too few read", append(nodeClocks(ms, 100*ms), unread, unread), false, clockReading{}},
		{"nothing read", nil, false, clockReading{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := readingOf(c.clocks, time.Second)
			if ok != c.ok || got != c.want {
				t.Fatalf("readingOf = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
	// The larger uncertainty of the two in the middle.
	clocks := nodeClocks(ms, 0, 10*ms)
	clocks[1].Uncertainty = 7 * ms
	if got, _ := readingOf(clocks, time.Second); got.uncertainty != 7*ms {
		t.Fatalf("uncertainty %v, want the larger of the middle two", got.uncertainty)
	}
}

// clockLocker is a Locker whose nodes' clocks the test sets.
type clockLocker struct {
	locking.Locker
	stubReads[locking.NodeClock]
}

func (c *clockLocker) ReadClocks(context.Context) ([]locking.NodeClock, error) { return c.read(), nil }

// clockReadings is a Metrics that keeps the clock check's readings.
type clockReadings struct {
	*countMetrics
	kept[time.Duration]
}

func (m *clockReadings) ClockOffset(d time.Duration) { m.add(d) }

// TestClockCheck: the replica reads the nodes' clocks at start and every
// clockCheckEvery; it warns once when its clock is off by more than half
// of MaxClockSkew beyond the reading's uncertainty, says once when it is
// back within, and neither while the reading is too uncertain to tell or
// a minority was read (no metric either then). Every judged reading is
// exported. A node whose clock is off from the others' is named, once
// each way.
func TestClockCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		ms := time.Millisecond
		cl := &clockLocker{Locker: env.locker}
		m := &clockReadings{countMetrics: env.metrics}
		s, err := New(Config{Replica: "r1", Locker: cl, Logger: env.sink.logger("r1"), Metrics: m,
			LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second,
			Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
		if err != nil {
			t.Fatal(err)
		}
		steps := []readingStep[locking.NodeClock]{
			{nodeClocks(ms, 200*ms, 210*ms, 190*ms), nil},                                                 // 0.2 s behind: within 1 s
			{nodeClocks(ms, -1500*ms, -1500*ms, 60*time.Second), []string{"clock.off", "clock.node_off"}}, // 1.5 s ahead; n2 stepped
			{nodeClocks(ms, -1200*ms, -1200*ms, -1200*ms), []string{"clock.node_back"}},                   // still off; n2 back
			{nodeClocks(300*ms, -900*ms, -900*ms, -900*ms), nil},                                          // 0.9 ± 0.3 s: cannot tell
			{append(nodeClocks(ms, 0), locking.NodeClock{}, locking.NodeClock{}), nil},                    // a minority read
			{nodeClocks(ms, -400*ms, -400*ms, -400*ms), []string{"clock.back"}},
			{nodeClocks(ms, 1100*ms, 1100*ms, 1100*ms), []string{"clock.off"}}, // 1.1 s behind
		}
		cl.set(steps[0].read)
		stop := running(t, s)
		defer stop()
		stepReadings(t, env, &cl.stubReads, clockCheckEvery, steps, func(e event) string {
			switch ev := e.str("event"); ev {
			case evClockOff, evClockBack, evClockNodeOff, evClockNodeBack:
				return ev
			}
			return ""
		})
		stop()
		off := where(env.sink.events(t), evClockOff)
		if off[0].str("level") != "WARN" || off[0].num("offset_ms") != 1500 || off[0].str("max_clock_skew") != "2s" {
			t.Errorf("first clock.off line: %v", off[0])
		}
		if back := where(env.sink.events(t), evClockBack); back[0].str("level") != "INFO" || back[0].num("offset_ms") != 400 {
			t.Errorf("clock.back line: %v", back[0])
		}
		if n := where(env.sink.events(t), evClockNodeOff); n[0].str("node") != "n2" || n[0].num("index") != 2 ||
			n[0].num("offset_ms") != 61500 || n[0].str("level") != "WARN" {
			t.Errorf("clock.node_off line: %v", n[0])
		}
		want := []time.Duration{-200 * ms, 1500 * ms, 1200 * ms, 900 * ms, 400 * ms, -1100 * ms}
		readings := m.all()
		if len(readings) != len(want) {
			t.Fatalf("readings exported %v, want %v (none for the minority read)", readings, want)
		}
		for i := range want {
			if readings[i] != want[i] {
				t.Fatalf("readings exported %v, want %v", readings, want)
			}
		}
	})
}

// With in-process locks there is no clock but this process's: the check
// reads once, finds nothing, and ends.
func TestClockCheckLocal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		if newClockCheck(testEngine(t, Config{Locker: env.locker, Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})) == nil {
			t.Fatal("the in-process Locker is no ClockReader: no check")
		}
		cl := &clockLocker{Locker: env.locker} // reads what the in-process store reads: nothing
		m := &clockReadings{countMetrics: env.metrics}
		s, err := New(Config{Replica: "r1", Locker: cl, Logger: env.sink.logger("r1"), Metrics: m,
			Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
		if err != nil {
			t.Fatal(err)
		}
		stop := running(t, s)
		time.Sleep(3 * clockCheckEvery)
		stop()
		if cl.count() != 1 || len(m.all()) != 0 {
			t.Fatalf("%d reads, readings %v; want one read, none exported", cl.count(), m.all())
		}
		if clocks, err := env.locker.(locking.ClockReader).ReadClocks(context.Background()); err != nil || len(clocks) != 0 {
			t.Fatalf("the in-process store read clocks %v, %v", clocks, err)
		}
	})
}
