// Package smallworld is the exhaustive small-world checker of slotlock's
// exactly-once protocol; all of it is in its tests:
//
//	go test ./internal/smallworld                        # the default world, in CI
//	go test ./internal/smallworld -check.world big -v    # the bigger world
//	go test ./internal/smallworld -run Replay -v         # the recorded counterexamples
//
// The simulation (scheduler/sim_test.go) samples random interleavings of
// a big world; this checker enumerates every interleaving of a small one:
// one job with one or two slots, three stores, two or three replicas
// firing each slot, two settlers pointed at the first slot, and, once the
// world has come to rest, a settler and a reconciler that close what is
// left. Every actor runs the real Redlock client (locking's Claim, Lease.End,
// ReadLog, ReadClaims, AppendLog) over the simulated stores of
// locking/locksim; the network between them is the checker's: every
// request blocks until the explorer delivers it, so the explorer chooses,
// at each step, which request a store runs next, which process moves on,
// when time passes, and which fault strikes, within a fault budget that
// keeps a majority of the stores with their data:
//
//   - a request lost (never run; its sender times out);
//   - a store frozen: it runs nothing, its senders time out, and when it
//     thaws it runs its queue in any order (every order is explored);
//   - a process that crashes at any step: at a step boundary, or between
//     the rounds of one call (its next round never sent);
//   - a process paused past its lease (time passes while it holds one);
//   - a store restarted empty, once, when what it holds is on both others.
//
// Time stands still while any request is awaited (a timeout is the
// explorer's choice, allowed only where a fault explains it) and moves by
// one lock TTL at a time, when nothing is awaited and no lease holder is
// running unpaused: leases expire then, and settlers may start.
//
// After every terminal state — no request pending, no process able to
// move — the world is healed and closed as the product closes it (a
// settler takes any claim left over, a reconciler judges the slot, then
// again once the done markers have expired), every process's locker is
// closed (its background undos stop, as at a process's exit), and the
// invariants are checked: no slot's body started twice; run.abandoned,
// and an abandoned entry, only for a run whose body was invoked; a
// may-have-started entry only for a claim whose holder was lost (crashed
// or paused) before confirming, or whose claimer crashed during its
// claim; exactly one final outcome per slot — the one the history read
// model shows when a slot has two entries (scheduler/history's join, by
// the order of evidence: a run's own end over abandoned over
// may-have-started over missed) — agreeing with what the jobs saw;
// fencing tokens unique and increasing per job.
//
// What the programs mirror (model_test.go), on the protocol of issue #21:
// attemptSlot calls Lease.Start as the body begins (run.go) and the
// watchdog's first renewal (Extend, with the start) confirms it; a claim
// taken over is settled by Abandoned.Started — abandoned and run.abandoned
// for a confirmed start, else settleUnconfirmed's missed entry with reason
// unknown and may_have_started, and slot.missed; a leftover is released
// and the slot skipped "claimed"; settleOrphan closes a claim that is not
// abandoned (no store shows it started) with a done marker and no entry;
// a settler first reads the history and closes, without a second report,
// a claim whose run the join already records (closeRecorded). The reconciler takes its
// lease in the fleet family, reads the log, the claims, the log again,
// settles an open claim (settleOrphan) and stops there, and writes a
// missed entry fenced by its lease's token and only where the slot has
// none (IfAbsent), logging slot.missed only when its write added it. A
// failed acquisition's undo re-sent in the background (locking's
// undoLater) is the real client's, over the same controlled network.
//
// State space reduction: stateless re-execution from the root for each
// branch (the processes are goroutines in a testing/synctest bubble, and
// crypto/rand is seeded per path, so a schedule replays exactly), with the
// states seen memoised by a hash of the stores' contents, the requests in
// flight, each process's progress (the answers it received and the steps
// it took: its code is deterministic in them), the clock and the faults
// spent; random tokens are renamed by who drew them, keeping their order;
// interchangeable processes (the replicas, the settlers) are folded
// together; sleep sets skip the second order of two independent actions
// (different processes on different stores, or two requests that commute
// on their store, tried on copies of it); and a process's local step is
// taken alone, with the faults that can strike it there.
//
// What the model leaves out: the processes' programs follow the
// scheduler's decisions (model_test.go) rather than calling its unexported
// slot path (its retries wait random times, which would make a schedule
// unrepeatable); a body renews its lease once, to confirm its start, and
// always before its end (a body shorter than the first renewal is
// confirmed by its end alone: a crash before that renewal leaves the same
// stores); a renewal that fails does not cancel the body (the scheduler's
// would end it as canceled: the same end, another name); the orphan
// settle runs after the run's end, not beside it, and the reconciler's
// inline rather than spawned; the reconciler's pass has no pause to read
// and one missed reason (unknown); an end that did not settle is retried
// once, before any done marker can expire (a retry after its markers
// expired, told by its own history entry, is locking's interleaving
// check EndRetriedAfterItsMarkerExpired); settlers start whether or not
// a claim points to them; time passes only at ticks, so a background undo's timer fires and its requests
// time out only then (they stay in flight, to be delivered later); and
// the fencing-token order is checked along each explored order of events
// (states that differ only in which claim began first are one).
package smallworld
