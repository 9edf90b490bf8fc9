package redlock

import (
	"context"
	"errors"
	"strings"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// The Redlock acquisition: one round on every node, read by tallyAcquire,
// then granted (grantWon, claimMet) or undone (acquireLost).

func (r *redlock) Acquire(ctx context.Context, s driver.Lease) (driver.Grant, error) {
	if err := driver.CheckKey(s.Key); err != nil {
		return driver.Grant{}, err
	}
	family := s.Key.Family
	proposal := r.propose(family)
	op := r.acquireOp(s)
	op.Fence = r.fenceKey(family)
	op.N = int64(proposal)
	if s.Claim && s.Also != nil {
		// A frozen node may run a request long after its sender gave up
		// (and after its undo: the undo may never reach it). A job lease
		// so left on a majority would keep the job's next runs out for a
		// ttl, so a node takes it only while the request is fresh by its
		// own clock: sent at most jointFresh ago.
		op.Also, op.AlsoValue = r.key(s.Also.Key), s.Also.Value
		op.SentMS, op.FreshMS = r.clock.Now().UnixMilli(), (r.opTimeout + jointFresh).Milliseconds()
	}
	op.Tomb = r.tombKey(s)
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(op), res, errs)

	t := tallyAcquire(res, errs)
	// A plain lease refused by a leftover its holder gave up takes it
	// over where that makes a majority (released.go).
	if !s.Claim && t.won < r.quorum && r.takeReleased(ctx, s, op, res, errs) {
		t = tallyAcquire(res, errs)
	}
	if s.Claim {
		r.repairPause(family, func(i int) (string, bool) { return res[i].Pause, errs[i] == nil })
	}
	// A done marker on any node means the work already ran, even when a
	// majority let us in (the marker may have expired early or been lost
	// on the others): the acquisition is refused — unless it took over
	// an abandoned claim on a majority. Then the marker is an end that
	// reached a minority before its sender lost its lease (a settler's,
	// or the run's own): the claim on the others would stay open, pointed
	// to by every later claim and refused to each, and its run never
	// reported. This lease settles it (Grant.Abandoned: never run).
	if t.won >= r.quorum && (!t.sawDone || t.settles(r.quorum)) && ctx.Err() == nil {
		if g, decided, err := r.grantWon(ctx, s, op.Fence, &t, res, errs); decided {
			return g, err
		}
	}
	return driver.Grant{}, r.acquireLost(ctx, s, &t, res, errs)
}

// acquireTally is what the answers to one acquire round say.
type acquireTally struct {
	won, answered int
	sawDone       bool
	// pauses, allPauses: the pause register, as the winners / all that
	// answered hold it.
	pauses, allPauses []string
	// The slot's claims that this round met, by value (one claim is one
	// value): taken over here, found under another lease's live lease (a
	// takeover of it going on), found under its own live lease.
	tookBy, underBy, ownBy map[string]int
	started                map[string]bool // a copy met is confirmed started
	orphan                 driver.Result
	seen, top              uint64 // highest counter seen anywhere / raised by a winner
}

// tallyAcquire reads the answers of an acquire round.
func tallyAcquire(res []driver.Result, errs []error) acquireTally {
	// The maps stay nil (no allocation) unless a claim is met.
	t := acquireTally{pauses: make([]string, 0, len(res)), allPauses: make([]string, 0, len(res))}
	for i, rep := range res {
		if errs[i] != nil {
			continue
		}
		t.answered++
		t.seen = max(t.seen, uint64(rep.N))
		t.allPauses = append(t.allPauses, rep.Pause)
		switch {
		case rep.Status == 1 || rep.Status == 2:
			t.won++
			t.top = max(t.top, uint64(rep.N))
			if rep.Status == 2 {
				v, st := wire.ClaimOf(rep.Value)
				t.meet(&t.tookBy, v, st)
			}
			t.pauses = append(t.pauses, rep.Pause)
			if rep.Orphan != "" && t.orphan.Orphan == "" {
				t.orphan = rep
			}
		case strings.HasPrefix(rep.Value, wire.DonePrefix):
			t.sawDone = true
		case rep.Claim != "":
			v, st := wire.ClaimOf(rep.Claim)
			if v == rep.Value {
				t.meet(&t.ownBy, v, st)
			} else {
				t.meet(&t.underBy, v, st)
			}
		}
	}
	return t
}

// settles reports whether this round took a claim over on a quorum of
// nodes, as claimMet counts it: then the grant can only be that claim's
// abandonment, settled and never run.
func (t *acquireTally) settles(quorum int) bool {
	_, n := t.mostTaken()
	return n >= quorum
}

// mostTaken is the claim this round met on the most nodes, and on how
// many. A claim counts on the nodes where this round took its lease over,
// on those that refused because another lease lives over it (a
// concurrent takeover won there: the claim is still there under it), and,
// where it counts on one of those, on those that refused because its
// holder's lease still lives there (the holder renewed on them only: its
// lease is lost, not its claim). A claim under its own live lease alone
// is a live claim of a racing acquirer: it does not count against our
// win. Ties go to the lower value, so every caller picks the same.
func (t *acquireTally) mostTaken() (took string, tookN int) {
	count := func(v string, n int) {
		if n += t.ownBy[v]; n > tookN || (n == tookN && v < took) {
			took, tookN = v, n
		}
	}
	for v, n := range t.tookBy {
		count(v, n+t.underBy[v])
	}
	for v, n := range t.underBy {
		if t.tookBy[v] == 0 {
			count(v, n)
		}
	}
	return took, tookN
}

// meet counts claim v, started or not, in by.
func (t *acquireTally) meet(by *map[string]int, v string, started bool) {
	if *by == nil {
		*by = map[string]int{}
	}
	(*by)[v]++
	if t.started == nil {
		t.started = map[string]bool{}
	}
	t.started[v] = t.started[v] || started
}

// grantWon turns a round won on a majority into a grant, or refuses it
// (paused, a claim met that forbids it); decided is false, and nothing
// was undone, when the token could not be settled before ctx ended (the
// caller then treats the round as failed).
func (r *redlock) grantWon(ctx context.Context, s driver.Lease, fence string, t *acquireTally, res []driver.Result, errs []error) (g driver.Grant, decided bool, err error) {
	family := s.Key.Family
	// The winners are a majority: they hold the newest pause written to
	// a majority.
	// A claim that takes an abandoned one over is granted even so: its
	// caller settles the dead run's slot and starts no work, and refused
	// until the pause ends the slot would have no outcome meanwhile.
	p := driver.NewestPause(t.pauses)
	if s.Claim && p.ActiveAt(r.clock.Now()) && !r.takesOver(t) {
		r.undo(ctx, s, nil, errs)
		return driver.Grant{}, true, &locking.PausedError{Key: s.Key, Pause: p}
	}
	g = driver.Grant{Pause: p}
	if err := r.claimMet(ctx, s, t, errs, &g); err != nil {
		return driver.Grant{}, true, err
	}
	if t.orphan.Orphan != "" {
		g.Orphan = driver.ParseAbandoned(locking.Key{Family: family, Name: t.orphan.Orphan}, t.orphan.OrphanValue)
	}
	// Quorum register. Each winner raised its counter to at least one
	// above what it held. Where a majority of winners raised it to the
	// same T, the counter went from below T to T on a majority in this
	// round: T is above every earlier token (that token is on a
	// majority, which meets this one in a node now above it), no other
	// acquisition can have done the same on a majority (counters only
	// rise), and Acquire is done in one round — the usual case, as
	// nodes that saw the same acquisitions hold the same counter, and
	// one node that missed some does not change it.
	if tok, ok := r.agreed(res, errs); ok {
		r.learnToken(family, tok)
		g.Token = tok
		r.joint(ctx, s, &g, res, errs)
		return g, true, nil
	}
	// No majority of winners agreed (nodes missed acquisitions):
	// claim the highest raised value on a majority (it is above every
	// earlier token for the same reason), or one above what is met.
	token, err := r.claimToken(ctx, s.Key, fence, t.top, errs)
	if err == nil {
		r.learnToken(family, token)
		g.Token = token
		r.joint(ctx, s, &g, res, errs)
		return g, true, nil
	}
	if ctx.Err() == nil {
		r.undo(ctx, s, nil, errs)
		return driver.Grant{}, true, err
	}
	return driver.Grant{}, false, nil
}

// claimMet decides, for a claim, what the claims this round met mean for
// g: an abandoned claim taken over, a leftover covered, or a refusal (a
// *HeldError with Claimed) after undoing the round.
func (r *redlock) claimMet(ctx context.Context, s driver.Lease, t *acquireTally, errs []error, g *driver.Grant) error {
	took, tookN := t.mostTaken()
	// A claim that started work was written, with one value, on a
	// majority. Found on a majority, it is abandoned. Found on fewer
	// nodes, confirmed started on any of them, it is abandoned too: one
	// started copy proves the body was invoked (its other copies ended
	// or expired where its end or its settler reached), and that
	// evidence is settled and reported, never closed silently. Found on
	// fewer, not started, while every node answered, it is a leftover: a
	// node that missed the end of a run long settled, or a request
	// executed after its acquisition had failed; this lease covers it
	// (Grant.Leftover), so that its caller can end it — but not run under
	// it: where it took a leftover over, the claim is still the
	// leftover's, so the lease is not one claim on a majority. Found on
	// fewer while some node did not answer, it may be a started run's
	// whose other copies are on the silent nodes: refused (Claimed).
	switch {
	case r.takesOver(t):
		g.Abandoned = driver.ParseAbandoned(s.Key, took)
		g.Abandoned.Started = t.started[took]
		g.Abandoned.Majority = tookN >= r.quorum
	case tookN > 0 && t.answered == len(r.nodes):
		g.Leftover = true
	case tookN > 0:
		r.undo(ctx, s, nil, errs)
		he := driver.ParseHeld(s.Key, took)
		he.Claimed = true
		return he
	}
	return nil
}

// takesOver reports whether the claims a won round met make it a
// takeover of an abandoned claim (claimMet says why).
func (r *redlock) takesOver(t *acquireTally) bool {
	took, tookN := t.mostTaken()
	return tookN >= r.quorum || (tookN > 0 && t.started[took] && t.answered == len(r.nodes))
}

// acquireLost ends a round that was not won: it leaves nothing behind
// where it wrote or may have written, and says why.
func (r *redlock) acquireLost(ctx context.Context, s driver.Lease, t *acquireTally, res []driver.Result, errs []error) error {
	r.learnToken(s.Key.Family, t.seen)
	// Failed: leave nothing behind where we wrote or may have written.
	// (A counter raised to our proposal on some nodes stays raised: that
	// only makes later tokens larger, never smaller.)
	undoMask := make([]bool, len(r.nodes))
	for i, rep := range res {
		undoMask[i] = rep.Status != 0 || errs[i] != nil
	}
	r.undo(ctx, s, undoMask, errs)
	if err := ctx.Err(); err != nil {
		return err
	}
	err := r.acquireFailure(s, res, errs)
	var held *locking.HeldError
	done := errors.As(err, &held) && held.Done
	if p := driver.NewestPause(t.allPauses); s.Claim && t.answered >= r.quorum && !done && p.ActiveAt(r.clock.Now()) {
		// Refused while paused (another replica's attempt held the key
		// for a moment): say so, as the winner of the race hears it —
		// with the refusal, for a lease that holds the key since before
		// the pause began.
		return &locking.PausedError{Key: s.Key, Pause: p, Refusal: err}
	}
	return err
}

// agreed returns the counter value that a majority of the round's
// winners (Status 1 or 2) raised their counters to, if there is one.
func (r *redlock) agreed(res []driver.Result, errs []error) (uint64, bool) {
	for i, a := range res {
		if errs[i] != nil || (a.Status != 1 && a.Status != 2) {
			continue
		}
		n := 0
		for j, b := range res {
			if errs[j] == nil && (b.Status == 1 || b.Status == 2) && b.N == a.N {
				n++
			}
		}
		if n >= r.quorum {
			return uint64(a.N), true
		}
	}
	return 0, false
}

// acquireFailure classifies a failed acquisition of s.
func (r *redlock) acquireFailure(s driver.Lease, res []driver.Result, errs []error) error {
	key := s.Key
	counts := map[string]int{}
	answered := 0
	var done *locking.HeldError
	for i, rep := range res {
		if errs[i] != nil {
			continue
		}
		answered++
		if rep.Status != 0 {
			continue
		}
		counts[rep.Value]++
		if done == nil && strings.HasPrefix(rep.Value, wire.DonePrefix) {
			done = driver.ParseHeld(key, rep.Value)
		}
	}
	if done != nil {
		// A done marker anywhere means the slot already ran.
		return done
	}
	if answered < r.quorum || len(counts) == 0 {
		return &locking.QuorumError{Op: "acquire", Key: key, Need: r.quorum, Got: answered, Err: r.nodeErrs(errs)}
	}
	top, topN := "", 0
	for v, c := range counts {
		if c > topN || (c == topN && v < top) {
			top, topN = v, c
		}
	}
	held := driver.ParseHeld(key, top)
	if topN >= r.quorum {
		held.Unconfirmed = s.Claim && unconfirmed(top, res, errs)
		return held
	}
	return &locking.SplitVoteError{Held: held}
}

// unconfirmed reports whether the value v that refused a claim on a
// majority is a claim held there under its own lease and confirmed
// started on none of them, while a store that answered does not hold it
// (it granted the claim, or holds another value) — HeldError.Unconfirmed.
// A winner's claim is on every store that answered it, unless it won a
// race a moment ago. A replica whose requests run on some stores after it
// gave up on them, or whose answers from them are lost, leaves its claim
// there until its undo follows, while its retries hold the others for a
// round each: its peers, refused everywhere, would otherwise skip a slot
// that nobody runs.
func unconfirmed(v string, res []driver.Result, errs []error) bool {
	elsewhere := false
	for i, rep := range res {
		if errs[i] != nil {
			continue
		}
		if rep.Status != 0 || rep.Value != v {
			elsewhere = true
			continue
		}
		if c, started := wire.ClaimOf(rep.Claim); started || c != v {
			return false
		}
	}
	return elsewhere
}
