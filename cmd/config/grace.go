package config

import (
	"fmt"
	"strconv"

	"github.com/slotlock/slotlock/jobs"
)

// checkStopGrace keeps a job's stop grace (exec kill_grace) inside the
// lease: after lock.lost the run's processes get SIGTERM and live up to the
// grace, while another replica may take the expired lease and start the
// next run. A grace the params set must be less than lock.ttl -
// lock.max_clock_skew; a default one is cut to half of that.
func (l *loader) checkStopGrace(i int, j *Job, lock Lock) {
	g, ok := j.Runner.(jobs.Graceful)
	if !ok {
		return
	}
	bound := lock.TTL - lock.MaxClockSkew
	if bound <= 0 {
		return // lock's own error says it
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
		Err: fmt.Errorf("must be less than lock.ttl - lock.max_clock_skew (%s - %s = %s), got %s: after a lost lease "+
			"the process would outlive it and overlap the next run", lock.TTL, lock.MaxClockSkew, bound, grace)})
}
