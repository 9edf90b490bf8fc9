package locking

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrNotAcquired reports that the key is held by someone else (or is a
	// done marker). Acquire wraps it in a *HeldError that names the holder.
	ErrNotAcquired = errors.New("locking: not acquired")
	// ErrLockLost is the cause of a kept lease's context once the watchdog
	// could not renew the lease on a majority before it expired.
	ErrLockLost = errors.New("locking: lock lost")
	// ErrNoQuorum reports that fewer than a majority of nodes answered.
	// Acquire, Extend, Release and the record operations return a
	// *QuorumError that matches it.
	ErrNoQuorum = errors.New("locking: no quorum")
	// ErrClosed is returned by a Locker after Close.
	ErrClosed = errors.New("locking: locker closed")
	// ErrSlowAcquire reports an Acquire that reached a majority but took so
	// long that the lease's validity was used up on the way: it was undone,
	// nobody holds the key, and trying again may succeed once the stores
	// answer faster. errors.Is(err, ErrNotAcquired) holds too.
	ErrSlowAcquire = errors.New("locking: validity used up during acquisition")
	// ErrSplitVote reports an Acquire in which the nodes that answered were
	// split between several would-be holders so that none, this one
	// included, reached a majority: typically several replicas firing in
	// the same millisecond. Nobody holds the key, and the attempt has been
	// undone, so trying again after a short random delay is likely to
	// succeed. The error is a *SplitVoteError.
	ErrSplitVote = errors.New("locking: split vote")
)

// SplitVoteError is the error of a split vote: errors.Is(err, ErrSplitVote)
// and errors.Is(err, ErrNotAcquired) hold, and errors.As finds the
// *HeldError inside, naming the most frequent other holder.
type SplitVoteError struct {
	Held *HeldError
}

func (e *SplitVoteError) Error() string {
	s := "locking: " + e.Held.Key.String() + " not acquired: split vote, no majority"
	if e.Held.Holder != "" {
		s += " (also tried by " + e.Held.Holder + ")"
	}
	return s
}
func (e *SplitVoteError) Is(target error) bool { return target == ErrSplitVote }
func (e *SplitVoteError) Unwrap() error        { return e.Held }

// slowAcquireError is ErrSlowAcquire for one key.
type slowAcquireError struct{ key Key }

func (e *slowAcquireError) Error() string { return ErrSlowAcquire.Error() + ": " + e.key.String() }
func (e *slowAcquireError) Is(target error) bool {
	return target == ErrSlowAcquire || target == ErrNotAcquired
}

// Key names one lock. Family groups the keys whose fencing tokens must be
// ordered together (one family per job); it becomes the Redis hash tag, so
// every key of a family lives in one cluster slot:
//
//	<prefix>:{<family>}:<name>
type Key struct {
	Family string
	Name   string
}

func (k Key) String() string { return k.Family + ":" + k.Name }

// Reserved key names of a family: its fencing counter, and the hashes of
// its open claims and of their leases.
const (
	fenceName  = "fence"
	claimsName = "claims"
	livesName  = "lives"
)

// CheckKey reports whether k can be used: a non-empty family without
// braces or white space (it becomes the key's hash tag: a brace would
// split a family over cluster slots), and a non-empty name that is not
// reserved ("fence", "claims", "lives").
func CheckKey(k Key) error {
	switch {
	case k.Family == "":
		return fmt.Errorf("locking: key %q: empty family", k)
	case strings.ContainsAny(k.Family, "{} \t\r\n"):
		return fmt.Errorf("locking: key %q: family must not contain braces or white space", k)
	case k.Name == "" || k.Name == fenceName || k.Name == claimsName || k.Name == livesName:
		return fmt.Errorf("locking: key %q: name must be non-empty and not %q, %q or %q", k, fenceName, claimsName, livesName)
	}
	return nil
}

func checkKey(k Key) error { return CheckKey(k) }

// Abandoned describes a claim (Locker.Claim) whose lease expired before
// its holder ended it: the holder died or froze while working. Claim hands
// such a key to a new lease with Lease.Abandoned set, so that exactly one
// caller learns of it; the work must not be done again.
type Abandoned struct {
	Key    Key
	Holder string // the replica that claimed it
	ID     string // the claim's Lease.ID
}

func parseAbandoned(k Key, value string) *Abandoned {
	tok, holder, _ := strings.Cut(value, "|")
	return &Abandoned{Key: k, Holder: holder, ID: leaseID(tok)}
}

// leaseID is the short form of a lease's random token.
func leaseID(token string) string { return token[:min(len(token), 16)] }

// HeldError is returned by Acquire when the key is held by another lease or
// is a done marker. errors.Is(err, ErrNotAcquired) holds.
type HeldError struct {
	Key    Key
	Holder string // replica name read from the value, "" when unknown
	Done   bool   // the key is a done marker left by MarkDone
	Note   string // the done marker's note (e.g. "succeeded", "overlap")
	// Claimed: a claim (Locker.Claim) whose lease has expired was found on
	// fewer than a majority of the stores while some did not answer. It
	// may be a started run's, whose other copies are on the silent stores,
	// so the key is not handed out; once every store answers, it is either
	// taken over (Lease.Abandoned) or, found on a minority, a leftover that
	// the next Claim ends.
	Claimed bool
}

func (e *HeldError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "locking: %s not acquired", e.Key)
	switch {
	case e.Done:
		b.WriteString(": done")
		if e.Note != "" {
			b.WriteString(" (" + e.Note + ")")
		}
	case e.Claimed:
		b.WriteString(": claimed on a minority of the stores that answered")
	default:
		b.WriteString(": held")
	}
	if e.Holder != "" {
		b.WriteString(" by " + e.Holder)
	}
	return b.String()
}

func (e *HeldError) Is(target error) bool { return target == ErrNotAcquired }

// QuorumError reports that an operation reached fewer than Need nodes.
// Err joins (errors.Join) one *NodeError per node that failed.
// errors.Is(err, ErrNoQuorum) holds.
type QuorumError struct {
	Op   string // "acquire", "extend", "release", "record", "ping"
	Key  Key
	Need int
	Got  int
	Err  error
}

func (e *QuorumError) Error() string {
	s := "locking: " + e.Op
	if e.Key != (Key{}) {
		s += " " + e.Key.String()
	}
	s += fmt.Sprintf(": quorum not reached (%d of %d needed)", e.Got, e.Need)
	if e.Err != nil {
		s += ": " + strings.ReplaceAll(e.Err.Error(), "\n", "; ")
	}
	return s
}

func (e *QuorumError) Is(target error) bool { return target == ErrNoQuorum }
func (e *QuorumError) Unwrap() error        { return e.Err }

// NodeError is one node's failure inside a QuorumError.
type NodeError struct {
	Addr string
	Err  error
}

func (e *NodeError) Error() string { return "node " + e.Addr + ": " + e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// NodeStatus is one node's answer to a Ping.
type NodeStatus struct {
	Addr string
	Up   bool
	Err  error
}

// Locker hands out leases. Implementations: Redlock (N independent Redis
// nodes) and Local (in-process, one replica). Both pass the conformance
// suite in locking/lockingtest. A Locker is safe for concurrent use.
type Locker interface {
	// Acquire tries once to take key for ttl. On success the lease carries a
	// fencing token greater than that of every lease acquired before in the
	// same family. It fails with a *HeldError (errors.Is ErrNotAcquired) when
	// the key is held or is a done marker, a *QuorumError when a majority could
	// not be reached, or ctx.Err() when ctx ends first. A failed attempt leaves
	// nothing behind on the nodes it touched.
	Acquire(ctx context.Context, key Key, ttl time.Duration) (*Lease, error)

	// Claim is Acquire for work that must be done at most once. Besides the
	// lease it leaves a claim on key that stays until the lease's owner
	// ends it, so a holder that dies or freezes while working does not free
	// the key when its lease expires. Release (before the work began)
	// removes the claim; MarkDone turns it into a done marker. Once the
	// lease has expired, the next Claim takes the key over: it succeeds
	// with Lease.Abandoned describing the claim, and must not do the work
	// (report it, then MarkDone). A claim seen on any node counts, even
	// when a majority lets the caller in. A successful Claim may also
	// report, in Lease.Orphan, another key of the family whose claim was
	// abandoned, for the caller to Claim and report. A key is used either
	// with Acquire or with Claim, never both.
	Claim(ctx context.Context, key Key, ttl time.Duration) (*Lease, error)

	// AdvanceRecord raises the family's named record to at least v (max-assign)
	// on a majority. Records outlive leases (they have no TTL).
	AdvanceRecord(ctx context.Context, key Key, v int64) error
	// ReadRecord returns the largest value of the record seen on a majority
	// (0 when never written).
	ReadRecord(ctx context.Context, key Key) (int64, error)

	// Ping checks every node; it returns nil when a majority answered within
	// the op timeout. The slice has one entry per node, in configuration order.
	Ping(ctx context.Context) ([]NodeStatus, error)

	// Mode describes the locker for logs: "local" or "redlock(3 nodes)".
	Mode() string

	// Close releases the connections. Leases still held are not released.
	Close() error
}

// Timer is the part of *time.Timer the package uses, so a fake clock can
// provide its own.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Clock is the source of time for the scheduler and the lock layer.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// SystemClock is the real clock shifted by offset (SLOTLOCK_CLOCK_OFFSET).
// Durations measured with it stay monotonic.
func SystemClock(offset time.Duration) Clock { return systemClock{offset} }

type systemClock struct{ offset time.Duration }

func (c systemClock) Now() time.Time { return time.Now().Add(c.offset) }
func (c systemClock) NewTimer(d time.Duration) Timer {
	return realTimer{time.NewTimer(d)}
}

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time        { return t.t.C }
func (t realTimer) Stop() bool                 { return t.t.Stop() }
func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }
