package scheduler

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"

	"github.com/slotlock/slotlock/locking"
)

// What a reconciler pass (reconciler.go) decides for one job: which of its
// slots are old enough to judge and from where, and for each slot with
// no entry in the history, whether it is still open, paused or missed,
// and why.

// firstStart is when the job definitions this replica runs were first
// running, as far as the heartbeats tell (else since when this replica
// runs them: its start, or its latest reload): a job's first pass judges
// its slots from then on. So slots missed between a first deploy and the
// first pass are judged, and a job added by a deploy is not judged from
// before it existed.
func (p *pass) firstStart(fleet history.Fleet) time.Time {
	d := p.r.jobSet()
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

// after is how old a slot of j must be before it is judged: past
// every normal attempt at its due time and, under run_once and run_all,
// past the recovery deadline.
func (r *reconciler) after(j *job) time.Duration {
	d := max(r.cfg.ReconcileAfter, r.recoverAfter()+max(r.cfg.Spread, 0)+time.Second)
	if j.spec.Misfire.Policy.recovers() {
		d = max(d, j.spec.Misfire.Deadline+r.recoverAfter()+time.Second)
	}
	return d + j.largestJitter() // a slot is due up to the jitter after its nominal time, on any replica
}

// settleAfter is how old a slot of the named job may be and still have no
// history entry with nothing wrong: the reconciler judges a slot once it
// is after(j) old, at its next pass. 0 for a job not in force.
func (r *reconciler) settleAfter(job string) time.Duration {
	j, _ := r.job(job)
	if j == nil {
		return 0
	}
	return r.after(j) + max(r.cfg.ReconcileEvery, 0)
}

// job judges j's slots since the job's record, and moves the record past
// the ones it judged.
func (p *pass) job(ctx context.Context, j *job) error {
	r := p.r
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := p.own(ctx); err != nil {
		return err
	}
	now := r.clock.Now()
	from, err := p.from(ctx, j, now)
	if errors.Is(err, errReplacedPending) {
		return nil // judged further at a later pass
	}
	if err != nil {
		return err
	}
	// At most half the history per pass, so that the entries the pass
	// judges by are still there.
	slots := history.SlotsBetween(j.spec.Schedule, from, now.Add(-r.after(j)), max(1, r.cfg.HistoryKeep/2))
	if len(slots) == 0 {
		return nil
	}
	judged, err := p.judge(ctx, j, slots)
	if !judged.IsZero() {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		_ = r.cfg.Locker.AdvanceRecord(actx, history.ReconciledKey(j.name()), judged.Unix())
		cancel()
	}
	return err
}

// from is where the pass starts judging j's slots at now: after the job's
// record, else from when the job's definitions first ran, never before a
// reload added or rescheduled the job here, nor more than a day back (the
// slots it passes over are reported unjudged).
func (p *pass) from(ctx context.Context, j *job, now time.Time) (time.Time, error) {
	w, err := p.r.cfg.Locker.ReadRecord(ctx, history.ReconciledKey(j.name()))
	if err != nil {
		return time.Time{}, err
	}
	from := time.Unix(w, 0)
	if w == 0 {
		fleet, err := p.readFleet(ctx)
		if err != nil {
			return time.Time{}, err
		}
		from = p.firstStart(fleet) // a replica takes part from the first slot after its start
		// A job a reload rescheduled here ran under the definitions it
		// replaced before that, from when the oldest came into force here
		// (this replica's start, for one it started with): their slots are
		// judged under them. (firstStart is the reload's time: with no
		// record yet, they were passed over without a line.)
		if n := len(j.replaced); n > 0 {
			from = minTime(from, later(j.replaced[n-1].since, p.started))
		}
	}
	// A job a reload added or rescheduled here has run as it is since then
	// on this replica, which fires each of its slots after that: earlier
	// ones are another definition's (docs/configuration.md, "Hot reload"),
	// judged as that one's (reconciler_replaced.go).
	if from.Before(j.since) {
		if err := p.replacedJudged(ctx, j, from, now); err != nil {
			return time.Time{}, err
		}
	}
	from = later(from, j.since)
	if cut := now.Add(-history.Retention); from.Before(cut) {
		if err := p.unjudged(ctx, j, from, cut); err != nil {
			return time.Time{}, err
		}
		from = cut
	}
	return from, nil
}

// judge judges slots of j, oldest first, and returns the latest it
// judged (zero when none): up to the first whose claim is still open, or
// whose skip's writer may still beat (unlogged).
func (p *pass) judge(ctx context.Context, j *job, slots []time.Time) (time.Time, error) {
	r, name := p.r, j.name()
	limit := historyReadLimit(r.cfg.HistoryKeep)
	log, err := r.cfg.Locker.ReadLog(ctx, name, slots[0].Unix(), limit)
	if err != nil {
		return time.Time{}, err
	}
	have := make(map[int64]bool, len(log))
	for _, e := range log {
		have[e.Score] = true
	}
	p.noteOutcome(name, log)
	if slots, err = p.unlogged(ctx, j, log, slots); err != nil || len(slots) == 0 {
		return time.Time{}, err
	}
	// A slot with history.keep entries as new or newer may have had its
	// own trimmed: older than reach, a slot without one is not judged,
	// and said so (beyond).
	reach := historyReach(log, r.cfg.HistoryKeep)
	if !slices.ContainsFunc(slots, func(t time.Time) bool { return !have[t.Unix()] }) {
		return slots[len(slots)-1], nil // the common case: every slot has its entry
	}
	// Some slot has no entry. Its claim may be turning into one right now
	// (a run ending, an abandoned run settled): read the claims, then the
	// log again. A slot with neither, in that order, had no claim when the
	// claims were read and no entry after — and nobody claims a slot this
	// old any more.
	claims, err := r.cfg.Locker.ReadClaims(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	open := history.ClaimedSlots(claims)
	if log, err = r.cfg.Locker.ReadLog(ctx, name, slots[0].Unix(), limit); err != nil {
		return time.Time{}, err
	}
	for _, e := range log {
		have[e.Score] = true
	}
	var beyond []time.Time
	pause, err := r.cfg.Locker.ReadPause(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	var judged time.Time
	for _, t := range slots {
		u := t.Unix()
		switch {
		case have[u]:
		case u < reach:
			beyond = append(beyond, t)
		case open[u]:
			// A run going on, or abandoned: judged once it ended. An
			// abandoned claim is settled now rather than when a later
			// claim of the job is pointed to it, which may never come.
			o := &locking.Abandoned{Key: history.SlotKey(name, t)}
			r.spawn(func() { r.settle.settleOrphan(j, o) })
			p.beyondHistory(j, beyond)
			return judged, nil
		default:
			if err := p.judgeMissing(ctx, j, t, pause); err != nil {
				return judged, err
			}
		}
		judged = t
	}
	p.beyondHistory(j, beyond)
	return judged, nil
}

// beyondHistory reports the slots of j a pass passed over without an
// entry because the history no longer reaches them (historyReach): more
// than history.keep entries are newer — a pass that fell far behind, or
// slots with several entries each. Their outcome is what the history
// held, if anything; they are not reported missed (their entries may
// have said they ran) and not silently counted as judged either.
func (p *pass) beyondHistory(j *job, slots []time.Time) {
	if len(slots) == 0 {
		return
	}
	p.r.log.Warn("reconciler: slots beyond the reach of the slot history were never judged; raise history.keep, "+
		"or see why passes fell behind", "event", evSlotsUnjudged, "job", j.name(),
		"first_slot", slotString(slots[0]), "slot", slotString(slots[len(slots)-1]), "count", len(slots))
}

// judgeMissing writes the entry of slot t of j, which has none and no
// open claim: paused when the job's pause covers it or covered it (a
// pause resumed before any replica wrote the slot's entry: Pause.Past),
// else missed (and reported: slot.missed) with why nobody ran it.
func (p *pass) judgeMissing(ctx context.Context, j *job, t time.Time, pause locking.Pause) error {
	r, name := p.r, j.name()
	if pause.PausedAt(j.spec.Due(t)) { // when the replicas fire it, as they judge a pause
		err := p.write(ctx, j, pausedEntry(t), t)
		if err == nil {
			// No replica fired it (none was up, or the pause ended before
			// one wrote the entry): its outcome is told here, once.
			r.skipped(name, slotString(t), history.ReasonPaused, 1, "note", "judged by the reconciler")
		}
		if err != nil && !errors.Is(err, locking.ErrLogHasEntry) {
			return err
		}
		return nil
	}
	fleet, err := p.readFleet(ctx)
	if err != nil {
		return err
	}
	reason := r.missedReason(fleet, t)
	e := missedEntry(t, reason)
	err = p.write(ctx, j, e, t)
	if errors.Is(err, locking.ErrLogHasEntry) {
		return nil // another pass wrote the slot's entry meanwhile, and reports it
	}
	if err != nil {
		return err
	}
	r.missed(j, t, e) // this pass's append added the entry: it is the writer of record
	return nil
}

// unjudged reports, once, the slots of j in (from, cut] that fell out of
// the window the reconciler judges (older than the fleet's records) before
// they were judged — passes stalled that long behind a slot whose claim
// stayed open, or none ran — and moves the job's record past them.
func (p *pass) unjudged(ctx context.Context, j *job, from, cut time.Time) error {
	slots := history.SlotsBetween(j.spec.Schedule, from, cut, maxUnjudged+1)
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
	p.r.log.Warn("reconciler: slots older than a day were never judged; their outcome is what the history holds, if anything",
		attrs...)
	return p.r.cfg.Locker.AdvanceRecord(ctx, history.ReconciledKey(j.name()), last.Unix())
}

// maxUnjudged bounds the slots unjudged counts.
const maxUnjudged = 100_000

// missedReason says, from the fleet's records, why nobody ran slot t:
// the stores had no majority around it, nobody was up, or neither.
func (e *engine) missedReason(fleet history.Fleet, t time.Time) history.Reason {
	switch {
	case fleet.DownAt(t, e.lateness+e.cfg.MaxClockSkew):
		return history.ReasonNoQuorum
	case !fleet.AliveAt(t):
		return history.ReasonNoReplica
	}
	return history.ReasonUnknown
}

// missed reports slot t of j missed, its entry e written by this
// process's append (the writer of record, which notifies): slot.missed,
// its counts, and the notification.
func (e *engine) missed(j *job, t time.Time, entry history.Entry, attrs ...any) {
	args := append([]any{"event", evSlotMissed, "job", j.name(), "slot", slotString(t), "reason", entry.Reason}, attrs...)
	e.log.Warn("slot missed: it should have run and nobody ran it", args...)
	e.metrics.SlotMissed(j.name(), entry.Reason)
	e.metrics.JobOutcome(j.name(), history.OutcomeMissed, t)
	e.notifyWritten(j, t, entry)
}

// noteOutcome tells the metrics the newest outcome in log (newest first).
func (p *pass) noteOutcome(job string, log []locking.LogEntry) {
	for _, le := range log {
		e, ok := history.ParseEntry(le)
		if !ok {
			continue
		}
		end := time.Unix(le.Score, 0).Add(time.Duration(e.DurationMS) * time.Millisecond)
		p.r.metrics.JobOutcome(job, e.Outcome, end)
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

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
