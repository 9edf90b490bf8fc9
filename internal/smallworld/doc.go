// Package smallworld is the exhaustive small-world checker of slotlock's
// exactly-once protocol; all of it is in its tests:
//
//	go test ./internal/smallworld                        # the default world, in CI
//	go test ./internal/smallworld -check.world big -v    # a bigger world (world_test.go lists them)
//	go test ./internal/smallworld -check.world cast3 -check.time 10m -v  # stop after 10 min
//	go test ./internal/smallworld -run Replay -v         # the recorded counterexamples
//	go test ./internal/smallworld -run KnownLimits -v    # the schedules of a documented limit (testdata/*.limit)
//
// The simulation (scheduler/sim_test.go) samples random interleavings of
// a big world; this checker enumerates every interleaving of a small one:
// one job with one or two slots, three stores, two or three replicas
// firing each slot, two settlers pointed at the first slot, and, once the
// world has come to rest, a settler and a reconciler that close what is
// left. The rest of the cast that writes a slot's outcome is in worlds
// of its own (cast_test.go), on a slot every replica was down for: the
// reconciler's pass as an explored actor (read, judge, fenced IfAbsent
// write), a backfill (PlanBackfill's read of the join and the open
// claims, a claim, the history check under it and, where the slot has no
// entry, its own missed verdict (IfAbsent), Lease.Start, the body; killed
// at any step; in world judgerace at the same time as the reconciler's
// pass), a second backfill once the done markers expired,
// and the start-up probe (its skipped/late entry); the history trimmed at
// history.keep (world trim); a pause and a resume of the job (the pause
// register: worlds pause and pauselose), which the replicas' claims and
// the reconciler's pass read; a reload of the job's definition from
// overlap allow to forbid (reload_test.go: worlds reload, reloadcrash,
// reloadlose, reloadfast), with one process per slot firing it under the
// definition in force then (a slot fired under forbid claims with the job
// lease and looks for other slots' open claims: allowRuns; one fired
// under allow reads the job lease after its claim: leaseRuns); and a
// one-shot process's end whose answers are lost, retried or given up by
// the process's death (retry_test.go: worlds retry, retrybackfill). Every
// actor runs the real Redlock client
// (locking's Claim, Lease.Start, Lease.End, ReadLog, ReadClaims,
// AppendLog) over the simulated stores of
// locking/locksim; the network between them is the checker's: every
// request blocks until the explorer delivers it, so the explorer chooses,
// at each step, which request a store runs next, which process moves on,
// when time passes, and which fault strikes, within a fault budget that
// keeps a majority of the stores with their data:
//
//   - a request lost (never run; its sender times out);
//   - an answer lost (mute: the request runs, its sender times out; only
//     in the worlds that name it);
//   - a store frozen: it runs nothing, its senders time out, and when it
//     thaws it runs its queue in any order (every order is explored);
//   - a process that crashes at any step: at a step boundary, or between
//     the rounds of one call (its next round never sent);
//   - a process paused past its lease (time passes while it holds one);
//   - a store restarted empty, once, when what it holds is on both others;
//   - a failover (failover_test.go: only in the worlds that name it): a
//     store loses the last request that changed it, as a cache whose
//     promoted replica had not received it — what that request deleted is
//     back — once, when what it wrote is on both others;
//   - a stepped clock (leap_test.go: only in the worlds that name it): a
//     store's wall clock steps a lock TTL forward — every lease it holds
//     ends at once there, its scripts judge every claim there expired —
//     once, when what it holds is on both others.
//
// Events that are not faults: time passing by one lock TTL (a lease
// expires) and by a done marker's lifetime (expire: every done marker
// expires, so a slot's claim can be won again and only the history tells
// that it ran); the history trimmed at history.keep (worlds with a small
// keep: a later slot's end drops an older slot's entry on each store); a
// read that misses one node (a lost request, and, at the end, every
// majority's reading of the history: see the invariants).
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
// fencing tokens unique and increasing per job; and, for a slot whose
// body started, the join of its entries read from every majority of the
// stores (each store left out in turn: the read that misses it) is one a
// backfill refuses — the outcome stands on a majority, not on the union
// of three; a run that no line reports (its end's, run.abandoned,
// slot.missed: the one-shot settler that died with its answers lost) has
// an entry naming it on a majority of the stores; and no body run under
// overlap forbid runs beside another body of the job. A slot whose entry
// the history trimmed (history.keep newer entries) is exempt from the
// "has an outcome" checks only.
//
// The entries are the product's (history.Entry, as JSON, scored by the
// slot's time), so the stores sort and merge them as they sort the
// product's, and every reading of a slot's outcome — the backfill's plan
// and its check under its claim, closeRecorded, the probe's check — goes
// through the product's rules (product_test.go: history.JoinAll,
// Entry.Backfillable, the evidence order). Checking an older commit of
// the product swaps that one file for the commit's rules
// (testdata/prefix/product_test.go.pre: the rules before the join, with
// which the worlds backfill, probe and minority find issue #33's bugs 1
// and 2 from an empty prefix).
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
// a claim whose run the join already records, or an unconfirmed claim of
// a slot whose run's own end it records (closeRecorded). The reconciler
// takes its lease in the fleet family, reads the log, the claims, the log again,
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
// spent (requests a process sends one store side by side are named by
// their contents, not by the order their goroutines ran in); random
// tokens are renamed by who drew them, keeping their order;
// interchangeable processes (the replicas, the settlers) are folded
// together (stores are not: the fault budget names them); sleep sets
// skip the second order of two independent actions (different processes
// on different stores, or two requests that commute on their store,
// tried on copies of it); and a process's local step is
// taken alone, with the faults that can strike it there. The worlds of
// the whole cast come in phases (worldConfig.at: the reconciler's pass,
// then the backfill a TTL later, the settler, the second backfill), and
// may kill their processes only between steps (killAtSteps): the
// actors' programs are long, and their product with every interleaving
// of each other's requests is beyond exhaustion; -check.time stops a
// world and reports the share explored (a depth-first estimate).
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
// inline rather than spawned; the reconciler's pass has one missed
// reason (unknown) and reads the pause register only in worlds with a
// pauser; the probe and the backfill do not meet a pause (they are not in
// the pause worlds); a reload changes the overlap policy only (allow to
// forbid: a lowered jitter and a replaced schedule are in no world: their
// rules read time in seconds — markerTTL, continueAt, the reconciler's
// windows — that the world's ticks do not measure), the window it opens
// for allowRuns lasts the whole world, and a job lease held is asked for
// once (time stands still while it is held); the probe and the backfill work on slot 0 only, under misfire skip and
// overlap allow (no job lease); a backfill's plan reads the history once
// (PlanBackfill) and its run-time check once (slotRecorded's growing
// reads are one read of the whole log here); an end that did not
// settle is retried once (finishEnd retries until its grace: one retry
// that the stores answer is the same end), before any done marker can expire (a retry after its markers
// expired, told by its own history entry, is locking's interleaving
// check EndRetriedAfterItsMarkerExpired); settlers start whether or not
// a claim points to them; time passes only at ticks, so a background undo's timer fires and its requests
// time out only then (they stay in flight, to be delivered later); and
// the fencing-token order is checked along each explored order of events
// (states that differ only in which claim began first are one).
package smallworld
