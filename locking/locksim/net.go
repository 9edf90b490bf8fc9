package locksim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
)

// Net joins replicas to stores. Every request travels over a link with a
// latency drawn per request; faults make a store refuse connections
// (down), make links lose requests (partition) or only their answers (a
// one-way partition: the store runs what it is sent, its sender hears
// nothing), slow a store, make a fraction of requests execute long after
// their sender gave up, and freeze
// a store: it executes nothing while frozen, and when it thaws it runs
// what queued up in an order of the seed's drawing (freeze.go).
type Net struct {
	seed   uint64
	stores []*Store

	mu        sync.Mutex
	rng       *rand.Rand        // the order in which a thawed store replays its queue
	frozen    map[int][]*queued // per frozen store: the requests it holds, in arrival order
	down      map[int]bool
	cut       map[linkID]bool // partitions: replica <-> store
	deaf      map[linkID]bool // one-way partitions: store -> replica (answers lost)
	slow      map[int]time.Duration
	lossRate  float64 // requests lost on every link (never executed, no answer)
	lateRate  float64 // requests executed after LateDelay, their answers lost
	lateDelay time.Duration

	ordered     bool            // SetOrdered: requests go through the dispatcher (ordered.go)
	pending     []*queued       // requests that reached their stores at this instant
	thawed      []thaw          // queues of stores thawed at this instant
	wake        []chan struct{} // goroutines of resumed processes, to wake one by one
	dispatching bool            // a dispatcher is running
}

type linkID struct {
	replica string
	store   int
}

// A request or answer on a healthy link takes 1 to latencySteps steps of
// latencyStep (few distinct instants keep virtual time cheap to advance).
const (
	latencyStep  = 500 * time.Microsecond
	latencySteps = 4
)

// ErrRefused is a down store's answer.
var ErrRefused = errors.New("connection refused")

// NewNet returns a network over stores; seed fixes every link's draws.
func NewNet(seed uint64, stores ...*Store) *Net {
	return &Net{seed: seed, stores: stores, down: map[int]bool{}, cut: map[linkID]bool{}, deaf: map[linkID]bool{}, slow: map[int]time.Duration{},
		rng: rand.New(rand.NewPCG(seed, 0xf4ee2e)), frozen: map[int][]*queued{}}
}

// Stores are the network's stores, in order.
func (n *Net) Stores() []*Store { return n.stores }

// SetDown makes store i refuse (true) or accept (false) connections.
func (n *Net) SetDown(i int, down bool) { n.set(func() { n.down[i] = down }) }

// SetCut partitions replica from store i (requests and answers are lost).
func (n *Net) SetCut(replica string, i int, cut bool) {
	n.set(func() { n.cut[linkID{replica, i}] = cut })
}

// SetAnswersLost partitions store i from replica one way (lost true):
// the replica's requests still reach the store and run at their time, but
// every answer is lost, so the replica counts as failed what the store
// applied — a route that fails one way, a NAT or conntrack table dropping
// the return traffic.
func (n *Net) SetAnswersLost(replica string, i int, lost bool) {
	n.set(func() { n.deaf[linkID{replica, i}] = lost })
}

// SetSlow adds d to every request's delay to store i (0 ends it).
func (n *Net) SetSlow(i int, d time.Duration) { n.set(func() { n.slow[i] = d }) }

// SetLoss makes a fraction of all requests get lost, and another fraction
// execute after delay with their answers lost (a store that stalls and
// then runs what queued up).
func (n *Net) SetLoss(loss, late float64, delay time.Duration) {
	n.set(func() { n.lossRate, n.lateRate, n.lateDelay = loss, late, delay })
}

func (n *Net) set(f func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f()
}

// Nodes returns one driver.Node per store, for one replica process whose
// life the gate tracks: a dead process sends nothing, a paused one sends
// and receives nothing until it resumes.
func (n *Net) Nodes(replica string, gate *Gate) []driver.Node {
	out := make([]driver.Node, len(n.stores))
	for i := range n.stores {
		h := fnv.New64a()
		h.Write([]byte(replica))
		out[i] = &link{net: n, id: linkID{replica, i}, gate: gate, seed: h.Sum64() ^ uint64(i)<<32 ^ uint64(gate.epoch),
			sent: map[uint64]int{}}
	}
	return out
}

// A link is how a replica reaches a simulated store: a driver.Node, run
// under the Redlock driver as a Redis node is.
var _ driver.Node = (*link)(nil)

type link struct {
	net  *Net
	id   linkID
	gate *Gate
	seed uint64 // the link's, from the replica's name, the store and the process's epoch

	mu     sync.Mutex
	sentAt time.Time
	sent   map[uint64]int // requests sent at sentAt, by hash of their content
}

// opName is the op's type as it enters the draws: named in the package
// that defined the ops when the seeds were recorded (locking), so that a
// recorded seed replays the same world whatever package holds them.
func opName(op driver.Op) string {
	return "locking." + reflect.TypeOf(op).Name()
}

// draws returns the random source of one request. It is drawn from the
// request itself — its content, the virtual instant it is sent at and how
// many identical requests this link sent at that instant — and not from
// a stream shared by the link's requests: the goroutines of one process
// that send at the same instant run in an order the Go scheduler picks,
// and a shared stream would hand them its draws in that order, so a
// replay of the seed would not give each request the same latency.
func (l *link) draws(op driver.Op) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s %+v", opName(op), op)
	c := h.Sum64()
	now := time.Now()
	l.mu.Lock()
	if !now.Equal(l.sentAt) {
		l.sentAt = now
		clear(l.sent)
	}
	n := l.sent[c]
	l.sent[c]++
	l.mu.Unlock()
	return rand.New(rand.NewPCG(l.net.seed^l.seed, c^uint64(now.UnixNano())*0x9e3779b97f4a7c15^uint64(n)))
}

func (l *link) Addr() string { return l.net.stores[l.id.store].name }
func (l *link) Close() error { return nil }

type fate int

const (
	delivered fate = iota
	lost
	late       // executed after LateDelay, its answer lost
	unanswered // executed at its time, its answer lost (SetAnswersLost)
)

// plan draws a request's delays and fate.
func (l *link) plan(op driver.Op) (out, back time.Duration, f fate, down bool) {
	n := l.net
	n.mu.Lock()
	down = n.down[l.id.store]
	cut, deaf := n.cut[l.id], n.deaf[l.id]
	slow := n.slow[l.id.store]
	loss, lateRate, lateDelay := n.lossRate, n.lateRate, n.lateDelay
	n.mu.Unlock()
	rng := l.draws(op)
	lat := func() time.Duration {
		return latencyStep * time.Duration(1+rng.IntN(latencySteps))
	}
	out, back = lat()+slow, lat()
	p := rng.Float64()
	switch {
	case cut || p < loss:
		f = lost
	case p < loss+lateRate:
		f, out = late, out+lateDelay
	case deaf:
		f = unanswered
	}
	return out, back, f, down
}

type reply struct {
	res driver.Result
	err error
}

// Do sends op to the store and waits for the answer or ctx's end. A
// request that was sent is executed at its time whether or not its sender
// still waits for it; at a frozen store, when the store thaws.
func (l *link) Do(ctx context.Context, op driver.Op) (driver.Result, error) {
	if !l.gate.Wait() {
		return driver.Result{}, errors.New("process is dead")
	}
	if err := ctx.Err(); err != nil {
		return driver.Result{}, err // as go-redis: an ended context sends nothing
	}
	out, back, f, down := l.plan(op)
	i := l.id.store
	if dl, ok := ctx.Deadline(); f == delivered && ok && !l.net.isFrozen(i) && time.Now().Add(out+back).Before(dl) {
		// The answer should arrive in time: no need for a goroutine of its
		// own (unless the store froze meanwhile: then the caller gives up
		// at its deadline).
		time.Sleep(out)
		if down || l.net.refuses(i) {
			return driver.Result{}, ErrRefused
		}
		select {
		case r := <-l.net.deliver(l, op):
			time.Sleep(back)
			if !l.gate.Wait() {
				return driver.Result{}, errors.New("process is dead")
			}
			return r.res, r.err
		case <-ctx.Done():
			return driver.Result{}, ctx.Err()
		}
	}
	ch := make(chan reply, 1)
	go func() {
		time.Sleep(out)
		if down || l.net.refuses(i) {
			ch <- reply{err: ErrRefused}
			return
		}
		if f == lost {
			return
		}
		r := <-l.net.deliver(l, op)
		if f == late || f == unanswered {
			return
		}
		time.Sleep(back)
		ch <- r
	}()
	select {
	case r := <-ch:
		if !l.gate.Wait() {
			return driver.Result{}, errors.New("process is dead")
		}
		return r.res, r.err
	case <-ctx.Done():
		return driver.Result{}, ctx.Err()
	}
}

// refuses reports whether store i is down for a request arriving now; on
// an ordered network the dispatcher decides it, after every fault of the
// instant.
func (n *Net) refuses(i int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.ordered && n.down[i]
}
