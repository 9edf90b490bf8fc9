package scheduler

import (
	"hash/fnv"
	"math/bits"
	"strconv"
	"time"
)

// Deterministic jitter (JobSpec.Jitter): each slot of a job with jitter J
// starts at its due time, the nominal slot plus an offset in [0, J) drawn
// from a hash of the job's name and the slot. No replica's name goes into
// it, so every replica computes the same due time without talking, and the
// replicas still race for the slot at one instant as they do without
// jitter. The slot itself — the lock key, SLOTLOCK_SLOT, every slot
// attribute in the logs, the history — stays the nominal time; the timing
// rules that were measured from the slot (lateness, freshness, the misfire
// deadline, the recovery wait, the start delay) are measured from the due
// time instead.
//
// A jitter no longer than the schedule's shortest interval (checkJitter)
// keeps the due times in the slots' order: a slot's due time is before the
// next slot, since its offset is below the interval to it.

// jitterOffset is the start offset of slot of job under jitter: a whole
// number of milliseconds in [0, jitter), 0 when jitter <= 0. It depends on
// the job's name, the slot's Unix second and jitter only — not the slot's
// time zone, not the replica — and it is part of the fleet's contract:
// replicas of different versions must compute the same offsets, so the
// formula must not change. It is
//
//	h = splitmix64 finalizer(FNV-1a 64 of name + "\x00" + decimal Unix seconds)
//	offset = floor(h × jitter / 2^64) (in ns), truncated to the millisecond
func jitterOffset(job string, slot time.Time, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(job))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, slot.Unix(), 10))
	x := h.Sum64()
	// FNV's high bits hardly move when only the last digits do (consecutive
	// slots): the finalizer spreads every input bit over all of them.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	hi, _ := bits.Mul64(x, uint64(jitter)) // uniform in [0, jitter), no float rounding
	off := time.Duration(hi)
	return off - off%time.Millisecond
}

// Due is when slot t of the job starts: t plus its jitter offset
// (jitterOffset), t itself without jitter.
func (j *JobSpec) Due(t time.Time) time.Time {
	return t.Add(jitterOffset(j.Name, t, j.Jitter))
}

// NextDue returns the first slot whose due time is strictly after t, and
// that due time; zero times when the schedule has no such slot. Without
// jitter that is Schedule.Next(t). With jitter a slot shortly before t may
// still be due after it.
func (j *JobSpec) NextDue(t time.Time) (slot, due time.Time) {
	slot = j.Schedule.Next(t.Add(-max(j.Jitter, 0)))
	// Due times are in slot order (checkJitter), so this walks at most
	// the slots in (t - jitter, t]: one or two.
	for !slot.IsZero() {
		if due = j.Due(slot); due.After(t) {
			return slot, due
		}
		slot = j.Schedule.Next(slot)
	}
	return time.Time{}, time.Time{}
}

// lastDueBy returns the latest slot whose due time is at or before t, or
// zero when none within five years.
func (j *JobSpec) lastDueBy(t time.Time) time.Time {
	p := prevSlot(j.Schedule, t)
	if p.IsZero() || !j.Due(p).After(t) {
		return p
	}
	// p is due after t; the slot before it is due before p (its offset is
	// below the interval to p), so before t.
	return prevSlot(j.Schedule, p.Add(-time.Second))
}
