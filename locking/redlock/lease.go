package redlock

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

func msec(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// claimKeys are the claims hash, the lives hash and the field of s, a
// claim; "" for a plain lease.
func (r *redlock) claimKeys(s driver.Lease) (claims, lives, field string) {
	if !s.Claim {
		return "", "", ""
	}
	return r.key(locking.Key{Family: s.Key.Family, Name: wire.ClaimsName}), r.key(locking.Key{Family: s.Key.Family, Name: wire.LivesName}), s.Key.Name
}

// acquireOp is the AcquireOp of s, its lease keys filled in.
func (r *redlock) acquireOp(s driver.Lease) driver.AcquireOp {
	op := driver.AcquireOp{Key: r.key(s.Key), Value: s.Value, TTL: msec(s.TTL)}
	op.Claims, op.Lives, op.Field = r.claimKeys(s)
	if s.Claim {
		op.Pause = r.pauseKey(s.Key.Family)
	}
	return op
}

// extendOp is the ExtendOp of s. It spreads the lease to a node where
// nothing holds it while fresh as a joint acquisition is (jointFresh): a
// lease won on a bare majority — a race splits the nodes between two
// acquirers, and the loser undoes its share — reaches the third node at
// its next renewal, so that one node's fault (a restart without its data,
// a failover, a stepped clock) does not leave it on a minority.
func (r *redlock) extendOp(s driver.Lease) driver.ExtendOp {
	op := driver.ExtendOp{Key: r.key(s.Key), Value: s.Value, TTL: msec(s.TTL)}
	op.Claims, op.Lives, op.Field = r.claimKeys(s)
	op.SentMS, op.FreshMS = r.clock.Now().UnixMilli(), (r.opTimeout + jointFresh).Milliseconds()
	return op
}

// releaseOp is the ReleaseOp of s, its lease keys filled in.
func (r *redlock) releaseOp(s driver.Lease) driver.ReleaseOp {
	op := driver.ReleaseOp{Key: r.key(s.Key), Value: s.Value}
	op.Claims, op.Lives, op.Field = r.claimKeys(s)
	if s.Claim {
		op.Log = r.key(locking.Key{Family: s.Key.Family, Name: wire.LogName})
	}
	return op
}

// verdict classifies a compare-and-act round: nil on a majority of nodes
// where ours holds, ErrLockLost when so many nodes answered otherwise
// that such a majority is impossible, else a *QuorumError.
func (r *redlock) verdict(name string, key locking.Key, res []driver.Result, errs []error, ours func(driver.Result) bool) error {
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
		return locking.ErrLockLost
	}
	return &locking.QuorumError{Op: name, Key: key, Need: r.quorum, Got: ok, Err: r.nodeErrs(errs)}
}

// Extend renews s on every node and classifies the answers (verdict): a
// node where it was spread (Status 2) holds it as one where it was
// extended does.
func (r *redlock) Extend(ctx context.Context, s driver.Lease, start bool) error {
	op := r.extendOp(s)
	op.Start = start && s.Claim
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, rep := range res {
		if errs[i] == nil && rep.Status == 2 {
			r.log.Debug("locking: lease spread to a node that missed it", "key", s.Key.String(), "node", r.nodes[i].Addr())
		}
	}
	return r.verdict("extend", s.Key, res, errs, func(rep driver.Result) bool { return rep.Status > 0 })
}

func (r *redlock) Release(ctx context.Context, s driver.Lease, e driver.End) driver.Released {
	op := r.releaseOp(s)
	if e.DoneTTL > 0 {
		op.Done, op.DoneTTL = e.Done, msec(e.DoneTTL)
	}
	if s.Claim && e.Entry != nil {
		op.Entry, op.N, op.Keep, op.Taken = e.Entry.Value, e.Entry.Score, int64(e.Keep), e.Taken
	}
	// A plain lease ends alone: the job lease and the record go with a
	// claim's end only.
	also, record := s.Claim && e.Also != nil, s.Claim && e.RecordValue != 0
	if also {
		op.Also, op.AlsoValue = r.key(e.Also.Key), e.Also.Value
	}
	if record {
		op.Record, op.RecordN = r.key(e.Record), e.RecordValue
	}
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		if also || record {
			return driver.Released{Err: err, Also: err, Record: err}
		}
		return driver.Released{Err: err}
	}
	out := driver.Released{Err: r.verdict("release", s.Key, res, errs, func(rep driver.Result) bool { return rep.Status == 1 })}
	if !s.Claim && e.DoneTTL == 0 {
		r.noteReleased(ctx, s, errs) // released.go
	}
	if also {
		out.Also = r.verdict("release", e.Also.Key, res, errs, func(rep driver.Result) bool { return rep.AlsoStatus == 1 })
		r.noteReleased(ctx, *e.Also, errs)
	}
	if record {
		// Max-assign is done wherever the script ran.
		if got := r.answered(errs); got < r.quorum {
			out.Record = &locking.QuorumError{Op: "record", Key: e.Record, Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
		}
	}
	return out
}
