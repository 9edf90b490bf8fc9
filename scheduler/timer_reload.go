package scheduler

import (
	"container/heap"
	"context"
	"fmt"
	"time"
)

// Hot reload: Reload checks new job definitions as New does and hands them
// to the loop goroutine, which owns every job's next slot; between two of
// its ticks the loop swaps the job set. The job set (defs) is immutable:
// readers on other goroutines — slots, runs, the reconciler, Trigger,
// Next — load the pointer once and see either the old set or the new one.
//
// What a swap does to each job, by name:
//
//   - added (or enabled): it fires from its first slot due after the swap;
//   - removed (or disabled): it fires no more; a slot already fired, a run
//     going on, a misfire recovery under way end normally, under the old
//     definition;
//   - slots changed (schedule, time zone, jitter): the new definition fires
//     every slot of the new schedule that the old one did not fire — its
//     slots due after the swap, and those from the old definition's next
//     slot on — so a slot of both schedules runs once and none is dropped;
//   - otherwise: it goes on at the same next slot with the new definition
//     (timeout, retries, plugin parameters, ...).
//
// A kept job (changed or not) shares its state with its old definition:
// the record of its latest handled slot, a slot awaiting run_once recovery,
// whether it is paused. Its record and done markers live in the stores by
// the job's name, so other replicas — with the old definition or the new
// one, during a rolling change — and this one still agree slot by slot.

// ReloadResult says what a reload changed, by job name, in configuration
// order (a removed job in the old order).
type ReloadResult struct {
	Added       []string // new jobs
	Removed     []string // jobs no longer defined
	Rescheduled []string // kept jobs whose slots changed: schedule, time zone, jitter or enabled
}

// reloadReq is a reload handed to the loop.
type reloadReq struct {
	defs *defs
	done chan ReloadResult // buffered: the loop never waits on it
}

// applyReload puts req's job set in force: on the loop goroutine, which
// owns h and every job's next slot.
func (tm *timer) applyReload(h *jobHeap, req reloadReq) {
	now := tm.clock.Now()
	old, next := tm.jobSet(), req.defs
	next.since = now
	// The view of the fleet names the replicas that ran the old
	// definitions (fleet_view.go): until it is read again, every replica
	// is a candidate, so that no slot of the new ones waits for a
	// fallback — one that, Fallback late, could start after a slot of
	// the old schedule that another replica runs, with a lower token.
	tm.ranks.dropView()
	var res ReloadResult
	for _, j := range next.order {
		prev := old.byName[j.name()]
		if prev != nil {
			tm.notePolicyChange(prev, j, now)
		}
		switch {
		case prev == nil:
			res.Added = append(res.Added, j.name())
			j.since = now
			if !j.spec.Disabled {
				slot, _ := j.spec.NextDue(now)
				tm.setNext(j, slot)
			}
		case sameSlots(&prev.spec, &j.spec):
			j.jobState, j.since = prev.jobState, prev.since
			if !j.spec.Disabled {
				tm.setNext(j, prev.next)
			}
		default:
			res.Rescheduled = append(res.Rescheduled, j.name())
			j.jobState, j.since = prev.jobState, now
			// Replicas not reloaded yet fire its slots with the old
			// jitter: this one's markers outlive them (fleet_defs.go).
			j.noteJitter(prev.spec.Jitter)
			j.replaced = replacedChain(prev, now)
			if !prev.next.IsZero() && !prev.spec.Disabled {
				j.dueFloor, j.floorFrom = now, prev.next
			}
			if !j.spec.Disabled {
				tm.setNext(j, continueAt(prev, &j.spec, now))
			}
		}
	}
	var gone []*job
	for _, j := range old.order {
		if _, kept := next.byName[j.name()]; !kept {
			res.Removed = append(res.Removed, j.name())
			gone = append(gone, j)
		}
	}
	fillHeap(h, next)
	tm.defs.Store(next)
	tm.retire(gone)
	req.done <- res
}

// sameSlots reports whether a and b fire the same slots at the same times.
func sameSlots(a, b *JobSpec) bool {
	return a.Spec == b.Spec && locationName(a.Location) == locationName(b.Location) &&
		a.Jitter == b.Jitter && a.Disabled == b.Disabled && a.Calendar.Equal(b.Calendar)
}

func locationName(l *time.Location) string {
	if l == nil {
		return "UTC"
	}
	return l.String()
}

// notePolicyChange opens, when a reload changes j's overlap policy to or
// from allow, the window in which its slots look for the runs that started
// under the old policy. From allow to forbid or replace, those runs hold
// no job lease: its slots read the open claims (allowRuns). From forbid or
// replace to allow, they hold it: its slots take it too (takeJobLease,
// guards_rolling.go). Either kind may go on for its timeout (a day when it
// has none) and a lease's time.
func (tm *timer) notePolicyChange(prev, j *job, now time.Time) {
	wasAllow, isAllow := prev.spec.Overlap == OverlapAllow, j.spec.Overlap == OverlapAllow
	switch {
	case wasAllow && !isAllow:
		prev.mu.Lock()
		prev.allowRunsUntil = now.Add(prev.runsLast(tm.cfg.LockTTL))
		prev.mu.Unlock()
	case !wasAllow && isAllow:
		prev.watchLeaseRuns(now, tm.cfg.LockTTL)
	}
}

// fillHeap makes h the heap of next's jobs that have a slot to fire.
func fillHeap(h *jobHeap, next *defs) {
	*h = (*h)[:0]
	for _, j := range next.order {
		if !j.spec.Disabled && !j.next.IsZero() {
			*h = append(*h, j)
		}
	}
	for i, j := range *h {
		j.heapIdx = i
	}
	heap.Init(h)
}

// retire keeps the jobs a reload removed, whose slots fired already may
// still end, and flushes their records: as far as this replica handled
// them, a job added again later starts its misfire check from there.
func (tm *timer) retire(gone []*job) {
	if len(gone) == 0 {
		return
	}
	tm.mu.Lock()
	for _, j := range gone {
		tm.retired[j.name()] = j
	}
	tm.mu.Unlock()
	tm.spawn(func() {
		for _, j := range gone {
			tm.records.flushRecord(j)
		}
	})
}

// continueAt is the first slot that spec, the new definition of prev's
// job, fires after a swap at now: the earlier of its first slot due after
// now and its first slot at or after prev's next slot (prev fired every
// slot before that one, and none from it on) — but never a slot that prev
// fired already (a slot of both schedules before prev's next one, due after
// now under a changed jitter).
func continueAt(prev *job, spec *JobSpec, now time.Time) time.Time {
	t, _ := spec.NextDue(now)
	if prev.spec.Disabled || prev.next.IsZero() {
		return t // prev fires nothing more: a new start
	}
	if d := spec.Schedule.Next(prev.next.Add(-time.Second)); !d.IsZero() && (t.IsZero() || d.Before(t)) {
		t = d
	}
	for n := 0; !t.IsZero() && t.Before(prev.next) && n < maxCatchUp; n++ {
		if !prev.spec.Schedule.Next(t.Add(-time.Second)).Equal(t) {
			break // not one of prev's slots: prev never fired it
		}
		t = spec.Schedule.Next(t)
	}
	return t
}

// reload is Scheduler.Reload: the job set built and handed to the loop.
func (tm *timer) reload(ctx context.Context, hash string, specs []JobSpec) (ReloadResult, error) {
	d, err := tm.buildJobs(specs, tm.clock.Now())
	if err != nil {
		return ReloadResult{}, err
	}
	d.hash = hash
	if d.hash == "" {
		d.hash = specsHash(d.order)
	}
	req := reloadReq{defs: d, done: make(chan ReloadResult, 1)}
	if tm.isStopping() {
		return ReloadResult{}, fmt.Errorf("%w: no reload while shutting down", ErrStopped)
	}
	if ctx.Err() != nil {
		// Given up before it was sent (a process frozen past its deadline
		// reads the clock above only once it resumes): not applied. Left
		// to the select below, with the loop ready too, it would be
		// applied or not as the Go runtime picks a ready case, and the
		// caller told it failed either way.
		return ReloadResult{}, context.Cause(ctx)
	}
	select {
	case tm.reloads <- req:
	case <-tm.stopping:
		return ReloadResult{}, fmt.Errorf("%w: no reload while shutting down", ErrStopped)
	case <-ctx.Done():
		return ReloadResult{}, context.Cause(ctx)
	}
	return <-req.done, nil
}
