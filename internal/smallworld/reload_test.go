package smallworld

import (
	"context"
	"errors"
	"fmt"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A reload of the job's definition, mid-slot: the job runs under overlap
// allow until a reload puts it under forbid (timer_reload.go's
// applyReload). A slot's attempt runs under the definition in force when
// it was fired (the attempt holds its job), so a slot fired before the
// reload runs under allow — no job lease — and one fired after it under
// forbid: its claim takes the job lease with it (claimPolicy's With), and,
// since the reload opened the window of notePolicyChange, its allowRuns step
// reads the open claims of the job and skips the slot for overlap while a
// claim of an older slot is open — a run started under allow, which holds
// no job lease, or a dead one not settled yet.
//
// The worlds: one process fires slot 0 and another slot 1 (a replica runs
// each slot in a goroutine of its own, so slot 1 may be tried while slot
// 0's body runs), a reloader (L1) switches the definition at any moment,
// and a settler is pointed at slot 0 a TTL later. Besides the invariants
// of every world: no body under forbid runs beside another body of the
// job (checkOverlap).

// reloadWorlds are the worlds of a reload.
var reloadWorlds = map[string]worldConfig{
	// Slot 1 is fired once slot 0's claim is decided (won, refused, or
	// its claimer gone): slots further apart than the lateness bound, as
	// a scheduled slot's claim is not granted after its lateness bound
	// (claimPolicy's staleAfter) and its run not started after it (late).
	// No fault: the interleavings of the two slots and the reload.
	"reload": {name: "reload", slots: 2, firers: []string{"R1", "R2"}, reloaders: []string{"L1"}, settlers: []string{"S1"},
		ticks: 1},
	// One fault: a firer killed between its steps (slot 0's run dies
	// under allow: its open claim holds slot 1 off until the settler
	// closes it).
	"reloadcrash": {name: "reloadcrash", slots: 2, firers: []string{"R1", "R2"}, reloaders: []string{"L1"}, settlers: []string{"S1"},
		faults: 1, kinds: []string{"crash"}, victims: []string{"R1", "R2"}, ticks: 1, killAtSteps: true},
	// One fault: a lost request, or a firer killed between its steps.
	"reloadlose": {name: "reloadlose", slots: 2, firers: []string{"R1", "R2"}, reloaders: []string{"L1"}, settlers: []string{"S1"},
		faults: 1, kinds: []string{"crash", "lose"}, victims: []string{"R1", "R2"}, ticks: 1, killAtSteps: true},
	// Slot 1 fired as soon as slot 0 was (slots closer than the lateness
	// bound: an every-second job): slot 0's claim may land after slot 1
	// looked for open claims. No fault.
	"reloadfast": {name: "reloadfast", slots: 2, firers: []string{"R1", "R2"}, reloaders: []string{"L1"}, settlers: []string{"S1"},
		ticks: 1, fastFire: true},
}

func init() {
	for n, c := range reloadWorlds {
		worlds[n] = c
	}
}

// reloader is a reload of the job's definition (allow to forbid), at any
// moment: one step.
func reloader(a *actor) {
	a.w.mu.Lock()
	a.visible = true
	a.w.mu.Unlock()
	if !a.step("reload") {
		return
	}
	a.w.mu.Lock()
	a.w.forbid = true
	a.w.mu.Unlock()
}

// firer fires one slot, under the definition in force when it fires:
// slot 0 at tick 0; slot 1 once slot 0's firer has fired (fastFire) or
// its claim is decided.
func firer(slot int) func(*actor) {
	return func(a *actor) {
		a.w.mu.Lock()
		a.visible = true
		if slot > 0 {
			a.gateAfter = a.w.cfg.firers[slot-1]
		}
		a.w.mu.Unlock()
		lo, hi := 0, forever
		if slot == 0 {
			hi = 0
		}
		if !a.gate("fire", lo, hi) {
			return
		}
		a.w.mu.Lock()
		a.visible, a.gateAfter = false, ""
		forbid := a.w.forbid
		a.def = "allow"
		if forbid {
			a.def = "forbid"
		}
		a.w.mu.Unlock()
		a.fireUnder(slot, forbid)
	}
}

// fireUnder is attemptSlot of a fired slot under overlap allow or forbid:
// claimSlot (with the job lease under forbid), abandoned, leftover
// (settleClaim), takeJobLease, allowRuns under forbid or leaseRuns under
// allow (the two sides of scheduler/guards_rolling.go), then the run; the
// orphan the stores pointed to is settled after the run (as fire does).
func (a *actor) fireUnder(slot int, forbid bool) {
	var opts []locking.ClaimOption
	if forbid {
		opts = append(opts, locking.With(runKey))
	}
	lease, err := a.claimWith(slot, opts...)
	if !a.settleClaim(slot, lease, err) {
		return
	}
	jobLease := lease.Grant().Joined
	if forbid && jobLease == nil {
		// takeJobLease: asked for alone (once: time stands still here).
		if !a.step("job-lease") {
			return
		}
		jobLease, err = a.locker.Acquire(context.Background(), runKey, ttl)
		if err != nil {
			if !errors.Is(err, locking.ErrNotAcquired) {
				a.releaseBoth(lease, nil)
				a.w.report(a, "skipped", slot, skipReason(err))
				return
			}
			a.skipOverlap(slot, lease, nil)
			return
		}
	}
	if !forbid {
		if !a.leaseRunsClear(slot, lease) {
			return
		}
	}
	if forbid {
		clear, err := a.allowRunsClear(slot)
		switch {
		case err != nil:
			// a.lost: the slot is handed back, both leases released.
			if a.step("release") {
				a.releaseBoth(lease, jobLease)
				a.w.report(a, "skipped", slot, skipReason(err))
			}
			return
		case !clear:
			a.skipOverlap(slot, lease, jobLease)
			return
		}
	}
	a.runBodyWith(slot, lease, jobLease)
}

// allowRunsClear is allowRuns: no claim of another slot of the job is
// open (history.ClaimedSlots of ReadClaims, the product's names). A read
// that fails is its error (the caller loses the slot: a.lost); a process
// gone at the step, not clear.
func (a *actor) allowRunsClear(slot int) (bool, error) {
	if !a.step("allow-runs") {
		return false, nil
	}
	claims, err := a.locker.ReadClaims(context.Background(), family)
	if err != nil {
		return false, err
	}
	var named []locking.Key
	for _, k := range claims {
		if k.Name != runKey.Name {
			named = append(named, history.SlotKey(family, slotTime(slotOf(k))))
		}
	}
	for u := range history.ClaimedSlots(named) {
		// Every other open claim, a newer slot's too: it may be a run
		// under allow that read the job lease before this slot took it.
		if u != slotTime(slot).Unix() {
			return false, nil
		}
	}
	return true, nil
}

// leaseRunsClear is leaseRuns (scheduler/guards_rolling.go): a slot under
// allow, its claim won, reads the job lease and skips for overlap while a
// run holds it. A read that fails loses the slot (handed back). It
// reports whether the slot goes on to its run; when not, the slot was
// ended here (or its process is gone).
func (a *actor) leaseRunsClear(slot int, lease *locking.Lease) bool {
	if !a.step("lease-runs") {
		return false
	}
	he, err := a.locker.ReadLease(context.Background(), runKey)
	switch {
	case err != nil:
		if a.step("release") {
			a.releaseBoth(lease, nil)
			a.w.report(a, "skipped", slot, skipReason(err))
		}
		return false
	case he != nil && !he.Done:
		a.skipOverlap(slot, lease, nil)
		return false
	}
	return true
}

// skipOverlap is actDone for overlap: the claim a done marker with the
// skipped/overlap entry, the job lease released with it.
func (a *actor) skipOverlap(slot int, lease, jobLease *locking.Lease) {
	if !a.step("overlap") {
		return
	}
	e := entry(slot, outSkippedOverlap, "", a.name)
	if a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: "overlap", Entry: &e, Keep: a.w.keep(), Also: jobLease}) {
		a.w.report(a, "skipped", slot, "overlap")
	}
}

// releaseBoth is attempt.release: the claim and the job lease handed back.
func (a *actor) releaseBoth(lease, jobLease *locking.Lease) {
	a.end(lease, locking.Ending{Also: jobLease})
}

// runKey is the job lease (history.RunKey) in the model's family.
var runKey = history.RunKey(family)

// afterDone: a's gate waits for no other firer, or that firer has fired
// (fastFire) or its claim is decided: its Claim returned, it is gone, or
// its slot passed unfired. w.mu is held.
func (w *world) afterDone(a *actor) bool {
	if a.gateAfter == "" {
		return true
	}
	o := w.actor(a.gateAfter)
	switch {
	case o == nil || o.dead || o.done:
		return true
	case o.atGate == "fire":
		return w.ticks > o.gateMax
	}
	return w.cfg.fastFire || o.claims > 0
}

// overlapping names the bodies whose time overlaps b's (one still
// running overlaps every body begun since). w.mu is held.
func (w *world) overlapping(b *bodyRec) []string {
	var out []string
	for _, c := range w.bodies {
		if c != b && overlaps(b, c) {
			out = append(out, c.actor)
		}
	}
	return out
}

func overlaps(b, c *bodyRec) bool {
	bEnd, cEnd := b.end, c.end
	if bEnd < 0 {
		bEnd = forever
	}
	if cEnd < 0 {
		cEnd = forever
	}
	return b.begin < cEnd && c.begin < bEnd
}

// checkOverlap: a body run under forbid never runs beside another body
// of the job — one of an older slot started under allow (the reload's
// case: it holds no job lease), or any other. w.mu is held.
func (w *world) checkOverlap() []violation {
	var out []violation
	for i, b := range w.bodies {
		for _, c := range w.bodies[i+1:] {
			if (b.def == "forbid" || c.def == "forbid") && overlaps(b, c) {
				out = append(out, violation{"overlap-under-forbid", fmt.Sprintf("slot %d's body (%s, under %s) ran beside slot %d's (%s, under %s)",
					b.slot, b.actor, b.def, c.slot, c.actor, c.def)})
			}
		}
	}
	return out
}
