package scheduler

import (
	"context"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The fleet view: which replicas are alive and run this replica's job
// definitions, read from the heartbeats about once a beat. The loop
// (timer.go) ranks each slot's candidates over it.

// fleetView is this replica's view of the live replicas: their names,
// sorted, this replica's among them.
type fleetView struct {
	names []string
}

// viewLoop keeps the view of the fleet until the scheduler stops: read
// every second during the first beat, so that replicas started together
// (a deploy, a scale-up) see each other's first heartbeats within a
// second — a replica missing from a view makes more candidates, each an
// extra claim per slot — then every Beat.
func (f *fleet) viewLoop() {
	start := f.clock.Now()
	for {
		f.refreshView()
		wait := f.cfg.Beat
		if f.clock.Now().Sub(start) < f.cfg.Beat {
			wait = min(time.Second, f.cfg.Beat)
		}
		if !f.sleep(wait, f.stopping) {
			return
		}
	}
}

// refreshView reads the fleet and replaces the view; when the stores do
// not answer, the view is kept while it is fresh (three beats), then
// dropped (every replica a candidate again).
func (f *fleet) refreshView() {
	now := f.clock.Now()
	names, err := f.readView(now)
	if err != nil {
		if v := f.view.Load(); v != nil && now.Sub(f.viewAt) > 3*f.cfg.Beat {
			f.view.Store(nil)
		}
		f.log.Debug("fleet view not read", "error", err.Error())
		return
	}
	if !slices.Contains(names, f.cfg.Replica) {
		names = append(names, f.cfg.Replica)
	}
	slices.Sort(names)
	f.view.Store(&fleetView{names: slices.Compact(names)})
	f.viewAt = now
}

// readView returns the names of the replicas alive at now that run this
// replica's job definitions: a replica with other definitions may not
// have the job, and choosing it as a candidate would cost its slots the
// fallback's delay.
func (f *fleet) readView(now time.Time) ([]string, error) {
	if f.viewSource != nil {
		return f.viewSource(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	// Heartbeats older than three beats (of ours, or the default if
	// longer) name nobody alive: a replica beating slower than that only
	// falls out of the view, which costs its slots the fallback's delay.
	since := now.Add(-3 * max(f.cfg.Beat, history.DefaultBeat))
	alive, err := history.ReadAlive(ctx, f.cfg.Locker, since, now)
	if err != nil {
		return nil, err
	}
	hash := f.jobSet().hash
	var names []string
	for _, r := range alive {
		if r.DefinitionsHash == hash && r.Stopped.IsZero() {
			names = append(names, r.Replica)
		}
	}
	return names, nil
}

// spreadDelay is this replica's delay before trying slot t of job:
// Spread × u², u uniform in [0, 1) from a hash of (job, slot, replica).
// Replicas firing in the same millisecond thus arrive in a random order,
// which avoids most split votes and spreads runs over replicas; squaring
// keeps the first replica's delay small (1/10 of Spread on average with
// three replicas) while leaving the others well behind it.
func (f *fleet) spreadDelay(job string, t time.Time) time.Duration {
	if f.cfg.Spread <= 0 {
		return 0
	}
	u := float64(slotHash(job, t, f.cfg.Replica)>>11) / (1 << 53) // uniform in [0, 1)
	return time.Duration(u * u * float64(f.cfg.Spread))
}

// Candidates: of the N live replicas, only k (Config.Candidates) try each
// slot at its due time; the others, the fallbacks, look Fallback later
// whether it was handled — one read on one store — and try it only when
// it was not. The Redis work per slot is thus that of k replicas, not N,
// and the replicas do not all compete for every slot.
//
// Who is a candidate is rendezvous hashing of (job, slot) over this
// replica's view of the fleet: the names of the replicas alive in the
// heartbeats that run the same job definitions (history.ReadFleet), read
// about once a beat (fleet.go), always with this replica in it. The views
// of two replicas may differ (a heartbeat missed, a replica that just started or
// died, a reload): that only moves work between candidates and fallbacks.
// Exactly-once never depends on it: every replica that tries a slot goes
// through its claim, and a slot whose candidates did not handle it (dead,
// paused, wrongly chosen, or themselves convinced they are fallbacks) is
// tried by the fallbacks Fallback after its due time, well inside the
// lateness bound. An unknown view (at start, stores down) or Candidates
// negative: every replica is a candidate.

// DefaultCandidates is how many replicas try each slot at its due time.
const DefaultCandidates = 2

// DefaultFallback is how long after a slot's due time the other replicas
// check whether it was handled (at most half the lateness bound). Off the
// whole second, it keeps a fallback's claim away from any slot's due time
// (slots fall on whole seconds): during a reload that changes a job's
// schedule, the replicas still on the old one may count those on the new one among a
// slot's candidates (their view is a beat old), and a fallback claim at a
// whole second would race the new schedule's slot due then, the old slot
// taking the higher token but starting first (the e2e reload scenario).
// 750ms keeps a quarter second from the next whole second.
const DefaultFallback = 750 * time.Millisecond

// noRank is the rank of every replica when the view is unknown: all are
// candidates.
const noRank = -1

// slotRank is this replica's rank among the live replicas for slot t of
// job: 0 for the one whose hash of (job, t, name) is highest. noRank when
// there is no view.
func (f *fleet) slotRank(job string, t time.Time) int {
	v := f.view.Load()
	if v == nil {
		return noRank
	}
	mine := slotScore(job, t, f.cfg.Replica)
	rank := 0
	for _, n := range v.names {
		if n == f.cfg.Replica {
			continue
		}
		if sc := slotScore(job, t, n); sc > mine || (sc == mine && n < f.cfg.Replica) {
			rank++
		}
	}
	return rank
}

// slotScore is replica's rendezvous score for slot t of job.
func slotScore(job string, t time.Time, replica string) uint64 {
	return mix64(slotHash(job, t, replica))
}

// slotHash is the FNV-1a hash of (job, slot t, replica) that both a
// candidate's rank (slotScore) and a replica's spread (spreadDelay) come
// from.
func slotHash(job string, t time.Time, replica string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(job))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, t.Unix(), 10))
	h.Write([]byte{0})
	h.Write([]byte(replica))
	return h.Sum64()
}

// mix64 spreads FNV's low-entropy high bits (a finalizer from
// SplitMix64), so that ranks do not follow the replicas' names.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// slotDelay is when, after its due time, this replica tries slot t of
// job, and whether as a fallback. Candidates go in rank order, Spread
// apart in all (rank 0 at once): a deterministic order avoids split
// votes better than a random one. Without a view, every replica is a
// candidate with its random spread (spreadDelay).
func (f *fleet) slotDelay(job string, t time.Time) (time.Duration, bool) {
	rank := f.slotRank(job, t)
	k := f.candidates()
	switch {
	case rank == noRank || k <= 0:
		return f.spreadDelay(job, t), false
	case rank >= k:
		return f.fallback, true
	case k == 1 || f.cfg.Spread <= 0:
		return 0, false
	}
	return time.Duration(rank) * f.cfg.Spread / time.Duration(k-1), false
}

// fallbackDelay is how long after slot t's due time a fallback tries it:
// Fallback, but at most half the time to the job's next slot. A slot its
// candidates left (dead, but still in the views: a rolling restart) is
// then claimed, and takes its fencing token, before the next slot's
// candidates claim theirs, so the job's runs start in token order even
// where they may overlap (overlap allow): with a whole second, an
// every-second job's fallback run of slot T started just after slot
// T+1's run, with the lower token — a fenced write of it refused.
func (f *fleet) fallbackDelay(j *job, t time.Time) time.Duration {
	d := f.fallback
	if next := j.spec.Schedule.Next(t); !next.IsZero() {
		d = min(d, next.Sub(t)/2)
	}
	return d
}

// candidates is k: Config.Candidates, or 0 when every replica is one.
func (f *fleet) candidates() int {
	return max(f.cfg.Candidates, 0)
}
