// Package driver is what a lock store implements for package locking, as
// database/sql/driver is for database/sql: a caller uses locking's Locker
// and Lease, and never this package.
//
// A Driver does the store calls of each step of a lease — Acquire, Extend,
// Release, UndoAcquired — and its reads and writes of the fleet's state
// beside the locks are the Store. locking.NewLocker wraps a Driver in the
// front end that makes the values, measures validity and runs the
// watchdog, so every driver behaves the same to a caller. Three implement
// it: locking.NewLocal's in-process driver, the Redlock quorum over Redis
// nodes (locking/redlock, whose package documentation gives the
// algorithm, the fencing tokens' proof and how calls are pipelined), and,
// one level down, the simulated stores of locking/locksim, which are
// Nodes under the Redlock driver. The conformance suite
// (locking/lockingtest) checks every one alike.
//
// The values that cross the boundary have one definition here (Key,
// Pause, LogEntry, Abandoned, the errors) and an alias in locking; the
// ones only a driver sees are Lease, Grant, End and Released. The helpers
// keep every driver's formats the same: ParseHeld and ParseAbandoned read
// a stored value, FormatPause, ParsePause and NewestPause the pause
// register, MergeLogs and TrimLog a family's log, CheckKey and CheckRecord
// what may be written.
//
// The rest of this comment is how a driver must behave, and why that is
// safe.
//
// # Keys
//
// A Key is a Family (one per job) and a Name. In Redis it is
//
//	<prefix>:{<family>}:<name>
//
// so that every key of a family, its fencing counter
// (<prefix>:{<family>}:fence), its open claims (the hashes
// <prefix>:{<family>}:claims and :lives), its pause register
// (<prefix>:{<family>}:pause), its log (<prefix>:{<family>}:log) and its records
// share one hash tag and live in one cluster slot: each Lua script touches
// one slot only. CheckKey refuses those names ("fence", "claims", "lives",
// "pause", "log", "undone:…") as a key's Name, and a family with a brace,
// which would split the tag.
//
// The client reaches each store through a Node: one atomic Op per call
// (acquire, extend, release, pause, fence, max-set, get, ping, log, log
// append, claims), a Lua script or a
// command on Redis, and the same operations in Go on the simulated stores of
// locking/locksim, which the conformance suite checks alike.
//
// # Drivers
//
// locking's front end (Locker, Lease, the Store's checks)
// makes values, measures validity and runs the watchdog; a Driver does
// each step's calls on the lock stores. NewLocal's driver is an in-process
// map; locking/redlock's is the Redlock quorum over Redis nodes, whose
// package documentation gives the algorithm, the fencing tokens' proof and
// how calls are pipelined. A driver applies the Node ops' semantics
// (ops.go) to its stores; the conformance suite (locking/lockingtest)
// checks every driver alike, and the simulated stores of locking/locksim
// run under the Redlock driver in the simulation.
//
// # Claims: work done at most once
//
// Claim is Acquire for work that must never be done twice (a slot). The
// acquire script also writes the claim — the lease's value — into the
// family's claims hash, and the lease itself, with an expiry on the node's
// clock, into the lives hash. The claim stays until the lease's owner ends
// it (locking.Lease.End with a done marker replaces it by the marker; End without
// one, before the work began, deletes it). When its holder dies or freezes,
// the lease expires and the claim stays: the next Claim of the key takes
// the lease over and learns (locking.Grant.Abandoned) that the work was abandoned
// — it must report it and end it with a done marker, never do it. Only one Claim can hold that lease at a time, and
// the done marker it writes on a majority refuses every later one, so the
// report is made once.
//
// Why a started claim is never handed out fresh: its Claim succeeded on a
// majority M1, which all hold the claim until it is ended; any later
// Claim's majority M2 meets M1 in a node that answers "taken over", or
// "held" while a lease lives there — the refusal then carries the claim
// under that lease (Result.Claim), whoever's lease it is, so a claim
// taken over on one node by a concurrent taker still counts there. A
// claim counts when the same value is found on a majority; on a minority
// while every node answered it is a leftover — a node that missed an end,
// or a request executed after its acquisition failed — which the new lease
// covers and ends; on a minority while a node is silent it may be a
// started claim whose other copies are on the silent nodes, and the key is
// refused (HeldError.Claimed). A claim refused on a majority by a claim
// under its own live lease, confirmed started on none of them, while
// another node that answered does not hold it, says so
// (HeldError.Unconfirmed): the claim of an acquisition whose owner's
// answers from those nodes were lost or late, whose undo has not reached
// them yet — it is gone a round trip later, and a caller whose work is
// still fresh asks again (the scheduler does, for a slot: otherwise a slot
// its only taker gave up would go unrun) — or a winner's a moment before
// its start is confirmed.
//
// # Started, not started, unknown
//
// A claim must end with one true outcome: the work ran (its owner ends
// it), it was abandoned (it started and its owner died), or it never
// started. The stores alone cannot tell "the owner won, began the work and
// died" from "the owner won but its answers were lost, or it died before
// reading them, so it never began": both leave the same claim on a
// majority. So the owner writes once more, but only where it costs no
// extra call:
//
//   - locking.Lease.Start declares the work begun (the scheduler calls it as the
//     job body is invoked). From then on every renewal of the claim's
//     lease (Keep's watchdog; the first within min(TTL/3, 1s) of Start)
//     also turns the claim, where it is still the owner's value, into
//     "started:<value>" on that node (ExtendOp with Start). A run that
//     ends sooner is confirmed by its end, which replaces the claim by the
//     done marker and the history entry: short runs make no extra call.
//     Start refuses (ErrLockLost) a lease whose validity has passed on the
//     owner's clock — an owner paused between the claim and the work, whose
//     claim another may have taken over and reported as one that may have
//     started: work begun then would contradict that report.
//   - A failed acquisition's undo is made sure of: sent to every node
//     where the claim may be, with a tombstone where the acquisition went
//     unanswered, and sent again to the nodes that did not answer it while
//     the claim may have landed on a majority.
//   - A Claim that takes a claim over on a majority (locking.Grant.Abandoned)
//     reports Abandoned.Started: true when any node it met holds the
//     started form.
//
// The caller reports Started as abandoned, and an unconfirmed one as "may
// have started": never as a run, never run again. Why each report is true:
//
//   - Abandoned.Started ⇒ the work began. The started form is written only
//     by ExtendOp with Start, which only the owner's lease sends, and only
//     after Start, which the owner calls as the work begins; and it is
//     written only over the owner's own claim value, so a takeover lease
//     (whose value differs) never marks another's claim. One node holding
//     it is proof enough.
//   - A claim a failed acquisition left is never reported as a run. The
//     owner never calls Start on a failed acquisition, so its claim is
//     never in the started form: at worst (the owner died before its undo
//     reached a majority) it is reported as "may have started", which
//     claims nothing false. While the owner lives, its undo reaches every
//     node that answers: a node that answered the undo no longer holds
//     the claim, and never will (the tombstone refuses the acquisition
//     arriving late, for a TTL). The claim's lease lives a TTL from each
//     node's write, and no one takes a claim over before its lease
//     expired on that node, so an undo that answers within the TTL leaves
//     nothing to take over: the phantom report of issue #21 (a claim that
//     timed out on a majority, undone once, lost on a slow node, and taken
//     over a TTL later as abandoned) cannot happen while the owner lives.
//   - Not started ⇒ never run, and runnable. A slot whose acquisitions all
//     failed and were undone holds no claim: the next acquisition of it (a
//     recovery, a backfill) wins it afresh; nothing reports it as a run.
//   - Unknown is rare and honest: only an owner that won on a majority
//     and stopped (died, froze past its lease, or was cut off) before its
//     first confirming renewal leaves an unconfirmed claim on a majority.
//
// Why no slot's work runs twice, also when the undo races a takeover. A
// claim that started work was granted on a majority M1, and its owner
// called Start only after that grant. Every later Claim's majority M2
// meets M1 in a node that holds the claim (taken over: Status 2; or under
// a live lease, its owner's or a taker's: Result.Claim) or its done
// marker, so the later Claim never gets a fresh grant: it gets the claim
// as abandoned, or a refusal. The undo only deletes a claim whose value is
// the undoing acquisition's own (compare-and-delete); a failed
// acquisition never called Start and was never granted, so the claims an
// undo removes are never those of started work, whatever the order in
// which an undo, a late acquisition and a takeover reach a node. A
// takeover lease over a claim the undo then removes ends (done marker)
// where the claim is gone as where it is there. Two takers racing over
// one abandoned claim (each first on a different node) both count the
// claim on every node where either one's lease refused them, so at most
// one of them wins a majority and reports it, and the done marker it
// writes on a majority refuses every later Claim.
//
// Why a settler whose end nobody answered still reports exactly once. A
// taker's end (the done marker and its log entry, locking.Ending.Entry) may land
// on a majority while every answer is lost (the taker froze, the network
// failed); its retry may come after the markers expired (a freeze or an
// outage longer than the done TTL), when the nodes hold nothing of the
// slot but the entry. A taker's entry is added only where its end found
// the lease its own (ReleaseOp.Taken; a run's own end adds its outcome
// also where a taker already closed its claim, beside the taker's), so a
// taker's retry that finds its own entry on a node knows that its first
// attempt found the lease its own there, and counts the node:
// the retry succeeds exactly where the first attempt did. Where it landed
// on a majority it removed the claim there, so no other taker can take
// that claim over on a majority (at most a leftover, which reports
// nothing); where it did not, the retry is told ErrLockLost and reports
// nothing, and another taker may settle the claim. Two takers must not
// write the same entry (the scheduler names the taker's claim in it);
// entries are trimmed to the log's newest Keep, which bounds how late a
// retry can still tell.
//
// Every Claim also reads the family's pause register (Pause, written by
// Store.SetPause as a versioned register: the newest write wins on every node).
// While the newest pause over the answering majority is active, the claim
// is undone and refused with a *PausedError — with, as its Refusal, the
// *HeldError of a lease that holds the key (work that may have begun
// before the pause) — unless it takes an abandoned claim over: settling
// a dead run's slot starts no work. A granted lease carries the
// newest pause (locking.Grant.Pause), so that its caller can tell work that was
// due during a pause that has since ended (Pause.Covers).
//
// Every successful Claim also reports one other claim of the family whose
// lease has expired (locking.Grant.Orphan), picked by the caller's random token
// among all of them: abandoned work is found by the next Claim in the
// family, without anyone looking for it.
//
// Extend and End are compare-and-act scripts keyed by the value: a stale
// holder, whose value was replaced, can neither extend nor delete the new
// holder's lock. End can instead turn the key into a done marker with a new
// TTL in the same script (locking.Ending.DoneTTL), so the scheduler remembers that
// a slot already ran; where the key had vanished the marker is set too,
// never over another holder's value. The watchdog (locking.Lease.Keep) renews
// every ttl/3; when it cannot renew on a majority before the validity ends,
// Lost closes and kept contexts are canceled with cause ErrLockLost.
//
// # Joint steps: one call per store per step
//
// A slot of a job that must not overlap needs two leases, the slot's claim
// and the job's lease, and its end touches three keys: the claim becomes
// the done marker, the job lease goes, the job's record rises. All share
// the job's hash tag, so each step is one script call per store:
//
//   - Claim(key, ttl, With(also)) runs the claim's acquire script with the
//     job lease as a sixth key: where the claim is new on a node, the job
//     lease is SET NX PX there in the same step. The claim's outcome is
//     decided exactly as Claim's; the job lease is the caller's (one
//     acquisition, the claim's token) only where it was set on a majority
//     and the claim is the caller's own work (not taken over, not a
//     leftover). Otherwise it is deleted, by value, wherever it was set or
//     may have been, and the caller takes it alone. Every undo of a joint
//     claim releases both in one call.
//   - locking.Lease.End(Ending{..., Also, Record}) runs the claim's release script
//     with the job lease and the record as fifth and sixth keys: deleted
//     where it holds its value, and max-assigned, whatever else the script
//     does. Each part keeps its own verdict (a majority of "ours" for a
//     lease, a majority that ran the script for the record), so a part
//     that did not settle is retried alone.
//
// The joint steps change how many calls a slot costs, never what any key
// holds afterwards: the conformance suite checks them on every store.
//
// # Guarantees and limits
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
//     replication, can lose locks and counters (see above).
//   - Network delay counts against validity: a slow acquisition hands out
//     a shorter lease, and one slower than the TTL is refused and undone.
//   - Claims expire by the node's clock (TIME in the scripts): a node whose
//     wall clock jumps forward can take a live run for abandoned early (it
//     is then reported, never run again).
//
// Records and tokens are compared as Lua numbers, exact up to 2^53.
package driver
