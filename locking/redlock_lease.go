package locking

import (
	"context"
	"time"
)

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
		op.Entry, op.N, op.Keep, op.Taken = e.entry.Value, e.entry.Score, int64(e.keep), e.taken
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
