package locking

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Semaphore is a counting lock shared by every replica: at most Limit
// leases of it (permits) are held at once, fleet-wide. A permit is an
// ordinary lease on one of Limit keys of the family "_group:<Name>"
// (Permit), so everything a lease guarantees holds for it unchanged and
// on every driver alike: it is held only on a majority of the stores, a
// failed majority is undone where it landed, the watchdog (Keep) renews
// it and cancels the work when it is lost, a crashed holder frees it at
// its TTL, and its token fences what the holder writes.
//
// Why Limit keys and not one counter per store (a sorted set of holders,
// each store admitting up to Limit): counted per store, majorities
// overlap too little to bound the holders. With 3 stores and Limit 2,
// A on stores {1,2}, B on {2,3} and C on {1,3} each hold a majority
// while no store holds more than 2: three permits out of two. One key per
// permit inherits the lease's proof of exclusion instead (two majorities
// of one key share a store, which admits one holder). The cost is up to
// Limit acquire rounds for a caller that finds the group full, small for
// the limits a group is meant for (a few heavy jobs at once).
type Semaphore struct {
	Name  string // the group; the keys' family is "_group:" + Name
	Limit int    // permits, at least 1
}

// semaphoreFamily is the family prefix of a semaphore's keys. Job
// families cannot begin with "_" (the scheduler's names), so a group
// never shares a family with a job.
const semaphoreFamily = "_group:"

// Permit is the key of permit i (0 ≤ i < Limit):
// <prefix>:{_group:<Name>}:permit:<i> on Redis.
func (s Semaphore) Permit(i int) Key {
	return Key{Family: semaphoreFamily + s.Name, Name: "permit:" + strconv.Itoa(i)}
}

// IsPermit reports whether k is a semaphore's permit, and names its group.
func IsPermit(k Key) (group string, ok bool) {
	group, ok = strings.CutPrefix(k.Family, semaphoreFamily)
	return group, ok && strings.HasPrefix(k.Name, "permit:")
}

// Acquire tries once to take a free permit for ttl, trying the permits
// in turn from permit from (mod Limit; callers spread their starts so
// that they do not all queue on permit 0). It returns the lease of the
// first one taken. When every permit is held it returns a *HeldError
// (errors.Is ErrNotAcquired) naming the last holder seen; a *QuorumError,
// a split vote or ctx.Err() is returned as soon as one permit's try
// fails so, since the next permit is asked of the same stores.
func (s Semaphore) Acquire(ctx context.Context, lk Locker, ttl time.Duration, from int) (*Lease, error) {
	if s.Limit < 1 {
		return nil, fmt.Errorf("locking: semaphore %q: limit %d, want at least 1", s.Name, s.Limit)
	}
	from = ((from % s.Limit) + s.Limit) % s.Limit
	var held error
	for n := 0; n < s.Limit; n++ {
		l, err := lk.Acquire(ctx, s.Permit((from+n)%s.Limit), ttl)
		if err == nil {
			return l, nil
		}
		if !IsHeld(err) {
			return nil, err
		}
		held = err
	}
	return nil, held
}

// IsHeld reports a refusal because another lease holds the key (not a
// done marker, not a split vote): for a permit, this one is taken.
func IsHeld(err error) bool {
	var he *HeldError
	if err == nil || errors.Is(err, ErrSplitVote) {
		return false
	}
	return errors.As(err, &he) && !he.Done
}
