package locksim

import (
	"github.com/slotlock/slotlock/locking/driver"
)

// A frozen store (SetFrozen) executes nothing: a Redis whose process is
// stopped (SIGSTOP, a VM paused, a long fork) keeps its connections open,
// so requests queue up and their senders time out. When it thaws it runs
// the whole queue at once, in an order drawn from the network's seed:
// requests that came over different connections (several replicas, and
// the pipelines of one) have no order between them once they queued, so a
// late acquisition may run before or after its own undo.

// queued is a request held by a frozen store, or, on an ordered network,
// one that reached its store at the current instant.
type queued struct {
	op    driver.Op
	from  *link
	reply chan reply // buffered: the answer, once the store ran it
	key   string     // its place among the requests of one instant (ordered.go)
}

// SetFrozen freezes store i (true) or thaws it (false): thawing runs
// every request it held, in a seeded random order.
func (n *Net) SetFrozen(i int, frozen bool) {
	n.mu.Lock()
	q, was := n.frozen[i]
	if frozen {
		if !was {
			n.frozen[i] = []*queued{}
		}
		n.mu.Unlock()
		return
	}
	defer n.mu.Unlock()
	delete(n.frozen, i)
	if n.ordered {
		// The dispatcher runs the queue, at this instant, before the
		// requests that reach the store at it.
		n.thawed = append(n.thawed, thaw{i, q})
		n.dispatchLocked()
		return
	}
	shuffle(q, n.rng)
	// Under n.mu, so that requests arriving meanwhile run after the queue,
	// as they would behind it on the store's connections.
	for _, r := range q {
		res, err := n.stores[i].Apply(r.op)
		r.reply <- reply{res, err}
	}
}

// Frozen reports whether store i is frozen now.
func (n *Net) Frozen(i int) bool { return n.isFrozen(i) }

func (n *Net) isFrozen(i int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.frozen[i]
	return ok
}

// deliver runs op on store i now, or queues it while the store is frozen;
// the answer arrives on the channel.
func (n *Net) deliver(from *link, op driver.Op) <-chan reply {
	i := from.id.store
	ch := make(chan reply, 1)
	n.mu.Lock()
	if n.ordered {
		n.pending = append(n.pending, &queued{op: op, from: from, reply: ch})
		n.dispatchLocked()
		n.mu.Unlock()
		return ch
	}
	if q, ok := n.frozen[i]; ok {
		n.frozen[i] = append(q, &queued{op: op, from: from, reply: ch})
		n.mu.Unlock()
		return ch
	}
	n.mu.Unlock()
	res, err := n.stores[i].Apply(op)
	ch <- reply{res, err}
	return ch
}
