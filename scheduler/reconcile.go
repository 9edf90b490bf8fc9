package scheduler

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Missed-slot accounting. Every replica computes the same slots, so the
// fleet can tell which slots should have had an outcome. Every
// ReconcileEvery one replica — whoever takes the reconciler lease in
// history.FleetFamily — walks each job's slots from where the last pass stopped
// (the job's record "reconciled") up to ReconcileAfter ago, and for every
// slot without an entry in the slot history:
//
//   - whose claim is still open (a run going on, or an abandoned one not
//     yet settled): it stops there, and looks again next time; an
//     abandoned claim it settles at once (settleOrphan), as the next claim
//     of the job pointed to it would — which may never come;
//   - that the job's pause covers: it writes the paused entry (the
//     replicas that skipped it write it too; identical entries are one);
//   - otherwise it writes a missed entry and logs slot.missed (warn) and
//     counts slotlock_slots_missed_total, with the reason: no_quorum when
//     a replica recorded a lock-store outage around the slot, no_replica
//     when no replica's heartbeat covers it, else unknown.
//
// The entry is written on a majority before the event is logged, under
// the lease, and the record then moves past the slot: each missed slot is
// reported once, fleet-wide (a reconciler that dies between the two
// reports nothing for that slot: never twice). The write is fenced by the
// lease's token (the job family's register "reconciler": a reconciler
// that froze past its lease cannot write once its successor has) and
// made only where the slot has no entry yet: the one pass whose write
// added the entry on a majority reports it, whichever of two passes that
// overlapped in time wrote first. Slots older than a day
// (history.Retention), older than the history can hold, or from before the
// job's definitions first ran (pass.firstStart) are not judged; slots
// that grew older than a day before a pass could judge them (it stalled
// behind a claim open that long, or no pass ran) are logged once as
// reconcile.unjudged (warn), never dropped silently.

// Key names in a job's family and in history.FleetFamily.
const (
	reconciledName = "reconciled" // a job's record: the latest slot judged, Unix seconds
	reconcilerName = "reconciler" // history.FleetFamily: the reconciler's lease; a job's: the fence of its writes
)

// reconcileLoop runs a pass every ReconcileEvery until the scheduler stops.
func (s *Scheduler) reconcileLoop(started time.Time) {
	for s.sleep(s.cfg.ReconcileEvery, s.stopping) {
		s.reconcile(started)
	}
}

// reconcile runs one pass if this replica takes the reconciler's lease. The
// lease is left to expire (it lasts ReconcileEvery), so that about one
// pass runs per ReconcileEvery across the fleet.
func (s *Scheduler) reconcile(started time.Time) {
	ctx := context.Background() // each call has its own timeout; the pass stops with the scheduler
	actx, acancel := context.WithTimeout(ctx, storeTimeout)
	lease, err := s.cfg.Locker.Acquire(actx, locking.Key{Family: history.FleetFamily, Name: reconcilerName},
		max(s.cfg.ReconcileEvery, time.Second))
	acancel()
	if err != nil {
		return // another replica has it, or no majority answers
	}
	p := pass{s: s, lease: lease, started: started}
	for _, j := range s.jobList() {
		if s.isStopping() {
			return
		}
		if j.spec.Disabled || s.cfg.HistoryKeep <= 0 {
			continue
		}
		if err := p.job(ctx, j); err != nil {
			if !errors.Is(err, errPassOver) {
				s.log.Debug("reconciler: job not reconciled this time", "job", j.name(), "error", err.Error())
			}
			if errors.Is(err, errPassOver) {
				return
			}
		}
	}
}

// errPassOver: the reconciler's lease ran out (or is about to).
var errPassOver = errors.New("scheduler: reconciler lease over")

// pass is one reconciler pass.
type pass struct {
	s       *Scheduler
	lease   *locking.Lease
	started time.Time
	fleet   *history.Fleet // read when first needed: most passes find nothing to judge
}

// readFleet returns the fleet's records, read once per pass.
func (p *pass) readFleet(ctx context.Context) (history.Fleet, error) {
	if p.fleet == nil {
		f, err := history.ReadFleet(ctx, p.s.cfg.Locker)
		if err != nil {
			return history.Fleet{}, err
		}
		p.fleet = &f
	}
	return *p.fleet, nil
}

// own keeps the lease: it renews it when half of it is gone, and fails
// when it cannot be sure to hold it for a store call more.
func (p *pass) own(ctx context.Context) error {
	left := p.lease.ValidUntil().Sub(p.s.clock.Now())
	if left > p.lease.Grant().TTL/2 {
		return nil
	}
	ectx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := p.lease.Extend(ectx); err != nil {
		return errPassOver
	}
	return nil
}

// firstStart is when the job definitions this replica runs were first
// running, as far as the heartbeats tell (else since when this replica
// runs them: its start, or its latest reload): a job's first pass judges
// its slots from then on. So slots missed between a first deploy and the
// first pass are judged, and a job added by a deploy is not judged from
// before it existed.
func (p *pass) firstStart(fleet history.Fleet) time.Time {
	d := p.s.jobSet()
	first := p.started
	if !d.since.IsZero() {
		first = d.since
	}
	for _, r := range fleet.Replicas {
		if r.DefinitionsHash == d.hash && r.DefinitionsSinceOrStart().Before(first) {
			first = r.DefinitionsSinceOrStart()
		}
	}
	return first
}

// reconcileAfter is how old a slot of j must be before it is judged: past
// every normal attempt at its due time and, under run_once and run_all,
// past the recovery deadline.
func (s *Scheduler) reconcileAfter(j *job) time.Duration {
	d := max(s.cfg.ReconcileAfter, s.recoverAfter()+max(s.cfg.Spread, 0)+time.Second)
	if j.spec.Misfire.Policy.recovers() {
		d = max(d, j.spec.Misfire.Deadline+s.recoverAfter()+time.Second)
	}
	return d + j.spec.Jitter // a slot is due up to Jitter after its nominal time
}

// SettleAfter is how old a slot of the named job may be and still have no
// history entry with nothing wrong: the reconciler judges a slot once it
// is reconcileAfter old, at its next pass (the slot timeline's pending).
// 0 for a job the scheduler does not have.
func (s *Scheduler) SettleAfter(job string) time.Duration {
	j, _ := s.job(job)
	if j == nil {
		return 0
	}
	return s.reconcileAfter(j) + max(s.cfg.ReconcileEvery, 0)
}

// job judges j's slots since the job's record.
func (p *pass) job(ctx context.Context, j *job) error {
	s, name := p.s, j.name()
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := p.own(ctx); err != nil {
		return err
	}
	now := s.clock.Now()
	rec := locking.Key{Family: name, Name: reconciledName}
	w, err := s.cfg.Locker.ReadRecord(ctx, rec)
	if err != nil {
		return err
	}
	from := time.Unix(w, 0)
	if w == 0 {
		fleet, err := p.readFleet(ctx)
		if err != nil {
			return err
		}
		from = p.firstStart(fleet) // a replica takes part from the first slot after its start
	}
	// A job a reload added or rescheduled here has run as it is since then
	// on this replica, which fires each of its slots after that: earlier
	// ones are another definition's (docs/configuration.md, "Hot reload").
	from = later(from, j.since)
	if cut := now.Add(-history.Retention); from.Before(cut) {
		if err := p.unjudged(ctx, j, from, cut); err != nil {
			return err
		}
		from = cut
	}
	to := now.Add(-s.reconcileAfter(j))
	// At most half the history per pass, so that the entries the pass
	// judges by are still there.
	slots := slotsBetween(j.spec.Schedule, from, to, max(1, s.cfg.HistoryKeep/2))
	if len(slots) == 0 {
		return nil
	}
	log, err := s.cfg.Locker.ReadLog(ctx, name, slots[0].Unix(), s.cfg.HistoryKeep)
	if err != nil {
		return err
	}
	have := make(map[int64]bool, len(log))
	for _, e := range log {
		have[e.Score] = true
	}
	p.noteOutcome(name, log)
	// A full log may have dropped entries older than its oldest.
	var oldest int64
	if len(log) >= s.cfg.HistoryKeep {
		oldest = log[len(log)-1].Score
	}
	judged := time.Time{}
	defer func() {
		if !judged.IsZero() {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
			_ = s.cfg.Locker.AdvanceRecord(actx, rec, judged.Unix())
			cancel()
		}
	}()
	if !slices.ContainsFunc(slots, func(t time.Time) bool { return !have[t.Unix()] && t.Unix() >= oldest }) {
		judged = slots[len(slots)-1] // the common case: every slot has its entry
		return nil
	}
	// Some slot has no entry. Its claim may be turning into one right now
	// (a run ending, an abandoned run settled): read the claims, then the
	// log again. A slot with neither, in that order, had no claim when the
	// claims were read and no entry after — and nobody claims a slot this
	// old any more.
	claims, err := s.cfg.Locker.ReadClaims(ctx, name)
	if err != nil {
		return err
	}
	open := history.ClaimedSlots(claims)
	log, err = s.cfg.Locker.ReadLog(ctx, name, slots[0].Unix(), s.cfg.HistoryKeep)
	if err != nil {
		return err
	}
	for _, e := range log {
		have[e.Score] = true
	}
	pause, err := s.cfg.Locker.ReadPause(ctx, name)
	if err != nil {
		return err
	}
	for _, t := range slots {
		u := t.Unix()
		switch {
		case have[u] || u < oldest:
		case open[u]:
			// A run going on, or abandoned: judged once it ended. An
			// abandoned claim is settled now rather than when a later
			// claim of the job is pointed to it, which may never come.
			o := &locking.Abandoned{Key: history.SlotKey(name, t)}
			s.spawn(func() { s.settleOrphan(j, o) })
			return nil
		case pause.Covers(t):
			if err := p.write(ctx, j, pausedEntry(t), t); err != nil && !errors.Is(err, locking.ErrLogHasEntry) {
				return err
			}
		default:
			fleet, err := p.readFleet(ctx)
			if err != nil {
				return err
			}
			reason := p.reason(fleet, t)
			err = p.write(ctx, j, missedEntry(t, reason), t)
			if errors.Is(err, locking.ErrLogHasEntry) {
				break // another pass wrote the slot's entry meanwhile, and reports it
			}
			if err != nil {
				return err
			}
			s.log.Warn("slot missed: it should have run and nobody ran it", "event", evSlotMissed,
				"job", name, "slot", slotString(t), "reason", string(reason))
			s.metrics.SlotMissed(name, reason)
			s.metrics.JobOutcome(name, history.OutcomeMissed, t)
		}
		judged = t
	}
	return nil
}

// unjudged reports, once, the slots of j in (from, cut] that fell out of
// the window the reconciler judges (older than the fleet's records) before
// they were judged — passes stalled that long behind a slot whose claim
// stayed open, or none ran — and moves the job's record past them.
func (p *pass) unjudged(ctx context.Context, j *job, from, cut time.Time) error {
	slots := slotsBetween(j.spec.Schedule, from, cut, maxUnjudged+1)
	if len(slots) == 0 {
		return nil
	}
	first, last := slots[0], slots[len(slots)-1]
	if len(slots) > maxUnjudged {
		last = prevSlot(j.spec.Schedule, cut)
	}
	if err := p.own(ctx); err != nil {
		return err
	}
	attrs := []any{"event", evSlotsUnjudged, "job", j.name(), "first_slot", slotString(first), "slot", slotString(last),
		"count", min(len(slots), maxUnjudged)}
	if len(slots) > maxUnjudged {
		attrs = append(attrs, "count_at_least", true)
	}
	p.s.log.Warn("reconciler: slots older than a day were never judged; their outcome is what the history holds, if anything",
		attrs...)
	return p.s.cfg.Locker.AdvanceRecord(ctx, locking.Key{Family: j.name(), Name: reconciledName}, last.Unix())
}

// maxUnjudged bounds the slots unjudged counts.
const maxUnjudged = 100_000

// write adds e, the outcome of slot t of j, to the history, while the
// lease is held, fenced by its token and only where t has no entry yet:
// locking.ErrLogHasEntry when it did not add e on a majority (then
// another pass reports it), errPassOver when a newer reconciler wrote.
func (p *pass) write(ctx context.Context, j *job, e history.Entry, t time.Time) error {
	if err := p.own(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	err := p.s.cfg.Locker.AppendLog(wctx, j.name(), locking.LogAppend{Entry: e.LogEntry(t), Keep: p.s.cfg.HistoryKeep,
		Fence: reconcilerName, Token: p.lease.Token(), IfAbsent: true})
	if errors.Is(err, locking.ErrStaleToken) {
		return errPassOver
	}
	return err
}

// reason says why nobody ran slot t.
func (p *pass) reason(fleet history.Fleet, t time.Time) history.Reason {
	switch {
	case fleet.DownAt(t, p.s.lateness+p.s.cfg.MaxClockSkew):
		return history.ReasonNoQuorum
	case !fleet.AliveAt(t):
		return history.ReasonNoReplica
	}
	return history.ReasonUnknown
}

// noteOutcome tells the metrics the newest outcome in log (newest first).
func (p *pass) noteOutcome(job string, log []locking.LogEntry) {
	for _, le := range log {
		e, ok := history.ParseEntry(le)
		if !ok {
			continue
		}
		end := time.Unix(le.Score, 0).Add(time.Duration(e.DurationMS) * time.Millisecond)
		p.s.metrics.JobOutcome(job, e.Outcome, end)
		return
	}
}

// pausedEntry and missedEntry are the entries of a slot skipped for a
// pause and of a missed slot: the same whoever writes them, so that
// replicas and reconcilers writing one twice leave one.
func pausedEntry(t time.Time) history.Entry {
	return history.Entry{Slot: slotString(t), Outcome: history.OutcomeSkipped, Reason: history.ReasonPaused}
}

func missedEntry(t time.Time, reason history.Reason) history.Entry {
	return history.Entry{Slot: slotString(t), Outcome: history.OutcomeMissed, Reason: reason}
}

// slotsBetween lists sched's slots in (from, to], at most n, oldest first.
func slotsBetween(sched Schedule, from, to time.Time, n int) []time.Time {
	var out []time.Time
	for t := sched.Next(from); !t.IsZero() && !t.After(to) && len(out) < n; t = sched.Next(t) {
		out = append(out, t)
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
