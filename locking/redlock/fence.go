package redlock

import (
	"context"
	"errors"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// maxFenceRounds bounds the write-back rounds of one acquisition that
// keeps meeting concurrent acquisitions of its family.
const maxFenceRounds = 16

// claimToken makes t, or the lowest token above every counter it meets,
// this acquisition's token: it sets the family counter to t on the nodes
// that answered the acquire round (acqErrs nil) where it is lower, and
// succeeds when that happened on a majority. Two acquisitions cannot both
// succeed with one t (their majorities share a node, where the second
// finds t already), so tokens are unique; any acquisition that completed
// before this one began left its token on a majority, which this one's
// majority meets, so tokens increase in that order.
func (r *redlock) claimToken(ctx context.Context, key locking.Key, fenceKey string, t uint64, acqErrs []error) (uint64, error) {
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	for range maxFenceRounds {
		if r.hookBeforeFence != nil {
			r.hookBeforeFence(key)
		}
		if t > wire.MaxRecord {
			return 0, errors.New("locking: fencing token out of range (2^53)")
		}
		op := driver.FenceOp{Key: fenceKey, N: int64(t)}
		r.round(ctx, func(i int) (driver.Op, bool) { return op, acqErrs[i] == nil }, res, errs)
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		set, answered, top := 0, 0, t
		for i, rep := range res {
			if acqErrs[i] != nil || errs[i] != nil {
				continue
			}
			answered++
			if rep.Status == 1 {
				set++
			}
			top = max(top, uint64(rep.N))
		}
		if set >= r.quorum {
			return t, nil
		}
		if answered < r.quorum {
			for i := range errs {
				if acqErrs[i] != nil {
					errs[i] = acqErrs[i]
				}
			}
			return 0, &locking.QuorumError{Op: "acquire", Key: key, Need: r.quorum, Got: answered, Err: r.nodeErrs(errs)}
		}
		r.learnToken(key.Family, top)
		t = top + 1
	}
	// Contended for maxFenceRounds rounds: nobody may hold this lease;
	// the caller retries like after a split vote.
	return 0, &locking.SplitVoteError{Held: &locking.HeldError{Key: key}}
}

// propose returns this locker's proposal for the next token in family:
// one more than the highest token it has seen or proposed there, so that
// its own concurrent acquisitions propose different tokens.
func (r *redlock) propose(family string) uint64 {
	r.tokMu.Lock()
	defer r.tokMu.Unlock()
	if r.tokens == nil || len(r.tokens) >= maxKnownFamilies {
		// A hint only: forgetting costs one extra round on the next
		// acquisition of each family.
		r.tokens = make(map[string]uint64)
	}
	r.tokens[family]++
	return r.tokens[family]
}

// learnToken raises the hint for family to t.
func (r *redlock) learnToken(family string, t uint64) {
	r.tokMu.Lock()
	defer r.tokMu.Unlock()
	if t <= r.tokens[family] {
		return
	}
	if r.tokens == nil {
		r.tokens = make(map[string]uint64)
	}
	r.tokens[family] = t
}

// maxKnownFamilies bounds the token hints kept per locker.
const maxKnownFamilies = 4096
