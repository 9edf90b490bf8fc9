package locksim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing/synctest"
	"time"
)

// An ordered network (SetOrdered) applies the requests that reach the
// stores at one virtual instant in an order drawn from the seed and the
// instant, not in the order their goroutines happened to run: a
// dispatcher, started by the first request of an instant, waits until
// every other goroutine of the synctest bubble is durably blocked (every
// request of the instant has arrived, every fault of the instant is in
// place), then sorts the requests by their sender and content, shuffles
// them with the instant's draws, and applies them one by one — a store
// down refuses, a frozen one queues. Stores thawed at the instant run
// their queues first, in the same way. A replay of a seed then gives each
// store the same requests in the same order. Requests that cannot be told
// apart (the same content from the same process at the same instant) keep
// the order they came in; their answers are the same but for which of the
// process's goroutines gets which.

// thaw is the queue of a store thawed at the current instant.
type thaw struct {
	store int
	q     []*queued
}

// SetOrdered makes the network apply the requests of each instant in a
// seeded order. Only inside a synctest bubble, and only if nothing else
// in the bubble calls synctest.Wait (the dispatcher does).
func (n *Net) SetOrdered(on bool) { n.set(func() { n.ordered = on }) }

// dispatchLocked starts the dispatcher unless it runs; n.mu is held.
func (n *Net) dispatchLocked() {
	if !n.dispatching {
		n.dispatching = true
		go n.dispatch()
	}
}

// dispatch runs the requests of the current instant, then returns.
func (n *Net) dispatch() {
	for {
		synctest.Wait()
		n.mu.Lock()
		thawed, pending := n.thawed, n.pending
		n.thawed, n.pending = nil, nil
		if len(thawed) == 0 && len(pending) == 0 {
			if len(n.wake) == 0 {
				n.dispatching = false
				n.mu.Unlock()
				return
			}
			// One goroutine of a resumed process goes on; the next once
			// it has blocked again.
			w := n.wake[0]
			n.wake = n.wake[1:]
			n.mu.Unlock()
			close(w)
			continue
		}
		rng := rand.New(rand.NewPCG(n.seed, uint64(time.Now().UnixNano())))
		slices.SortStableFunc(thawed, func(a, b thaw) int { return cmp.Compare(a.store, b.store) })
		for _, t := range thawed {
			shuffle(t.q, rng)
			for _, r := range t.q {
				res, err := n.stores[t.store].Apply(r.op)
				r.reply <- reply{res, err}
			}
		}
		shuffle(pending, rng)
		for _, r := range pending {
			i := r.from.id.store
			switch q, frozen := n.frozen[i]; {
			case n.down[i]:
				r.reply <- reply{err: ErrRefused}
			case frozen:
				n.frozen[i] = append(q, r)
			default:
				res, err := n.stores[i].Apply(r.op)
				r.reply <- reply{res, err}
			}
		}
		n.mu.Unlock()
	}
}

// wakeAll lets the goroutines waiting on ws go on, one at a time, in
// their order.
func (n *Net) wakeAll(ws []chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.wake = append(n.wake, ws...)
	n.dispatchLocked()
}

func (n *Net) isOrdered() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ordered
}

// shuffle puts q in an order that depends only on its requests and rng:
// sorted by sender and content, then shuffled.
func shuffle(q []*queued, rng *rand.Rand) {
	for _, r := range q {
		if r.key == "" {
			r.key = fmt.Sprintf("%s|%d|%d|%s %+v", r.from.id.replica, r.from.id.store, r.from.gate.epoch, opName(r.op), r.op)
		}
	}
	slices.SortStableFunc(q, func(a, b *queued) int { return cmp.Compare(a.key, b.key) })
	rng.Shuffle(len(q), func(a, b int) { q[a], q[b] = q[b], q[a] })
}
