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
// Release, ReadLog, ReadClaims, AppendLog) over the simulated stores of
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
// again once the done markers have expired), and the invariants are
// checked: no slot's body started twice; run.abandoned, and an abandoned
// outcome, only for a run whose body was invoked; exactly one final
// outcome per slot, agreeing with what the jobs saw; fencing tokens unique
// and increasing per job.
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
// unrepeatable); a body does not renew its lease (a run is confirmed by
// its end; a run paused past its lease is the pause fault); the orphan
// settle runs after the run's end, not beside it; an end that did not
// settle is retried once; settlers start whether or not a claim points to
// them; and the fencing-token order is checked along each explored order
// of events (states that differ only in which claim began first are one).
package smallworld
