package config

import (
	"fmt"
	"strconv"

	"github.com/slotlock/slotlock/jobs"
)

// checkStopGrace keeps a job's stop grace (exec kill_grace) inside the
// lease: while renewals fail the scheduler cancels such a run a grace
// before its lease's validity ends (scheduler/grace.go), so that its
// processes are gone before another replica can take the lease. A healthy
// lease's validity dips to about 2/3 of lock.ttl before each renewal, so
// the grace must be less than lock.ttl/2 - lock.max_clock_skew (a longer
// one would cancel healthy runs, or go unwatched); a grace the params set
// is an error past that, a default one is cut to half of it. (The issue
// asked for lock.ttl - lock.max_clock_skew: that bound lets the grace
// outlast the validity left before a renewal.)
func (l *loader) checkStopGrace(i int, j *Job, lock Lock) {
	g, ok := j.Runner.(jobs.Graceful)
	if !ok {
		return
	}
	bound := lock.TTL/2 - lock.MaxClockSkew
	if bound <= 0 {
		return // no grace fits: the scheduler does not watch it (lock's own checks say the rest)
	}
	grace, configured := g.StopGrace()
	if grace < bound {
		return
	}
	if !configured {
		j.Runner = g.WithStopGrace(bound / 2)
		return
	}
	p := "jobs[" + strconv.Itoa(i) + "].params.kill_grace"
	l.errs = append(l.errs, &Error{Path: p, Index: i, Job: j.Name, Where: l.where(p),
		Err: fmt.Errorf("must be less than lock.ttl/2 - lock.max_clock_skew (%s/2 - %s = %s), got %s: after a lost lease "+
			"the process would outlive it and overlap the next run", lock.TTL, lock.MaxClockSkew, bound, grace)})
}
