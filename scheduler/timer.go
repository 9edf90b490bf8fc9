package scheduler

import (
	"container/heap"
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The loop: one goroutine owns every job's next slot, sleeps until the
// earliest is due (at most heartbeatEvery), and hands each due slot to
// admission (admission.go: a goroutine of its own once its claim may be
// sent, attempt.go) or, when late, to the misfire policy. When a slot is
// due on this replica depends on its rank among the slot's candidates
// (slot_ranks.go: slotDelay): at once, or, for a later candidate or a
// fallback, only if nobody handled it (admission_check.go), or, past
// the fallbacks, never: the slot is only stepped over.

// timer is the component that knows which slots are due when: the loop
// goroutine owns every job's next slot and due time (job.next, job.due),
// and puts a reloaded job set in force between two of its ticks
// (timer_reload.go). It hands fresh slots to admission (admit), late
// ones to the misfire policy (late), and asks the fleet for this
// replica's delay for each slot (ranks).
type timer struct {
	*engine
	admit   dueSlots
	late    misfirePolicy
	ranks   slotRanks
	records recordFlusher

	reloads   chan reloadReq // Reload's requests, taken by the loop
	heartbeat atomic.Int64   // the loop's last tick, UnixNano on the clock

	mu      sync.Mutex
	retired map[string]*job // by name, jobs a reload removed: their records are flushed at the end
}

// dueSlots takes the slots the loop fires: each fresh one the first
// candidate tries, and those due at one instant that a later candidate or
// a fallback checks first, together (admission_check.go).
type dueSlots interface {
	fireSlot(j *job, t time.Time)
	checkHandled(checks []dueSlot)
}

// misfirePolicy applies j's misfire policy to slots that fired late
// (misfire.go).
type misfirePolicy interface {
	handle(j *job, late lateRange)
}

// slotRanks is this replica's delay for a slot and its role (a
// candidate, a fallback or idle), over its view of the fleet
// (slot_ranks.go).
type slotRanks interface {
	slotDelay(job string, t time.Time) (time.Duration, slotRole)
	fallbackDelay(j *job, t time.Time) time.Duration
	dropView()
}

// recordFlusher writes a job's pending last-slot record (outcomes_records.go).
type recordFlusher interface {
	flushRecord(j *job)
}

func newTimer(e *engine, admit dueSlots, late misfirePolicy, ranks slotRanks, records recordFlusher) *timer {
	return &timer{engine: e, admit: admit, late: late, ranks: ranks, records: records,
		reloads: make(chan reloadReq), retired: map[string]*job{}}
}

// retiredJobs are the jobs reloads removed.
func (tm *timer) retiredJobs() []*job {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return slices.Collect(maps.Values(tm.retired))
}

// jobHeap orders the jobs by when their next slot is due.
type jobHeap []*job

func (h jobHeap) Len() int { return len(h) }

func (h jobHeap) Less(a, b int) bool { return h[a].due.Before(h[b].due) }

func (h jobHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].heapIdx = a
	h[b].heapIdx = b
}

func (h *jobHeap) Push(x any) { j := x.(*job); j.heapIdx = len(*h); *h = append(*h, j) }

func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	*h = old[:len(old)-1]
	return j
}

// maxCatchUp bounds how many past slots the loop enumerates for one job
// after a long pause; beyond it the count of late slots is a lower bound.
const maxCatchUp = 100_000

// loop is the one goroutine that owns the jobs' next slots. It never blocks
// on the lock stores: every slot is handled on its own goroutine.
func (tm *timer) loop(ctx context.Context, start time.Time) {
	jobs := tm.jobList()
	h := make(jobHeap, 0, len(jobs))
	for _, j := range jobs {
		if j.spec.Disabled {
			continue
		}
		// The first slot due after the start (startupCheck looks at the
		// ones due before it).
		first, _ := j.spec.NextDue(start)
		tm.setNext(j, first)
		if !j.next.IsZero() {
			heap.Push(&h, j)
		}
	}
	timer := tm.clock.NewTimer(heartbeatEvery)
	defer timer.Stop()
	for {
		now := tm.clock.Now()
		tm.heartbeat.Store(now.UnixNano())
		var checks []dueSlot // the slots to check due now: checked together
		for len(h) > 0 && !h[0].due.After(now) {
			j := h[0]
			checks = tm.fireDue(j, now, checks)
			if j.next.IsZero() {
				heap.Pop(&h)
			} else {
				heap.Fix(&h, 0)
			}
		}
		tm.admit.checkHandled(checks) // admission_check.go
		wait := heartbeatEvery
		if len(h) > 0 {
			wait = min(wait, h[0].due.Sub(now))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		case req := <-tm.reloads:
			tm.applyReload(&h, req) // timer_reload.go
		}
	}
}

// lateRange describes consecutive slots of one job that fired late.
type lateRange struct {
	first, prev, last time.Time // prev: the slot before last (zero when count is 1)
	count             int
	atLeast           bool // count is a lower bound (maxCatchUp reached)
	// woke: the loop found them late on waking (this replica paused or
	// starved), not one slot an attempt gave up: the misfire policy looks
	// up which of them other replicas handled (misfire_handled.go).
	woke bool
}

// older is r without its last slot (false when that leaves none): prev
// ends it or, where counting stopped (atLeast, prev unknown), the slot
// before last by sched.
func (r lateRange) older(sched Schedule) (lateRange, bool) {
	o := r
	o.count--
	o.last, o.prev = r.prev, time.Time{}
	if o.last.IsZero() && r.atLeast {
		o.last = prevSlot(sched, r.last.Add(-time.Nanosecond))
	}
	if o.count < 1 || o.last.IsZero() || o.last.Before(o.first) {
		return lateRange{}, false
	}
	return o, true
}

func (r *lateRange) add(t time.Time) {
	if r.count == 0 {
		r.first = t
	}
	r.prev, r.last = r.last, t
	r.count++
}

// setNext makes t the job's next slot, fired at its due time (jitter)
// plus this replica's spread.
func (tm *timer) setNext(j *job, t time.Time) {
	j.next = t
	if !t.IsZero() {
		j.due = tm.fireAt(j, t)
	}
}

// fireAt is when this replica fires slot t of j: its due time plus this
// replica's delay for it (slotDelay: a candidate's, the fallback's, or
// none for an idle replica, which only steps over the slot then).
func (tm *timer) fireAt(j *job, t time.Time) time.Time {
	at, _ := tm.fireTime(j, t)
	return at
}

// fireTime is fireAt, and this replica's role for slot t. A later
// candidate looks no later than the fallbacks.
func (tm *timer) fireTime(j *job, t time.Time) (time.Time, slotRole) {
	d, role := tm.ranks.slotDelay(j.name(), t)
	switch role {
	case roleFallback:
		d = tm.ranks.fallbackDelay(j, t)
	case roleSecond:
		d = min(d, tm.ranks.fallbackDelay(j, t))
	}
	return j.dueAt(t).Add(d), role
}

// fireDue hands every slot of j that is due at now on: fresh slots to
// admission, which attempts them on a goroutine each when their turn
// comes — those of which this replica is a later candidate or a
// fallback are added to checks,
// and it returns checks; those of which it is idle are stepped over —
// late ones (more than the lateness bound after their due time) go to the
// misfire policy, whatever the role: a replica that wakes late does not
// know what the others did, and the policy looks it up.
func (tm *timer) fireDue(j *job, now time.Time, checks []dueSlot) []dueSlot {
	late := lateRange{woke: true}
	t := j.next
	for n := 1; !t.IsZero(); n++ {
		at, role := tm.fireTime(j, t)
		if at.After(now) {
			break
		}
		if n > maxCatchUp {
			// Paused for very long: stop counting, resume from the slots
			// that are still fresh.
			late.atLeast = true
			t, _ = j.spec.NextDue(now.Add(-tm.lateness))
			break
		}
		switch {
		case now.Sub(j.dueAt(t)) > tm.lateness:
			late.add(t)
		case role == roleFallback || role == roleSecond:
			checks = append(checks, dueSlot{j: j, t: t, candidate: role == roleSecond})
		case role == roleCandidate:
			tm.admit.fireSlot(j, t) // admission.go: started, queued or shed
		}
		t = j.spec.Schedule.Next(t)
	}
	tm.setNext(j, t)
	if late.count > 0 {
		// A copy for the goroutine: late itself stays on the stack, so a
		// slot stepped over allocates nothing.
		r := late
		tm.spawn(func() { tm.late.handle(j, r) })
	}
	if j.next.IsZero() {
		tm.log.Warn("job has no more slots", "event", evScheduleExhausted, "job", j.name(), "schedule", j.spec.Spec)
	}
	return checks
}
