package scheduler

import "time"

// Candidates: of the N live replicas, only k (Config.Candidates) try each
// slot: the first (rank 0) claims it at its due time; the others (rank r,
// r×SecondDelay later) and the next dueFallbacks in the slot's ranking,
// the fallbacks (Fallback later), first look whether it was handled — one
// read on one store, for all their slots due at that instant — and claim
// it only when it was not. The remaining N-k-F replicas do nothing for
// the slot: no read, no claim, no line, only the timer's heap step. The
// Redis work per slot is thus one claim (plus k-1+F reads) while the
// first candidate is well, not N, and a replica's CPU per slot does not
// grow with the fleet. A candidate after the first differs from a
// fallback in two ways: it looks sooner, and a replica past its capacity
// still tries it (its claim waits in admission, and is read again first
// when its turn comes), where it drops its fallback slots.
//
// Who is a candidate is rendezvous hashing of (job, slot) over this
// replica's view of the fleet: the names of the replicas alive in the
// heartbeats that run the same job definitions (history.ReadFleet), read
// about once a beat (fleet_view.go), always with this replica in it. The
// views of two replicas may differ (a heartbeat missed, a replica that
// just started or died, a reload): that only moves work between
// candidates, fallbacks and the idle. Exactly-once never depends on it:
// every replica that tries a slot goes through its claim.
//
// Liveness: a slot is tried by its k candidates and F fallbacks, the top
// k+F of the ranking. A slot whose candidates did not handle it (dead,
// paused, wrongly chosen, or themselves convinced they are fallbacks) is
// tried by the fallbacks Fallback after its due time, well inside the
// lateness bound. Only when all k+F are gone together — dead but still in
// the others' views, which they leave within three beats (one, for a
// replica that stops) — does the slot run nowhere; the reconciler then
// reports it missed (reason unknown or no_replica), honestly, never run
// twice. An unknown view (at start, stores down) or Candidates negative:
// every replica is a candidate.

// DefaultCandidates is how many replicas try each slot at its due time.
const DefaultCandidates = 2

// dueFallbacks is F, how many replicas after the candidates, in a slot's
// ranking, check it Fallback later. Two: with the default two candidates a
// slot survives any three replicas lost together between two views — a
// rolling restart takes one or two at a time (maxUnavailable ¼ of nine),
// and a crash of one more during it still leaves the slot a live fallback
// — while the fallbacks' reads per slot stay two, whatever the fleet. One
// would lose slots to a deploy taking two replicas plus one crash; more
// buys tolerance of larger simultaneous losses at a read each per slot.
// On three replicas every non-candidate is a fallback, as before.
const dueFallbacks = 2

// DefaultFallback is how long after a slot's due time the fallbacks
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

// slotRole is what this replica does for a slot.
type slotRole int8

const (
	roleCandidate slotRole = iota // claims it at its due time (plus its spread)
	roleSecond                    // a candidate after the first: checks it SecondDelay×rank later, tries it if not handled
	roleFallback                  // checks it Fallback later, tries it if not handled, unless past its capacity
	roleIdle                      // does nothing for it
)

// slotRank is this replica's rank among the live replicas for slot t of
// job: 0 for the one whose score for (job, t) is highest. noRank when
// there is no view. One hash of (job, t), then one mix per replica in
// the view with its seed: no name is hashed and nothing is allocated.
func (f *fleet) slotRank(job string, t time.Time) int {
	v := f.view.Load()
	if v == nil {
		return noRank
	}
	h := slotHash(job, t)
	mine := slotScore(h, f.seed)
	rank := 0
	for i, seed := range v.seeds {
		if i == v.self {
			continue
		}
		if sc := slotScore(h, seed); sc > mine || (sc == mine && v.names[i] < f.cfg.Replica) {
			rank++
		}
	}
	return rank
}

// slotScore is a replica's rendezvous score for a slot, from the slot's
// hash and the replica's seed. It depends on that pair alone, so a
// replica joining or leaving the view moves only the slots it wins or
// loses, and every replica computes the same score for each other.
func slotScore(slot, seed uint64) uint64 { return mix64(slot ^ seed) }

// replicaSeed is a replica's name hashed once (FNV-1a, then mixed so that
// names that differ in a character differ in every bit).
func replicaSeed(name string) uint64 { return mix64(fnv64a(name)) }

// slotHash is the hash of (job, slot t) that a replica's score and its
// spread (spreadDelay) come from.
func slotHash(job string, t time.Time) uint64 {
	return mix64(fnv64a(job) ^ mix64(uint64(t.Unix())))
}

// fnv64a is FNV-1a over s, without the allocation of hash/fnv's writer.
func fnv64a(s string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// mix64 is SplitMix64's finalizer: every input bit flips about half the
// output bits, so that ranks do not follow the replicas' names.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
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
	u := float64(slotScore(slotHash(job, t), f.seed)>>11) / (1 << 53) // uniform in [0, 1)
	return time.Duration(u * u * float64(f.cfg.Spread))
}

// slotDelay is when, after its due time, this replica tries slot t of
// job, and in which role. Candidates go in rank order (rank 0 at once): a
// deterministic order avoids split votes better than a random one; the
// ones after the first, SecondDelay apart, look first whether the first
// handled the slot. Measured at 1,000 every-second jobs on three
// replicas, the second candidate's claim, 5 ms after the first's, was
// refused on every slot but a few (held or done) and cost each slot a
// claim on every node, about a fifth of the replicas' and the nodes' CPU
// (docs/performance.md). With SecondDelay negative they claim at once,
// Spread apart in all. Without a view, every replica is a candidate with
// its random spread (spreadDelay). An idle replica's delay is 0: the
// timer looks at the slot at its due time, and should the view have
// changed by then, it takes the slot's new role on time.
func (f *fleet) slotDelay(job string, t time.Time) (time.Duration, slotRole) {
	rank := f.slotRank(job, t)
	k := f.candidates()
	switch {
	case rank == noRank || k <= 0:
		return f.spreadDelay(job, t), roleCandidate
	case rank >= k+dueFallbacks:
		return 0, roleIdle
	case rank >= k:
		return f.fallback, roleFallback
	case rank == 0:
		return 0, roleCandidate
	case f.cfg.SecondDelay >= 0:
		return time.Duration(rank) * f.cfg.SecondDelay, roleSecond
	case f.cfg.Spread <= 0:
		return 0, roleCandidate
	}
	return time.Duration(rank) * f.cfg.Spread / time.Duration(k-1), roleCandidate
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
