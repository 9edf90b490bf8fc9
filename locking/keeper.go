package locking

import (
	"container/heap"
	"sync"
	"time"
)

// The keeper: leases kept (Keep) wait here for their first renewal,
// without a goroutine or a timer of their own. Most leases end before it
// is due — a run shorter than a second never renews — and then only leave
// the heap; a burst of a thousand runs costs one goroutine and one timer,
// not a thousand of each. That goroutine, one per locker, waits for the
// earliest first renewal and starts that lease's watchdog (watch) at its
// time: from then on the lease is watched as before, on its own
// goroutine. It ends as soon as nothing waits, and is started again by
// the next Keep: a locker at rest holds no goroutine (nor does a test's
// fake-time bubble keep one blocked), and a burst's leases share one.
// Nothing is done under the keeper's lock that can wait (a clock, a
// timer, a lease's own lock): the simulation's clock blocks while its
// process is frozen, and an End behind such a read stopped fake time.
type keeper struct {
	clock   Clock
	mu      sync.Mutex
	pending keepHeap
	seq     uint64        // ties of due times go in the order the leases were kept
	wake    chan struct{} // the earliest due time changed, or the locker closes
	running bool          // the goroutine runs
	closed  bool
	wg      sync.WaitGroup // the goroutine
}

// keepEntry is a lease waiting for its first renewal.
type keepEntry struct {
	ls    *Lease
	due   time.Time
	seq   uint64
	index int
}

func newKeeper(clock Clock) *keeper {
	return &keeper{clock: clock, wake: make(chan struct{}, 1)}
}

// add has ls's watchdog start at due. A lease already ended (drop) is not
// added; after Close the watchdog starts at once, as the keeper no longer
// runs.
func (k *keeper) add(ls *Lease, due time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ls.keepDone {
		return
	}
	if k.closed {
		ls.keepDone = true
		ls.wg.Add(1)
		go ls.watch()
		return
	}
	k.seq++
	e := &keepEntry{ls: ls, due: due, seq: k.seq}
	ls.keepEntry = e
	heap.Push(&k.pending, e)
	if !k.running {
		k.running = true
		k.wg.Add(1)
		go k.loop()
	}
	if e.index == 0 {
		k.signal()
	}
}

// sooner moves ls's first renewal to due if it is still waiting and due is
// earlier; it reports whether it was waiting (else its watchdog runs, or
// the lease is not kept).
func (k *keeper) sooner(ls *Lease, due time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := ls.keepEntry
	if e == nil {
		return false
	}
	if due.Before(e.due) {
		e.due = due
		heap.Fix(&k.pending, e.index)
		if e.index == 0 {
			k.signal()
		}
	}
	return true
}

// drop takes ls out for good (its owner ended it): it reports whether it
// was still waiting, so that no watchdog of it ever started.
func (k *keeper) drop(ls *Lease) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	ls.keepDone = true
	e := ls.keepEntry
	if e == nil {
		return false
	}
	heap.Remove(&k.pending, e.index)
	ls.keepEntry = nil
	if len(k.pending) == 0 {
		// Nothing left to wait for: the goroutine ends now, not at the
		// due time it waits for. (An earlier lease gone, it wakes then and
		// waits for the next: one wake, not one per lease ended.)
		k.signal()
	}
	return true
}

// close stops the goroutine, which first starts the watchdog of every
// lease still waiting: those leases are renewed (and fail to be, the
// stores closed) as they were before the locker closed.
func (k *keeper) close() {
	k.mu.Lock()
	k.closed = true
	k.signal()
	k.mu.Unlock()
	k.wg.Wait()
}

func (k *keeper) signal() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// loop starts each waiting lease's watchdog at its due time, until
// nothing waits or the locker closes.
func (k *keeper) loop() {
	defer k.wg.Done()
	var timer Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		wait, closed := k.startDue()
		if closed || (wait < 0 && k.retire()) {
			return
		}
		if wait < 0 {
			continue // a lease came in meanwhile
		}
		if timer == nil {
			timer = k.clock.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-k.wake:
			if !timer.Stop() {
				select {
				case <-timer.C():
				default:
				}
			}
		case <-timer.C():
		}
	}
}

// retire ends the goroutine's turn if nothing waits yet; an add after it
// starts another.
func (k *keeper) retire() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pending) > 0 || k.closed {
		return false
	}
	k.running = false
	return true
}

// startDue starts the watchdogs that are due (all of them once the
// locker is closed) and returns the wait until the next one, -1 when none
// waits.
func (k *keeper) startDue() (wait time.Duration, closed bool) {
	// The clock is read before the lock: a fake clock may block (the
	// simulation's, while its process is frozen), and End must not wait
	// for it behind the lock.
	now := k.clock.Now()
	k.mu.Lock()
	var due []*Lease
	for len(k.pending) > 0 && (k.closed || !k.pending[0].due.After(now)) {
		e := heap.Pop(&k.pending).(*keepEntry)
		e.ls.keepEntry, e.ls.keepDone = nil, true
		e.ls.wg.Add(1) // before drop can see it gone: End then waits for it
		due = append(due, e.ls)
	}
	wait, closed = -1, k.closed
	if len(k.pending) > 0 {
		wait = k.pending[0].due.Sub(now)
	}
	k.mu.Unlock()
	for _, ls := range due {
		go ls.watch()
	}
	return wait, closed
}

// keepHeap orders waiting leases by due time, then by when they were kept.
type keepHeap []*keepEntry

func (h keepHeap) Len() int { return len(h) }

func (h keepHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}

func (h keepHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *keepHeap) Push(x any) {
	e := x.(*keepEntry)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *keepHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}
