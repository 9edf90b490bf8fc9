// Package fence makes a job's writes exactly-once in effect, not only in
// start: guards that accept a write only if its fencing token is not lower
// than the highest token already accepted for what it writes to, checked
// atomically with the write.
//
// # Why exactly-once starts are not enough
//
// slotlock starts every slot of a job once across its replicas: a Redlock
// lease, renewed by a watchdog while the run goes on, keeps other replicas
// off. But a lease is a promise about time, and a process can lose track of
// time: a replica frozen by a long GC pause, a stopped VM or a SIGSTOP, or
// a packet stuck in a congested network, wakes after its lease expired.
// Meanwhile another replica took the next slot and wrote. The woken run
// does not know yet that it lost the lease (slotlock cancels it as soon as
// its watchdog sees that, but a write already on its way is not recalled)
// and writes too: an older result overwrites a newer one.
//
// No lock alone can prevent that; the receiving side can. Every run gets a
// fencing token, strictly greater than the token of every run of its job
// that acquired before it (SLOTLOCK_FENCING_TOKEN for exec jobs,
// jobs.Run.FencingToken for Go plugins, X-Slotlock-Fencing-Token on the
// http plugin's requests). If the store a job writes to remembers the
// highest token it accepted and refuses a lower one, the frozen run's late
// write is refused, whatever the timing:
//
//	replica A  run token 7 ──── frozen ──────────── wakes: write(7) → ErrStale
//	replica B                 run token 8: write(8) ✓
//
// (In a Go job the woken run's write usually does not get that far: see
// "A woken run's context" below.)
//
// # Which guard where
//
//   - Redis: Redis.Set, Redis.HSet, Redis.XAdd (and Redis.Advance) run one
//     Lua script through Redis.Client, a go-redis v9 client
//     (github.com/redis/go-redis/v9: *redis.Client, *redis.ClusterClient,
//     any redis.UniversalClient), the Redis client slotlock uses itself. The
//     script compares, writes and raises the fence in one atomic step. The highest token lives at FenceKey(key), in the data key's
//     hash slot, so it works on Redis Cluster endpoints. Cost: the script
//     instead of the plain command (one round trip either way), one extra
//     GET and usually one extra SET inside Redis, and one small key per
//     data key.
//   - SQL (PostgreSQL, database/sql with any driver): SQL.Exec runs your
//     write in a transaction after the guard statement, an upsert of the
//     resource's row in the fence table (SQL.CreateTable) that succeeds
//     only for a token not lower than the row's. The row stays locked until
//     the transaction ends, so writes to one resource are applied in token
//     order. Cost: one extra statement (one round trip) per transaction,
//     one row per resource. SQL.Guard is the statement alone, for a
//     transaction you run yourself.
//   - HTTP receivers: HTTP.Wrap is net/http middleware for a service that
//     slotlock's http plugin calls: it answers 409 Conflict to a request
//     whose X-Slotlock-Fencing-Token is lower than the highest it admitted
//     for its X-Slotlock-Job, which fails the run with error class
//     stale_token. The highest tokens live in a Store: Memory for a single
//     instance, Redis when the service runs several.
//   - exec jobs (shell): the same guards from the command line. A
//     `redis-cli EVAL` of RedisScript, or psql running the guard statement
//     in the write's transaction; see examples/fenced-exec and
//     docs/exactly-once-effects.md. A refused recipe exits 75
//     (jobs.ExitStaleToken), which slotlock records with error class
//     "stale_token".
//
// # What a refusal looks like
//
// Every guard returns a *StaleError on a stale token; errors.Is(err,
// ErrStale) tells it apart from a failure of the store. Return it from the
// job: slotlock records the run as run.failed with error_class
// "stale_token" (or run.canceled with reason lock_lost and error_class
// "stale_token", when the watchdog noticed the lost lease first). Nothing was written: retrying with the
// same token cannot succeed, and need not, since a newer run did the work.
//
// # A woken run's context
//
// slotlock cancels a run's context as soon as its watchdog sees the lease
// lost, with the cause locking.ErrLockLost. A Go job's guarded write made
// after that fails with context.Canceled before it reaches the store (the
// Redis and SQL guards send nothing under a canceled context), not with
// ErrStale: as safe (nothing was written), and the run is recorded as
// run.canceled reason lock_lost. Tell the two apart with
// errors.Is(err, context.Canceled) && errors.Is(context.Cause(ctx),
// locking.ErrLockLost). Only a write already on its way, or one made under
// a context that ignores the run's, meets the guard and gets ErrStale.
//
// # Equal tokens
//
// A token equal to the highest is accepted, so a run may write several
// times and retry attempts (which share the run's token) are not refused.
// Fences are never lowered and never expire: delete them (the fence key, the
// fence row) only together with the data they guard.
//
// # The resource
//
// A fence orders the writes to one resource: for Redis the data key, for
// SQL a resource name of your choice (a table, a row, a report), for HTTP
// the job. Guard every write to a resource, with the token of the run that
// makes it; a resource written by several jobs needs tokens from one
// sequence, so give each job resources of its own.
package fence
