// Package locking hands out leases on keys: the exclusion layer under
// slotlock's "every slot of every job runs once across N replicas".
//
// # What a lease is
//
// A lease is the right to a Key for a while (its TTL), granted by a
// majority of independent lock stores, so that no other lease on the same
// key is valid at the same time. A Key is a Family (one per job) and a
// Name. A Locker hands leases out and keeps, on the same stores, the
// Store: what a fleet of replicas shares beside its locks. NewLocal gives
// one for a single process; locking/redlock's New one over N independent
// Redis nodes. Both pass the same conformance suite (locking/lockingtest),
// so a caller cannot tell them apart. A store of another kind is a driver
// (package locking/driver) handed to NewLocker.
//
// # Taking one
//
// Acquire takes a key for a TTL, once; it fails with a *HeldError while
// another lease holds it. Claim takes it for work that must be done at
// most once (a slot): the claim stays until its owner ends it, so work
// whose holder died is reported, never done twice.
//
//	lease, err := lk.Claim(ctx, locking.Key{Family: "report", Name: "slot:1795860000"}, 30*time.Second)
//	if err != nil {
//		return err // *HeldError (someone has it, or Done: it ran), *QuorumError, *PausedError
//	}
//	if g := lease.Grant(); g.Abandoned != nil || g.Leftover {
//		// Not this caller's work to do: report it, then end it with a done marker.
//	}
//	work := lease.Keep(ctx) // renewed every TTL/3; canceled with cause ErrLockLost if lost
//	if err := lease.Start(); err != nil {
//		return err // ErrLockLost: paused past the lease since the claim; do not start
//	}
//	err = run(work, lease.Token())
//	res := lease.End(ctx, locking.Ending{DoneTTL: time.Hour, Note: "succeeded"})
//
// A Claim's Grant says what it found beside the key: Abandoned, a claim
// whose holder never ended it (report it, end it with a done marker, never
// run it; Abandoned.Started tells whether its work began); Leftover, a
// minority's stale claim the lease now covers; Orphan, another abandoned
// claim of the family to Claim and report. With takes the job's own lease
// in the same step as the claim.
//
// # Renewal
//
// Keep starts the watchdog, which renews the lease every TTL/3 and
// returns a context canceled with cause ErrLockLost once it could not
// renew on a majority before the lease's validity (ValidUntil) ran out;
// Lost closes then too. Extend renews once by hand. Start declares the
// work begun, so that a holder that dies afterwards is reported as having
// started it. End ends the lease once: released, or turned into a done
// marker that refuses the key for Ending.DoneTTL, with a log entry, the
// job's lease and a record in the same step on each store (Released
// reports each part).
//
// # Fencing
//
// Every lease carries a fencing token (Lease.Token), greater than that of
// every lease acquired before in its family. A holder paused past its
// lease does not know it lost it until it runs again; a resource that
// remembers the highest token it has seen refuses that stale holder's
// writes. The lock alone cannot give that guarantee; the token can.
// LogAppend.Token fences the Store's own log the same way.
//
// # Pause
//
// The Store keeps each family's pause register (SetPause, ReadPause):
// while a pause is active, Claim fails with a *PausedError (its Refusal is
// the *HeldError of a lease that holds the key, work that may have begun
// before the pause) unless it takes an abandoned claim over, which starts
// no work; a granted claim carries the newest pause (Grant.Pause) so that work due during a
// pause that has since ended can be told apart (Pause.Covers). Acquire is
// not affected. The Store also keeps each family's log (AppendLog,
// ReadLog), its records (AdvanceRecord, ReadRecord: max-assigned
// integers) and its open claims (ReadClaims, Handled); ReadLease tells
// whether a plain lease's key is held (a job's lease, read by a run that
// takes none).
//
// Why all of this holds — the claims, their proof, the joint steps — is
// in package locking/driver, for implementers.
//
// # Limits
//
// While a lease is valid and a majority of nodes keeps its data, no other
// lease on the same key is valid. That rests on assumptions:
//
//   - Clock drift: the nodes expire keys by their own clocks and the locker
//     measures validity by its own. A rate difference larger than the drift
//     allowance (1% of the TTL + 2ms) over one TTL, or a wall clock that
//     jumps on a node (Redis uses it for expiry), can end a key early on a
//     node. Keep clocks disciplined (NTP slewing, not stepping).
//   - Process pauses: a holder paused (GC, a frozen VM, SIGSTOP) past its
//     validity does not know it lost the lease until it runs again; the
//     watchdog then reports the loss without asking the nodes, but the
//     paused work may already have written something. That is why every
//     job run receives the fencing token: a resource that remembers the
//     highest token it has seen can refuse the writes of a stale holder.
//     The lock alone cannot give that guarantee; the token can.
//   - Node restarts without persistence, and failover with asynchronous
//     replication, can lose locks and counters (docs/guarantees.md).
//   - Network delay counts against validity: a slow acquisition hands out
//     a shorter lease, and one slower than the TTL is refused and undone.
//   - Claims expire by the node's clock (TIME in the scripts, read once
//     per script call: the calls a pipeline folds into one run as of that
//     call's start, as Redis judges key expiry): a node whose wall clock
//     jumps forward can take a live run for abandoned early (it is then
//     reported, never run again).
//
// The clocks can be watched: the Lockers NewLocker makes implement
// ClockReader, whose ReadClocks reads every node's clock against the
// locker's own, with the uncertainty of each read (the scheduler's clock
// check warns from it when a replica's clock, or a node's, is off).
// Likewise IdentityReader's ReadIdentities asks each node which server it
// is and whose data it holds: the algorithm counts nodes as independent,
// and two addresses of one server, or a replica, count as nodes they are
// not (the scheduler's node check warns from a reading, `slotlock status`
// shows it).
//
// Records and tokens are compared as Lua numbers, exact up to 2^53.
package locking
