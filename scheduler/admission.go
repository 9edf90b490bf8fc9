package scheduler

import (
	"container/heap"
	"errors"
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Admission control of the scheduled claims: no congestion collapse. A
// replica past its capacity that started every due slot on a goroutine of
// its own would have them all blocked on the in-flight bound; the calls it
// sent would queue in the transport until they passed op_timeout, the
// slots they were for turn late anyway, and the no_quorum retries add
// load: the more slots due, the fewer would run. Here a scheduled slot's claim
// is sent only when its answer is predicted to come before the slot turns
// late (its freshness); the others are shed at once, before any Redis
// call, with their slot.skipped late line.
//
//   - The prediction: claims in flight are bounded by limit, and a claim
//     takes about service (an EWMA of the latencies seen). A slot that
//     finds a free place is predicted to be answered after service; one
//     that waits behind n others after (1 + n/limit) × service.
//   - Waiting slots are served in due order (earliest freshness first);
//     one whose freshness would pass before its answer is shed when its
//     turn comes, without a call.
//   - A waiting slot is a heap entry, not a goroutine: its attempt starts
//     (attemptSlot, on its own goroutine) once it is admitted, holding the
//     admission for its first claim (ticket).
//   - limit adapts: a claim that the transport did not send for this
//     replica's own overload (locking.ErrBusy) cuts it by a fifth, at most
//     once per service time (the calls queued together fail together), to
//     no less than an eighth of MaxInFlight; an answer grows it by one when
//     no cut came for a second (several answers in a row double it per
//     service time), by admitGrow/limit otherwise, up to MaxInFlight. A
//     missing majority does not cut it: measured, cutting on the
//     op_timeouts of a burst (at start, or a second of 2,000 slots) left
//     the limit at its floor and shed most slots of healthy nodes, and a
//     node's outage is not this replica's load. The calls pipeline per
//     node (locking), so fewer in flight means fewer per round trip, not
//     faster answers.
//   - Retries of a claim (split vote, no majority) ask again, in the same
//     queue and under the same budget, so an overloaded replica does not
//     add its retries to the load; a claim that failed with ErrBusy is not
//     retried (acquire, attempt.go).
const (
	admitMinLimit   = 4 // and at least an eighth of MaxInFlight
	admitGrow       = 4
	admitCut        = 0.8
	admitFastAfter  = time.Second
	admitServiceMin = time.Millisecond
	// admitServiceStart is the first estimate, before any claim answered.
	admitServiceStart = 10 * time.Millisecond
)

// admitOutcome is what admission decides for one claim call.
type admitOutcome int

const (
	admitGo   admitOutcome = iota // send it: the admission is held until the call returns (done)
	admitShed                     // its answer would come after its deadline: not sent
	admitStop                     // the replica is stopping: not sent
)

// admitSignal is what an admitted call tells admission of the load.
type admitSignal int

const (
	admitUnsent   admitSignal = iota // not sent (its ticket unused, or shed after all): says nothing
	admitAnswered                    // the stores answered (won, held, split...): its latency is the service time
	admitBusy                        // locking.ErrBusy: not sent, this replica's queue was full
)

// admitWaiter is one claim call waiting for its turn: a slot not started
// yet (j, t: no goroutine waits for it), or a started attempt's retry
// (ch: its goroutine waits on it).
type admitWaiter struct {
	deadline time.Time // the slot's freshness: shed when the answer would come after it
	seq      uint64    // arrival order among equal deadlines
	j        *job
	t        time.Time
	ch       chan admitOutcome // 1-buffered; nil for a slot not started
	idx      int
	recheck  bool // a checked slot (fireChecked): read again before its claim, if it waited
	queued   bool // it waited for its turn in the queue
}

// admitted is a decision to carry out once the admission's lock is released.
type admitted struct {
	w *admitWaiter
	o admitOutcome
}

// admission is the component that decides which scheduled claims are
// sent, and when: it owns the queue of waiting claims and the limit, and
// starts each admitted slot's attempt (attempts) or sheds it through the
// attempt's exit (admission_slots.go), and checks the fallback slots
// (admission_check.go). Built by newAdmission alone, it is the queue
// and its arithmetic, without engine or attempts (the queue's tests).
type admission struct {
	*engine
	attempts admittedAttempts

	mu      sync.Mutex
	max     float64
	floor   float64
	limit   float64
	sending int           // claim calls admitted and not done
	service time.Duration // EWMA of a claim call's latency
	lastCut time.Time
	seq     uint64
	q       admitQueue
	stopped bool
}

func newAdmission(maxInFlight int) *admission {
	m := float64(max(maxInFlight, admitMinLimit))
	return &admission{max: m, floor: max(admitMinLimit, m/8), limit: m, service: admitServiceStart}
}

// enter asks for w's call at now: admitted or shed at once, or queued.
// The decisions are returned, to be carried out unlocked (carryOut).
func (ad *admission) enter(w *admitWaiter, now time.Time) []admitted {
	ad.mu.Lock()
	defer ad.mu.Unlock()
	switch {
	case ad.stopped:
		return []admitted{{w, admitStop}}
	case len(ad.q) == 0 && float64(ad.sending) < ad.limit:
		if now.Add(ad.service).After(w.deadline) {
			return []admitted{{w, admitShed}}
		}
		ad.sending++
		return []admitted{{w, admitGo}}
	}
	wait := time.Duration(float64(ad.service) * (1 + float64(len(ad.q)+1)/ad.limit))
	if now.Add(wait).After(w.deadline) {
		return []admitted{{w, admitShed}}
	}
	ad.seq++
	w.seq, w.queued = ad.seq, true
	heap.Push(&ad.q, w)
	return nil
}

// done ends an admitted call that took d and tells sig. It admits or
// sheds the waiters it frees room for.
func (ad *admission) done(now time.Time, d time.Duration, sig admitSignal) []admitted {
	ad.mu.Lock()
	defer ad.mu.Unlock()
	ad.sending--
	ad.learn(now, d, sig)
	return ad.serve(now)
}

// learn updates the service estimate and the limit from one call.
func (ad *admission) learn(now time.Time, d time.Duration, sig admitSignal) {
	switch sig {
	case admitUnsent:
		return
	case admitBusy:
		ad.cut(now) // not sent: its latency says nothing of the service time
		return
	default:
		if now.Sub(ad.lastCut) > admitFastAfter {
			ad.limit = min(ad.max, ad.limit+1)
		} else {
			ad.limit = min(ad.max, ad.limit+admitGrow/ad.limit)
		}
	}
	ad.service = max(admitServiceMin, ad.service+(d-ad.service)/8)
}

// cut lowers the limit, at most once per service time: the calls in
// flight when the queue overflowed all fail together, for one cause.
func (ad *admission) cut(now time.Time) {
	if now.Sub(ad.lastCut) < ad.service {
		return
	}
	ad.lastCut = now
	ad.limit = max(ad.floor, ad.limit*admitCut)
}

// serve admits waiters in deadline order while there is room, shedding
// those that can no longer be answered in time.
func (ad *admission) serve(now time.Time) []admitted {
	var out []admitted
	for len(ad.q) > 0 && float64(ad.sending) < ad.limit {
		w := heap.Pop(&ad.q).(*admitWaiter)
		if now.Add(ad.service).After(w.deadline) {
			out = append(out, admitted{w, admitShed})
			continue
		}
		ad.sending++
		out = append(out, admitted{w, admitGo})
	}
	return out
}

// busy reports a replica past its capacity: claims wait for their turn,
// or every place is taken.
func (ad *admission) busy() bool {
	ad.mu.Lock()
	defer ad.mu.Unlock()
	return len(ad.q) > 0 || float64(ad.sending) >= ad.limit
}

// stop refuses every waiter and every later call: the replica is stopping.
func (ad *admission) stop() []admitted {
	ad.mu.Lock()
	defer ad.mu.Unlock()
	ad.stopped = true
	out := make([]admitted, 0, len(ad.q))
	for len(ad.q) > 0 {
		out = append(out, admitted{heap.Pop(&ad.q).(*admitWaiter), admitStop})
	}
	return out
}

// admitQueue orders the waiters by deadline, then arrival.
type admitQueue []*admitWaiter

func (q admitQueue) Len() int { return len(q) }
func (q admitQueue) Less(a, b int) bool {
	if !q[a].deadline.Equal(q[b].deadline) {
		return q[a].deadline.Before(q[b].deadline)
	}
	return q[a].seq < q[b].seq
}
func (q admitQueue) Swap(a, b int) {
	q[a], q[b] = q[b], q[a]
	q[a].idx, q[b].idx = a, b
}
func (q *admitQueue) Push(x any) { w := x.(*admitWaiter); w.idx = len(*q); *q = append(*q, w) }
func (q *admitQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return w
}

// ticket is the admission a slot's attempt was started with: its first
// claim call is sent under it; one not used by the exit is given back.
type ticket struct{ used bool }

// take reports whether the ticket was there to use, and uses it.
func (tk *ticket) take() bool {
	if tk == nil || tk.used {
		return false
	}
	tk.used = true
	return true
}

// overloaded classifies a scheduled claim's answer for admission: not
// sent for the replica's own overload (ErrBusy), or an answer (whatever
// it says: its latency is the service time).
func overloaded(err error) admitSignal {
	if ownOverload(err) {
		return admitBusy
	}
	return admitAnswered
}

// ownOverload reports a lock call that failed for this replica's own
// overload alone: every node it missed, it missed because its queue did
// not send the request (locking.ErrBusy). errors.Is(err, ErrBusy) holds
// as soon as one node was busy; a call that also met a node that timed
// out or refused is an outage, retried and reported as one.
func ownOverload(err error) bool {
	if !errors.Is(err, locking.ErrBusy) {
		return false
	}
	var qe *locking.QuorumError
	if !errors.As(err, &qe) {
		return true
	}
	joined, ok := qe.Err.(interface{ Unwrap() []error })
	if !ok {
		return true
	}
	for _, e := range joined.Unwrap() {
		if !errors.Is(e, locking.ErrBusy) {
			return false
		}
	}
	return true
}
