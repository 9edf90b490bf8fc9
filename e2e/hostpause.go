//go:build linux

package e2e

import (
	"fmt"
	"sync"
	"time"
)

// Host pauses. A VM snapshot, a live migration or a host starved of CPU
// for seconds stops every process at once: each replica, each Redis node
// and the harness. Every replica paused past the lateness bound is outside
// the documented conditions ("at the slot's time at least one replica is
// up and not paused longer than the lateness bound", docs/guarantees.md):
// the slots due meanwhile are skipped late, and an every-second job's slots
// that fall due together when it ends are claimed together. The harness
// sees such a pause as a gap between the ticks of a goroutine of its own,
// and a scenario's checker treats one longer than its lateness bound as a
// fault no scenario injected: a fault window, and a freeze of every
// replica (Cluster.Input). A CI run on this host saw one: no line from any
// process for 4.4 s, and the kernel's "virtual machine fork" at its end.

// hostPauseTick is how often the watcher looks at the clock; a gap of
// more than hostPauseGap between two looks is recorded.
const (
	hostPauseTick = 20 * time.Millisecond
	hostPauseGap  = 500 * time.Millisecond
)

// hostPause is a span in which the harness did not run.
type hostPause struct{ From, To time.Time }

func (p hostPause) String() string {
	return fmt.Sprintf("the host paused %s..%s (%v: every process stopped — a VM snapshot or a starved host)",
		stamp(p.From), stamp(p.To), p.To.Sub(p.From).Round(time.Millisecond))
}

var hostWatch struct {
	mu     sync.Mutex
	pauses []hostPause
}

// watchHost starts the watcher; stop ends it.
func watchHost() (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(hostPauseTick)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			now := time.Now()
			// The monotonic clock may not count a VM's pause where the
			// wall clock, set again on resuming, does: the larger gap.
			gap := max(now.Sub(last), now.Round(0).Sub(last.Round(0)))
			if gap > hostPauseGap {
				hostWatch.mu.Lock()
				hostWatch.pauses = append(hostWatch.pauses, hostPause{From: now.Add(-gap), To: now})
				hostWatch.mu.Unlock()
			}
			last = now
		}
	}()
	return func() { close(quit); <-done }
}

// hostPauses are the recorded pauses longer than longer that overlap
// [from, to].
func hostPauses(from, to time.Time, longer time.Duration) []hostPause {
	hostWatch.mu.Lock()
	defer hostWatch.mu.Unlock()
	var out []hostPause
	for _, p := range hostWatch.pauses {
		if p.To.Sub(p.From) > longer && p.To.After(from) && p.From.Before(to) {
			out = append(out, p)
		}
	}
	return out
}
