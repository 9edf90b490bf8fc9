package smallworld

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slotlock/slotlock/locking/driver"
)

// The network: every request an actor sends waits in w.pending until the
// explorer delivers it (the store runs it and the answer returns at once),
// loses it, or times its sender out.

var (
	errTimeout = errors.New("i/o timeout")
	errDead    = errors.New("process is dead")
)

// request is one Op sent by an actor to a store.
type request struct {
	actor   *actor
	store   int
	k       int // the actor's k-th request to this store (from 1)
	batch   int // the actor's batch: requests sent without an answer or step between them
	op      driver.Op
	reply   chan reply // buffered
	awaited bool       // its sender still waits for the answer
	lost    bool       // it will never run
}

type reply struct {
	res driver.Result
	err error
}

func (r *request) id() string { return fmt.Sprintf("%s s%d %d", r.actor.name, r.store, r.k) }

// node is one actor's view of one store: a driver.Node.
type node struct {
	w     *world
	a     *actor
	store int
}

func (n *node) Addr() string { return fmt.Sprintf("s%d", n.store) }
func (n *node) Close() error { return nil }

func (n *node) Do(ctx context.Context, op driver.Op) (driver.Result, error) {
	r, err := n.w.send(n.a, n.store, op)
	if err != nil {
		return driver.Result{}, err
	}
	select {
	case rep := <-r.reply:
		return rep.res, rep.err
	case <-ctx.Done():
		// Time stands still while a request is awaited, so only a caller's
		// own cancellation gets here: the request stays in flight.
		n.w.mu.Lock()
		r.awaited = false
		n.w.mu.Unlock()
		return driver.Result{}, ctx.Err()
	}
}

// send registers op from a to store i.
func (w *world) send(a *actor, i int, op driver.Op) (*request, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a.dead {
		return nil, errDead
	}
	a.sent[i]++
	switch op := op.(type) {
	case driver.AcquireOp:
		w.learnToken(a, op.Value)
		w.learnToken(a, op.AlsoValue)
	case driver.ExtendOp:
		w.learnToken(a, op.Value)
	case driver.ReleaseOp:
		w.learnToken(a, op.Value)
		w.learnToken(a, op.AlsoValue)
	case driver.PauseOp:
		w.learnToken(a, op.Value)
	case driver.LogAddOp:
		w.learnToken(a, op.Value)
	}
	r := &request{actor: a, store: i, k: a.sent[i], batch: a.batch, op: op, reply: make(chan reply, 1), awaited: true}
	w.pending = append(w.pending, r)
	return r, nil
}

// learnToken names a lease value's random token by who drew it.
func (w *world) learnToken(a *actor, value string) {
	tok, _, ok := strings.Cut(value, "|")
	if !ok || len(tok) != 32 || tok == "done" {
		return
	}
	if _, seen := w.tokens[tok]; seen {
		return
	}
	if a.claiming && a.claimTok == "" {
		a.claimTok = tok
	}
	a.drawn++
	w.tokens[tok] = fmt.Sprintf("<%s.%d>", a.name, a.drawn)
}

// answer returns rep to r's sender, if it still waits; w.mu is held.
func (w *world) answer(r *request, rep reply) {
	if !r.awaited {
		return
	}
	r.awaited = false
	a := r.actor
	a.batch++
	text := "err " + fmt.Sprint(rep.err)
	if rep.err == nil {
		text = resultText(r.op, rep.res)
	}
	a.obs = append(a.obs, fmt.Sprintf("s%d.%d=%s", r.store, r.k, text))
	r.reply <- rep
}

// find returns the pending request named by actor, store and k.
func (w *world) find(actor string, store, k int) *request {
	for _, r := range w.pending {
		if r.actor.name == actor && r.store == store && r.k == k {
			return r
		}
	}
	return nil
}

// drop removes r from the requests in flight; w.mu is held.
func (w *world) drop(r *request) {
	w.pending = slices.DeleteFunc(w.pending, func(x *request) bool { return x == r })
}

// deliver runs r on its store now and answers its sender.
func (w *world) deliver(r *request) {
	res, err := w.applyTo(r.store, r.op)
	w.drop(r)
	w.answer(r, reply{res, err})
}

// timeOut answers every request a awaits with a timeout; those not lost
// stay in flight and may run later.
func (w *world) timeOut(a *actor) {
	for _, r := range slices.Clone(w.pending) {
		if r.actor == a && r.awaited {
			w.answer(r, reply{err: errTimeout})
			if r.lost {
				w.drop(r)
			}
		}
	}
}

// awaited reports whether any live request is awaited.
func (w *world) anyAwaited() bool {
	return slices.ContainsFunc(w.pending, func(r *request) bool { return r.awaited })
}

// canonicalK names the requests one actor sent one store at once (in one
// batch: no answer or step between them) by their contents, not by the
// order their goroutines ran in: a client sends some requests side by
// side (a claim refused by a pause undoes it and repairs the register on
// the same store), and that order is the Go scheduler's, not the
// explorer's. Their numbers are given out again, in the order of their
// text. w.mu is held.
func (w *world) canonicalK() {
	type group struct {
		a        *actor
		store, b int
	}
	groups := map[group][]*request{}
	for _, r := range w.pending {
		g := group{r.actor, r.store, r.batch}
		groups[g] = append(groups[g], r)
	}
	for _, rs := range groups {
		if len(rs) < 2 {
			continue
		}
		ks := make([]int, len(rs))
		for i, r := range rs {
			ks[i] = r.k
		}
		slices.Sort(ks)
		slices.SortFunc(rs, func(x, y *request) int { return strings.Compare(fmt.Sprintf("%+v", x.op), fmt.Sprintf("%+v", y.op)) })
		for i, r := range rs {
			r.k = ks[i]
		}
	}
}

// resultText is res, the answer to op, as text. A store lists its claims
// in its map's order (as HKEYS does): the answer is the set, or two runs
// of one schedule hash, and judge commuting requests, apart.
func resultText(op driver.Op, res driver.Result) string {
	if _, ok := op.(driver.ClaimsOp); ok {
		res.Fields = slices.Sorted(slices.Values(res.Fields))
	}
	return fmt.Sprint(res)
}
