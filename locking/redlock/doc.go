// Package redlock is locking's driver for Redis: the Redlock algorithm
// over N independent Redis nodes, with fencing tokens kept as a quorum
// register, and the Redis transport it runs on (Lua scripts, pipelined
// calls).
//
// # Using it
//
// New returns a locking.Locker over the nodes of a Config; it does not
// connect, so nodes down now are tried again on every operation and New
// fails only on a configuration error:
//
//	lk, err := redlock.New(redlock.Config{
//		Nodes: []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"},
//		TLS:   true, Username: "slotlock", Password: os.Getenv("REDIS_PASSWORD"),
//	}, locking.Options{Replica: "replica-a"})
//
// Everything else — Claim, Lease, Store — is package locking's; this
// package only does the store calls of each step. OnNodes runs the same
// algorithm over any driver.Node (the simulation's stores, or Redis
// nodes wrapped by a test to delay or lose requests); RedisNodes makes the
// Redis ones. CheckEviction reads each node's maxmemory-policy (anything
// but noeviction can lose a lock). RouteRedisLog sends go-redis's own
// messages to a slog.Logger.
//
// The rest of this comment is how it works, and why it is safe; the
// claims, the started/unknown rule and the limits are in package
// locking's documentation.
//
// # Algorithm (Redlock)
//
// Acquire(key, ttl) draws a fresh 128-bit random token and stores the value
// "<token-hex>|<replica>". It runs ONE Lua script on every node in
// parallel: if the key is absent, SET it with PX ttl and return the
// family's fencing counter; otherwise return the value found. Each node has
// OpTimeout (default 100ms) for this, go-redis retries are off, so a dead
// or frozen node costs one OpTimeout, never a TTL. A round short of a
// majority at OpTimeout waits for one up to 3 × OpTimeout (lock.ttl is
// more than that): on a loaded host every answer is read late, and a
// fixed OpTimeout turned answers that had come into failures, retried
// and loading the host more — nine replicas and three nodes on 2 cores
// collapsed from 1,000 every-second jobs to a dozen run a second. A
// pipeline's socket has the same 3 × OpTimeout, except a lone caller's
// (below), which has OpTimeout or the node's recent round trip plus four
// deviations (TCP's estimator), so that a frozen node still costs one
// OpTimeout — and a pipeline that carries a release (an end or an undo),
// which the sender waits for up to 10 × OpTimeout: a timed-out pipeline's
// connection is closed, and a new one must answer go-redis's handshake
// (HELLO) before anything is written on it, so on a link whose round trip
// exceeds 3 × OpTimeout an undo would never be written behind the
// acquisition the node runs late. A node whose last pipeline went
// unanswered takes no lone caller's call: its calls go to the sender. No
// caller waits longer for it: rounds end at their own deadlines. On a
// Redis Cluster endpoint too: its cluster client follows no redirection
// itself (MaxRedirects -1), as its loop would send a timed-out pipeline
// again.
//
//   - Success needs a majority (N/2+1) of "set" answers and no done marker
//     anywhere, and validity = ttl − elapsed − drift must still be
//     positive, with drift = ttl/100 + 2ms. The lease is valid until
//     start + ttl − drift on the locker's Clock: the time was measured from
//     before the first request, so the keys on the nodes outlive that
//     point by at least the drift.
//   - On failure the value is deleted (compare-and-delete) on every node
//     that said yes or did not answer, even when the caller's context was
//     canceled; an answer that never came may still have been applied.
//     Where it did not answer, the undo also leaves a tombstone that
//     refuses the acquisition should it run there later; and where the
//     acquisition may have landed on a majority, the undo is sent again,
//     in the background, to every node that has not answered it, until
//     each has (at most 4 TTLs; Close stops it): see "Started, not
//     started, unknown" below.
//   - A plain lease refused by a value on a minority, where those nodes
//     would make a majority with ours, is no longer refused when that
//     value's holder gave it up: a release (or undo) that missed a node
//     leaves the value's tombstone on the nodes that answered, for the
//     lease's TTL, and the acquisition, finding it there, deletes the
//     leftover where it holds that value and is sent there again
//     (released.go). Without it, a job lease whose holder was cut from
//     node 0 when it ended kept a replica cut from node 2 out for a TTL,
//     though each reached a majority. A live lease has no tombstone.
//   - Extend renews the lease where it holds our value unexpired, and
//     spreads it where nothing holds it — for a claim: no lease, no claim
//     and no done marker for the slot — while the request is fresh by the
//     node's clock (OpTimeout + 1 s from its sending, as a joint
//     acquisition's). A lease won on a bare majority (two acquirers raced
//     and the loser undid its share, or one node missed the request)
//     reaches the third node at its next renewal, so that one node's
//     fault — a restart without its data, a failover, a stepped clock — no
//     longer leaves it on a minority. It never replaces another's value:
//     it only adds a node that refuses rivals. Nor can it hide a gap in
//     which another held the lease: a renewal counts only when answered
//     within the lease's validity (locking.Lease.Extend), while the lease
//     still lives on the majority that held it, so the nodes it was spread
//     to come on top of that majority. A renewal that queued on a frozen
//     node and runs after the lease ended finds the done marker the end
//     left, or is stale.
//   - The error tells why: a *HeldError naming the holder read from the
//     value; HeldError{Done: true} when any node holds a done marker
//     "done|<replica>|<note>"; a *SplitVoteError (errors.Is ErrSplitVote,
//     also a *HeldError) when the nodes that answered were split between
//     would-be holders and none reached a majority, so nobody holds the key
//     and a retry after a short random delay is likely to win; a
//     *QuorumError joining one *NodeError per failed node when fewer than a
//     majority answered; ctx.Err() when the context ended.
//
// # Calls in pipelines
//
// A Redis node sends its calls in pipelines (redisbatch.go): one sender
// per node takes whatever calls have queued and sends them as one write,
// their answers read back in one go. An idle node sends a call at once;
// calls that arrive while a pipeline is in flight form the next one (at
// most 256). Within a pipeline, the calls of one script are folded into
// ONE call of its batch form (redisfold.go), generated from the script's
// own source: it runs each call on its own keys and arguments, under
// pcall, and replies an array of the calls' replies, so a call's error is
// its own and the others run on. The folded calls run back to back in
// their queue order, atomically as a whole — stronger than the pipeline,
// which only orders them; a call folds only where no call between touches
// its hash tag, so the effect is the queue's order, tag by tag. On a
// Redis Cluster endpoint calls fold only within a hash slot. A burst of a
// thousand claims is thus a handful of script calls per node, not a
// thousand (TestBurstScriptCalls). A lone caller, the node idle, sends
// its own call, a plain call of the plain script, without the hop to the
// sender. A call this replica could not send before its deadline (its
// caller gave up while it queued, or too little time is left for the
// node's recent round trip) is not sent and is answered ErrBusy: this
// replica's overload, not a node fault, so "redis node unreachable" is
// only logged when a pipeline that was written fails or goes unanswered
// for its socket deadline from its write. A round that missed its majority for
// ErrBusy says so (errors.Is(err, ErrBusy)), and nothing is undone where
// nothing was sent. A call that was not sent because it queued behind a
// pipeline the node left unanswered for over half the op timeout (in
// flight, or just timed out) is the node's fault, not ErrBusy: a frozen
// node's callers see an outage, not their replica's overload.
//
// # Fencing tokens: a quorum register
//
// Every successful acquisition gets a token strictly greater than the token
// of every acquisition in the same family that completed before it began,
// and different from every other acquisition's. The family's counter
// <prefix>:{<family>}:fence lives on every node and is only ever raised.
//
// The acquire script also reads that counter and, where it sets the key,
// raises it to max(counter + 1, P) — P = (the highest token this locker has
// seen or proposed in the family) + 1 — returning it as raised. Every lease
// set on a node thus moves that node's counter up, so nodes that saw the
// same acquisitions hold the same counter. With the values the winning
// majority returned:
//
//   - T on a majority of the winners (the usual case: all agree; one node
//     that missed acquisitions does not matter): the counter went from
//     below T to T on a majority in this round, so T is the token and
//     Acquire needs no further round trip — two round trips for acquire +
//     release, like the bare SET NX + DEL floor, whichever replica
//     acquired last.
//   - no value on a majority of the winners (nodes missed acquisitions,
//     e.g. while down): the token is claimed by a compare-and-set round:
//     set the counter to T = the highest of them where it is lower, and
//     succeed if that happened on a majority; otherwise try again with one
//     more than the highest counter met (at most 16 rounds, then a
//     retryable split vote).
//
// Why it is monotone: the previous token T0 was on some majority M1 before
// its Acquire returned, and any two majorities of the same N nodes
// intersect. A value T that a majority of the next winners raised their
// counters to was raised on a node of M1, which held T0 or more: T > T0;
// and the highest raised value is at least T. Why it is unique: a
// token is handed out only when the counter went from below it to it on a
// majority; two acquisitions with the same token would both have done that
// on the node their majorities share, and the second found it already
// there. Counters are never lowered, so neither concurrent nor late writes
// undo this; a counter raised on some nodes by an attempt that then failed
// only makes later tokens larger. Replicas running the earlier script
// (raise to P where lower, return the counter as found; P the token when
// above every winner's) keep both properties beside these ones, so a
// rolling upgrade is safe: each hands out a token only after moving it
// from below to it on a majority.
//
// Records (Store.AdvanceRecord / ReadRecord) use the same register: max-assign on
// a majority, read the maximum over a majority, and write a value seen on
// only part of that majority back to a majority before returning it.
//
// What breaks it: a node that restarts without persistence comes back with
// no counter, no locks and no claims, so it no longer intersects the
// majorities that wrote to it; with one such node of three the next majority may consist of
// it and a node that missed the last write. Likewise a Redis replica
// promoted after a failover may lack the last acknowledged write. Run the
// nodes with an append-only file (appendfsync always for certainty;
// everysec can lose the last second on a crash). Keeping a restarted empty
// node out for one TTL protects the locks but not the counters. Never count
// two nodes that replicate each other as two nodes. Safety then rests on
// the majority that kept its data.
package redlock
