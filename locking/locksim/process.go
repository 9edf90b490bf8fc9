package locksim

import (
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// One replica process as the network sees it: its Gate (alive, paused,
// dead) and its Clock, which stops with it.

// Gate is the life of one replica process: alive, paused (every request,
// answer and clock reading waits until it resumes) or dead (it sends
// nothing more). A restarted replica gets a new Gate.
type Gate struct {
	epoch  int
	seq    *Net // Net.NewGate: an ordered network wakes the waiters one by one
	mu     sync.Mutex
	dead   bool
	paused chan struct{} // non-nil while paused; closed on resume
	// waiters wait for the resume, in the order they came (on a gate of
	// an ordered network).
	waiters []chan struct{}
}

// NewGate returns the gate of a live process; epoch tells restarts of one
// replica apart (it seeds the links).
func NewGate(epoch int) *Gate { return &Gate{epoch: epoch} }

// NewGate is NewGate on an ordered network (SetOrdered): when the process
// resumes or dies, the goroutines it held go on one at a time, each until
// it blocks (ordered.go), in the order they stopped — not all at once, in
// an order the Go scheduler picks (a run that ended during the pause and
// the watchdog that finds its lease lost race otherwise).
func (n *Net) NewGate(epoch int) *Gate { return &Gate{epoch: epoch, seq: n} }

// Wait blocks while the process is paused and reports whether it is
// alive.
func (g *Gate) Wait() bool {
	g.mu.Lock()
	p, dead := g.paused, g.dead
	if p != nil && g.seq != nil && g.seq.isOrdered() {
		p = make(chan struct{})
		g.waiters = append(g.waiters, p)
	}
	g.mu.Unlock()
	if p != nil {
		<-p
		g.mu.Lock()
		dead = g.dead
		g.mu.Unlock()
	}
	return !dead
}

// Alive reports whether the process has not died (paused counts as alive).
func (g *Gate) Alive() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.dead
}

// Paused reports whether the process is paused now.
func (g *Gate) Paused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paused != nil
}

// Pause freezes the process; Resume lets it go on.
func (g *Gate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused == nil && !g.dead {
		g.paused = make(chan struct{})
	}
}

// Resume ends a pause.
func (g *Gate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
}

// Kill ends the process: from now on it sends nothing; a pause ends.
func (g *Gate) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dead = true
	g.releaseLocked()
}

// releaseLocked ends a pause: its waiters go on, at once or through the
// ordered network's dispatcher. g.mu is held.
func (g *Gate) releaseLocked() {
	if g.paused == nil {
		return
	}
	close(g.paused)
	g.paused = nil
	if len(g.waiters) > 0 {
		g.seq.wakeAll(g.waiters)
		g.waiters = nil
	}
}

// Clock is a replica's clock: the process clock plus an offset, frozen
// while the process is paused (a reading waits for the resume, as a
// paused process reads nothing).
type Clock struct {
	Gate   *Gate
	mu     sync.Mutex
	offset time.Duration
}

// SetOffset sets the clock's offset from the process clock.
func (c *Clock) SetOffset(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = d
}

// Now waits out a pause and returns the offset time.
func (c *Clock) Now() time.Time {
	c.Gate.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// NewTimer returns a timer on the process clock.
func (c *Clock) NewTimer(d time.Duration) locking.Timer { return &timer{time.NewTimer(d)} }

type timer struct{ t *time.Timer }

func (t *timer) C() <-chan time.Time        { return t.t.C }
func (t *timer) Stop() bool                 { return t.t.Stop() }
func (t *timer) Reset(d time.Duration) bool { return t.t.Reset(d) }
