package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
)

// A job that goes on for a while after its ctx is canceled (jobs.Graceful:
// exec's kill_grace) must be canceled that much before its lease can
// expire: after lock.lost another replica may take the expired lease and
// start the next run at once, while this run's processes still have their
// grace. So while renewals fail, the run is canceled (cause
// locking.ErrLockLost) as soon as less than its grace is left of its
// leases' validity; then it has ended by the time the lease can expire.
//
// A healthy lease is renewed every TTL/3, so its validity never drops
// below about 2/3 TTL: a grace under TTL/2 never cancels a healthy run.
// A longer grace cannot be protected this way and is not watched (the
// command's configuration refuses one: kill_grace < lock.ttl/2 -
// lock.max_clock_skew).

// watchGrace arms the watch for r's job when it has a grace; it ends with
// the run.
func (ap *attempts) watchGrace(ctx context.Context, cancel context.CancelCauseFunc, j jobs.Job, leases []*locking.Lease) {
	g, ok := j.(jobs.Graceful)
	if !ok {
		return
	}
	grace, _ := g.StopGrace()
	if grace <= 0 || grace >= ap.cfg.LockTTL/2 {
		return
	}
	ap.spawn(func() {
		for {
			left := ap.validLeft(leases)
			if left <= grace {
				cancel(fmt.Errorf("%w: %s of validity left, less than the job's stop grace %s", locking.ErrLockLost,
					left.Round(time.Millisecond), grace))
				return
			}
			if !ap.sleep(left-grace, ctx.Done()) {
				return
			}
		}
	})
}

// validLeft is how long the first of leases to expire stays valid.
func (ap *attempts) validLeft(leases []*locking.Lease) time.Duration {
	now := ap.clock.Now()
	left := time.Duration(1<<63 - 1)
	for _, l := range leases {
		left = min(left, l.ValidUntil().Sub(now))
	}
	return left
}
