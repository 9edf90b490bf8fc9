package scheduler

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Concurrency groups: at most Limit runs of the jobs that name a group
// at once, fleet-wide. A run holds one of the group's permits
// (locking.Semaphore: Limit leases on <prefix>:{_group:NAME}:permit:<i>)
// beside its claim and job lease, from before its body starts to after
// its outcome is written: the watchdog renews it with the run's other
// leases, its loss cancels the run (run.canceled reason lock_lost, as
// for the claim), and a replica that dies frees it at its TTL.
//
// The permit is the attempt's last step (attempt.go), after the claim and
// the job lease: only the replica that won the slot competes for a
// permit (the others see the slot held and pay nothing), and a slot that
// its overlap policy skips takes none. While it waits the claim is held,
// unrenewed, so the wait ends at the slot's lateness bound (never past
// half the lock TTL): the slot is then skipped with reason group_full,
// its claim ended with that entry — the body never started, so the slot
// is handled, not missed, and never recovered or backfilled.

// Group is a concurrency group as a job names it. Every job of a group
// must give the same Limit (Config.Validate).
type Group struct {
	Name  string // CheckName's form
	Limit int    // permits, 1 to MaxGroupLimit
}

// MaxGroupLimit bounds a group's limit: a slot that finds the group full
// tries every permit in turn, one lock round each.
const MaxGroupLimit = 100

// checkGroup checks a job's group.
func checkGroup(g *Group) (field, value string, err error) {
	if err := checkJobName(g.Name); err != nil {
		return "group", g.Name, err
	}
	if g.Limit < 1 || g.Limit > MaxGroupLimit {
		return "group.limit", "", fmt.Errorf("must be between 1 and %d, got %d", MaxGroupLimit, g.Limit)
	}
	return "", "", nil
}

// groupLimits reports jobs that name one group with different limits.
func groupLimits(specs []JobSpec) []error {
	var errs []error
	first := map[string]JobSpec{}
	for _, j := range specs {
		if j.Group == nil {
			continue
		}
		f, seen := first[j.Group.Name]
		if !seen {
			first[j.Group.Name] = j
			continue
		}
		if f.Group.Limit != j.Group.Limit {
			errs = append(errs, &FieldError{InJob: true, Job: j.Name, Field: "group.limit",
				Err: fmt.Errorf("group %q has limit %d in job %q, %d here", j.Group.Name, f.Group.Limit, f.Name, j.Group.Limit)})
		}
	}
	return errs
}

// GroupMetrics is an optional interface of Config.Metrics: told how many
// runs of a group this replica holds permits for (ops.Metrics'
// slotlock_group_running{group}; their sum over the replicas is the
// fleet's).
type GroupMetrics interface {
	GroupRunning(group string, running int)
}

// groupGauge counts the permits this replica holds, per group.
type groupGauge struct {
	mu      sync.Mutex
	running map[string]int
	report  GroupMetrics // nil: none
}

func newGroupGauge(m Metrics) *groupGauge {
	g := &groupGauge{running: map[string]int{}}
	g.report, _ = m.(GroupMetrics)
	return g
}

// add counts a permit of group taken (d 1) or ended (d -1).
func (g *groupGauge) add(group string, d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running[group] += d
	if g.report != nil {
		g.report.GroupRunning(group, g.running[group])
	}
}

// Permit waits: a full group is asked again after permitBackoffMin
// doubling up to permitBackoffMax (plus up to half in jitter), so that a
// permit freed is taken within a tenth of a second or so.
const (
	permitBackoffMin = 20 * time.Millisecond
	permitBackoffMax = 100 * time.Millisecond
)

// takePermit takes a permit of the job's group (none: goOn), waiting
// for one until permitUntil. Full until then: a fired slot is skipped,
// handled, with reason group_full; a backfill or a manual run fails
// without marking anything, so a later one may run the slot.
func (a *attempt) takePermit() verdict {
	g := a.j.spec.Group
	if g == nil {
		return goOn
	}
	ap := a.ap
	sem := locking.Semaphore{Name: g.Name, Limit: g.Limit}
	from := int(ap.random(a.name+"|"+a.slot+"|permit") % uint64(g.Limit))
	until, wait := permitUntil(a), permitBackoffMin
	for {
		p, err := ap.locks.permit(a.name, sem, from, retryPolicy{splitUntil: until, quorumUntil: until, trace: a.tctx})
		if err == nil {
			a.permit = p
			ap.groups.add(g.Name, 1)
			return tokenAfterPermit(a, until)
		}
		if !locking.IsHeld(err) {
			return a.lost(err)
		}
		now := ap.clock.Now()
		d := wait + ap.randomN(a.name+a.slot, wait/2+1)
		wait = min(2*wait, permitBackoffMax)
		if !now.Add(d).Before(until) {
			return groupFull(a, g)
		}
		if !ap.sleep(d, ap.stopping) {
			return verdict{act: actRelease, reason: history.ReasonShutdown, attrs: []any{"group", g.Name}}
		}
		from++
	}
}

// The permit's helpers are functions of the attempt, not its methods:
// they are the group step's parts, and the attempt's methods are its
// pipeline's steps and exit (TestEngineShape).

// tokenAfterPermit gives a run of a job that holds no job lease
// (overlap allow) a fencing token taken now, after its permit: the
// claim's, taken before the wait, may be below that of a newer slot of
// the job that found a permit first and started earlier, and the run
// that starts later must have the higher token. As a manual run does
// (runLease), it takes a lease of its own in the job's family, held and
// ended as the job lease is.
func tokenAfterPermit(a *attempt, until time.Time) verdict {
	if a.jobLease != nil || a.origin == originManual {
		return goOn
	}
	ap := a.ap
	key := locking.Key{Family: a.name, Name: "group:" + strconv.FormatUint(ap.random(a.name+a.slot+"|token"), 16)}
	l, err := ap.locks.acquire(a.name, key, retryPolicy{splitUntil: until, quorumUntil: until, trace: a.tctx})
	if err != nil {
		return a.lost(err) // the exit ends the permit
	}
	a.jobLease = l
	return goOn
}

// permitUntil is how long a permit is waited for: a scheduled slot until
// its lateness bound, the others for the lateness bound from now; never
// past half the lock TTL, since the claim is not renewed meanwhile.
func permitUntil(a *attempt) time.Time {
	now := a.ap.clock.Now()
	until := now.Add(a.ap.lateness)
	if a.origin == originScheduled {
		until = a.fresh
	}
	return minTime(until, now.Add(a.ap.cfg.LockTTL/2))
}

// groupFull is the verdict on a slot that found g full until its bound.
func groupFull(a *attempt, g *Group) verdict {
	attrs := []any{"group", g.Name, "limit", g.Limit}
	if a.origin.fired() {
		return verdict{act: actDone, reason: history.ReasonGroupFull, attrs: attrs, entry: a.skippedEntry(history.ReasonGroupFull)}
	}
	return verdict{act: actRelease, reason: history.ReasonGroupFull, attrs: attrs,
		err: fmt.Errorf("scheduler: %s %s: %w: every permit of group %q (limit %d) is taken", a.name, a.slot, ErrGroupFull, g.Name, g.Limit)}
}

// ErrGroupFull is returned by a backfill or a manual run (RunSlot,
// Trigger) that found every permit of its job's group taken for the
// lateness bound.
var ErrGroupFull = errors.New("scheduler: concurrency group full")

// endPermit ends the attempt's permit, if it took one: after the slot's
// outcome is written, so that the next run of the group starts after
// this one is recorded.
func endPermit(a *attempt) {
	if a.permit == nil {
		return
	}
	a.ap.outcomes.endLease(a.name, a.slot, a.permit, 0, "")
	group, _ := locking.IsPermit(a.permit.Grant().Key) // the group it was taken in, whatever a reload did since
	a.ap.groups.add(group, -1)
	a.permit = nil
}

// permit takes one free permit of s, trying them in turn from from, each
// under p (split votes and a missing majority retried as p says; a held
// permit is not waited for: the next is tried). It returns a held error
// when every permit is taken.
func (lk *locks) permit(job string, s locking.Semaphore, from int, p retryPolicy) (*locking.Lease, error) {
	var held error
	for n := range s.Limit {
		l, err := lk.acquire(job, s.Permit((from+n)%s.Limit), p)
		if err == nil || !locking.IsHeld(err) {
			return l, err
		}
		held = err
	}
	return nil, held
}
