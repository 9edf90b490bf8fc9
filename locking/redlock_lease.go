package locking

import (
	"context"
	"errors"
	"strings"
	"time"
)

// leaseSpec is what the backends need to act on a lease.
type leaseSpec struct {
	key   Key
	value string // "<token>|<replica>"
	ttl   time.Duration
	claim bool // a claim (Locker.Claim): work to be done at most once
	// also (claims only) is a plain lease of the family taken in the same
	// step (Claim With); its ttl is the claim's.
	also *leaseSpec
}

// grant is a successful acquisition.
type grant struct {
	token     uint64
	abandoned *Abandoned // a claim taken over: its holder never ended it
	orphan    *Abandoned // another claim of the family seen abandoned
	pause     Pause      // a claim's family's newest pause state, ended or not
	leftover  bool       // a claim on a minority was taken over (see acquire)
	joined    bool       // leaseSpec.also was taken too, with the same token
}

func msec(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// claimKeys are the claims hash, the lives hash and the field of s, a
// claim; "" for a plain lease.
func (r *redlock) claimKeys(s leaseSpec) (claims, lives, field string) {
	if !s.claim {
		return "", "", ""
	}
	return r.key(Key{Family: s.key.Family, Name: claimsName}), r.key(Key{Family: s.key.Family, Name: livesName}), s.key.Name
}

// acquireOp is the AcquireOp of s, its lease keys filled in.
func (r *redlock) acquireOp(s leaseSpec) AcquireOp {
	op := AcquireOp{Key: r.key(s.key), Value: s.value, TTL: msec(s.ttl)}
	op.Claims, op.Lives, op.Field = r.claimKeys(s)
	if s.claim {
		op.Pause = r.pauseKey(s.key.Family)
	}
	return op
}

// extendOp is the ExtendOp of s.
func (r *redlock) extendOp(s leaseSpec) ExtendOp {
	op := ExtendOp{Key: r.key(s.key), Value: s.value, TTL: msec(s.ttl)}
	op.Claims, op.Lives, op.Field = r.claimKeys(s)
	return op
}

// releaseOp is the ReleaseOp of s, its lease keys filled in.
func (r *redlock) releaseOp(s leaseSpec) ReleaseOp {
	op := ReleaseOp{Key: r.key(s.key), Value: s.value}
	op.Claims, op.Lives, op.Field = r.claimKeys(s)
	if s.claim {
		op.Log = r.key(Key{Family: s.key.Family, Name: logName})
	}
	return op
}

func (r *redlock) acquire(ctx context.Context, s leaseSpec) (grant, error) {
	if err := CheckKey(s.key); err != nil {
		return grant{}, err
	}
	family := s.key.Family
	proposal := r.propose(family)
	op := r.acquireOp(s)
	op.Fence = r.fenceKey(family)
	op.N = int64(proposal)
	if s.claim && s.also != nil {
		// A frozen node may run a request long after its sender gave up
		// (and after its undo: the undo may never reach it). A job lease
		// so left on a majority would keep the job's next runs out for a
		// ttl, so a node takes it only while the request is fresh by its
		// own clock: sent at most jointFresh ago.
		op.Also, op.AlsoValue = r.key(s.also.key), s.also.value
		op.SentMS, op.FreshMS = r.clock.Now().UnixMilli(), (r.opTimeout + jointFresh).Milliseconds()
	}
	op.Tomb = r.tombKey(s)
	res := make([]Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(op), res, errs)

	won, answered, sawDone := 0, 0, false
	var pauses, allPauses []string // the pause register, as the winners / all that answered hold it
	// The slot's claims that this round met, by value (one claim is one
	// value): taken over here, found under another lease's live lease (a
	// takeover of it going on), found under its own live lease.
	tookBy, underBy, ownBy := map[string]int{}, map[string]int{}, map[string]int{}
	started := map[string]bool{} // a copy met is confirmed started
	var orphan Result
	var seen, top uint64 // highest counter seen anywhere / raised by a winner
	for i, rep := range res {
		if errs[i] != nil {
			continue
		}
		answered++
		seen = max(seen, uint64(rep.N))
		allPauses = append(allPauses, rep.Pause)
		switch {
		case rep.Status == 1 || rep.Status == 2:
			won++
			top = max(top, uint64(rep.N))
			if rep.Status == 2 {
				v, st := claimOf(rep.Value)
				tookBy[v]++
				started[v] = started[v] || st
			}
			pauses = append(pauses, rep.Pause)
			if rep.Orphan != "" && orphan.Orphan == "" {
				orphan = rep
			}
		case strings.HasPrefix(rep.Value, donePrefix):
			sawDone = true
		case rep.Claim != "":
			v, st := claimOf(rep.Claim)
			if v == rep.Value {
				ownBy[v]++
			} else {
				underBy[v]++
			}
			started[v] = started[v] || st
		}
	}
	// A done marker on any node means the work already ran, even when a
	// majority let us in (the marker may have expired early or been lost
	// on the others): the acquisition is refused.
	if won >= r.quorum && !sawDone && ctx.Err() == nil {
		// The winners are a majority: they hold the newest pause written
		// to a majority.
		p := newestPause(pauses)
		if s.claim && p.ActiveAt(r.clock.Now()) {
			r.undo(ctx, s, nil, errs)
			return grant{}, &PausedError{Key: s.key, Pause: p}
		}
		g := grant{pause: p}
		// A claim counts on the nodes where this round took its lease over,
		// on those that refused because another lease lives over it (a
		// concurrent takeover won there: the claim is still there under
		// it), and, where it counts on one of those, on those that refused
		// because its holder's lease still lives there (the holder renewed
		// on them only: its lease is lost, not its claim). A claim under
		// its own live lease alone is a live claim of a racing acquirer:
		// it does not count against our win.
		took, tookN := "", 0
		count := func(v string, n int) {
			if n += ownBy[v]; n > tookN || (n == tookN && v < took) {
				took, tookN = v, n
			}
		}
		for v, n := range tookBy {
			count(v, n+underBy[v])
		}
		for v, n := range underBy {
			if tookBy[v] == 0 {
				count(v, n)
			}
		}
		// A claim that started work was written, with one value, on a
		// majority. Found on a majority, it is abandoned. Found on fewer
		// nodes while every node answered, it is a leftover: a node that
		// missed the end of a run long settled, or a request executed after
		// its acquisition had failed; this lease covers it (Grant.Leftover),
		// so that its caller can end it — but not run under it: where it
		// took a leftover over, the claim is still the leftover's, so the
		// lease is not one claim on a majority. Found on fewer while some
		// node did not answer, it may be a started run's whose other copies
		// are on the silent nodes: refused (Claimed).
		switch {
		case tookN >= r.quorum:
			g.abandoned = parseAbandoned(s.key, took)
			g.abandoned.Started = started[took]
		case tookN > 0 && answered == len(r.nodes):
			g.leftover = true
		case tookN > 0:
			r.undo(ctx, s, nil, errs)
			he := parseHeld(s.key, took)
			he.Claimed = true
			return grant{}, he
		}
		if orphan.Orphan != "" {
			g.orphan = parseAbandoned(Key{Family: family, Name: orphan.Orphan}, orphan.OrphanValue)
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
		if t, ok := r.agreed(res, errs); ok {
			r.learnToken(family, t)
			g.token = t
			r.joint(ctx, s, &g, res, errs)
			return g, nil
		}
		// No majority of winners agreed (nodes missed acquisitions):
		// claim the highest raised value on a majority (it is above every
		// earlier token for the same reason), or one above what is met.
		token, err := r.claimToken(ctx, s.key, op.Fence, top, errs)
		if err == nil {
			r.learnToken(family, token)
			g.token = token
			r.joint(ctx, s, &g, res, errs)
			return g, nil
		}
		if ctx.Err() == nil {
			r.undo(ctx, s, nil, errs)
			return grant{}, err
		}
	}
	r.learnToken(family, seen)
	// Failed: leave nothing behind where we wrote or may have written.
	// (A counter raised to our proposal on some nodes stays raised: that
	// only makes later tokens larger, never smaller.)
	undoMask := make([]bool, len(r.nodes))
	for i, rep := range res {
		undoMask[i] = rep.Status != 0 || errs[i] != nil
	}
	r.undo(ctx, s, undoMask, errs)
	if err := ctx.Err(); err != nil {
		return grant{}, err
	}
	err := r.acquireFailure(s.key, res, errs)
	var held *HeldError
	done := errors.As(err, &held) && held.Done
	if p := newestPause(allPauses); s.claim && answered >= r.quorum && !done && p.ActiveAt(r.clock.Now()) {
		// Refused while paused (another replica's attempt held the key
		// for a moment): say so, as the winner of the race hears it.
		return grant{}, &PausedError{Key: s.key, Pause: p}
	}
	return grant{}, err
}

// agreed returns the counter value that a majority of the round's
// winners (Status 1 or 2) raised their counters to, if there is one.
func (r *redlock) agreed(res []Result, errs []error) (uint64, bool) {
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

// acquireFailure classifies a failed acquisition.
func (r *redlock) acquireFailure(key Key, res []Result, errs []error) error {
	counts := map[string]int{}
	answered := 0
	var done *HeldError
	for i, rep := range res {
		if errs[i] != nil {
			continue
		}
		answered++
		if rep.Status != 0 {
			continue
		}
		counts[rep.Value]++
		if done == nil && strings.HasPrefix(rep.Value, donePrefix) {
			done = parseHeld(key, rep.Value)
		}
	}
	if done != nil {
		// A done marker anywhere means the slot already ran.
		return done
	}
	if answered < r.quorum || len(counts) == 0 {
		return &QuorumError{Op: "acquire", Key: key, Need: r.quorum, Got: answered, Err: r.nodeErrs(errs)}
	}
	top, topN := "", 0
	for v, c := range counts {
		if c > topN || (c == topN && v < top) {
			top, topN = v, c
		}
	}
	held := parseHeld(key, top)
	if topN >= r.quorum {
		return held
	}
	return &SplitVoteError{Held: held}
}

// compareAct runs a compare-and-act op on every node and classifies the
// answers (verdict).
func (r *redlock) compareAct(ctx context.Context, name string, key Key, op Op) error {
	res := make([]Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return err
	}
	return r.verdict(name, key, res, errs, func(rep Result) bool { return rep.Status == 1 })
}

// verdict classifies a compare-and-act round: nil on a majority of nodes
// where ours holds, ErrLockLost when so many nodes answered otherwise
// that such a majority is impossible, else a *QuorumError.
func (r *redlock) verdict(name string, key Key, res []Result, errs []error, ours func(Result) bool) error {
	ok, notOurs := 0, 0
	for i, rep := range res {
		switch {
		case errs[i] != nil:
		case ours(rep):
			ok++
		default:
			notOurs++
		}
	}
	if ok >= r.quorum {
		return nil
	}
	if len(r.nodes)-notOurs < r.quorum {
		return ErrLockLost
	}
	return &QuorumError{Op: name, Key: key, Need: r.quorum, Got: ok, Err: r.nodeErrs(errs)}
}

func (r *redlock) extend(ctx context.Context, s leaseSpec, start bool) error {
	op := r.extendOp(s)
	op.Start = start && s.claim
	return r.compareAct(ctx, "extend", s.key, op)
}

func (r *redlock) release(ctx context.Context, s leaseSpec, e ending) released {
	op := r.releaseOp(s)
	if e.doneTTL > 0 {
		op.Done, op.DoneTTL = e.done, msec(e.doneTTL)
	}
	if s.claim && e.entry != nil {
		op.Entry, op.N, op.Keep = e.entry.Value, e.entry.Score, int64(e.keep)
	}
	if !s.claim || (e.also == nil && e.recordN == 0) {
		return released{err: r.compareAct(ctx, "release", s.key, op)}
	}
	if e.also != nil {
		op.Also, op.AlsoValue = r.key(e.also.key), e.also.value
	}
	if e.recordN != 0 {
		op.Record, op.RecordN = r.key(e.record), e.recordN
	}
	res := make([]Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return released{err, err, err}
	}
	out := released{err: r.verdict("release", s.key, res, errs, func(rep Result) bool { return rep.Status == 1 })}
	if e.also != nil {
		out.also = r.verdict("release", e.also.key, res, errs, func(rep Result) bool { return rep.AlsoStatus == 1 })
	}
	if e.recordN != 0 {
		// Max-assign is done wherever the script ran.
		if got := r.answered(errs); got < r.quorum {
			out.record = &QuorumError{Op: "record", Key: e.record, Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
		}
	}
	return out
}
