package driver

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking/internal/wire"
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
	// Acquire, Extend, Lease.End and the Store's operations return a
	// *QuorumError that matches it.
	ErrNoQuorum = errors.New("locking: no quorum")
	// ErrClosed is returned by a Locker after Close.
	ErrClosed = errors.New("locking: locker closed")
	// ErrSlowAcquire reports an Acquire that reached a majority but took so
	// long that the lease's validity was used up on the way: it was undone,
	// nobody holds the key, and trying again may succeed once the stores
	// answer faster. It is not ErrNotAcquired: nobody else holds the key.
	ErrSlowAcquire = errors.New("locking: validity used up during acquisition")
	// ErrSplitVote reports an Acquire in which the nodes that answered were
	// split between several would-be holders so that none, this one
	// included, reached a majority: typically several replicas firing in
	// the same millisecond. Nobody holds the key, and the attempt has been
	// undone, so trying again after a short random delay is likely to
	// succeed. The error is a *SplitVoteError.
	ErrSplitVote = errors.New("locking: split vote")
	// ErrStaleToken reports a fenced AppendLog (LogAppend.Token) that was
	// not made on a majority because some store had seen a newer token:
	// the lease that fenced it is no longer the newest.
	ErrStaleToken = errors.New("locking: a newer fencing token was seen")
	// ErrLogHasEntry reports an AppendLog with LogAppend.IfAbsent that
	// did not add its entry on a majority: stores held an entry of its
	// score already (another writer's, or this one's earlier attempt).
	ErrLogHasEntry = errors.New("locking: the log already holds an entry of that score")
	// ErrBusy reports a call that this replica did not send because its
	// own queue to the nodes could not send it before the call's deadline:
	// the replica is overloaded, no node is at fault (no "redis node
	// unreachable" is logged for it). Nothing was done on the nodes it was
	// not sent to; the caller sheds the work rather than retrying it.
	// Acquire and Claim wrap it (as a *QuorumError's cause) when a
	// majority was missed for that reason.
	ErrBusy = errors.New("locking: not sent, this replica's queue to the nodes is full")
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

func (e *SplitVoteError) Unwrap() error { return e.Held }

// HeldError is returned by Acquire when the key is held by another lease or
// is a done marker. errors.Is(err, ErrNotAcquired) holds.
type HeldError struct {
	Key    Key
	Holder string // replica name read from the value, "" when unknown
	Done   bool   // the key is a done marker (Ending.DoneTTL)
	Note   string // the done marker's note (e.g. "succeeded", "overlap")
	// Claimed: a claim (Locker.Claim) whose lease has expired was found on
	// fewer than a majority of the stores while some did not answer. It
	// may be a started run's, whose other copies are on the silent stores,
	// so the key is not handed out; once every store answers, it is either
	// taken over (Grant.Abandoned) or, found on a minority, a leftover that
	// the next Claim ends.
	Claimed bool
	// Unconfirmed: a claim found on a majority of the stores under its own
	// live lease, confirmed started on none of them, while a store that
	// answered does not hold it (it granted this acquisition, or holds
	// another value): the claim of an acquisition that may have
	// failed, whose undo has not reached those stores yet (its owner's
	// answers from them lost or late), or of a winner whose work is about
	// to begin. Either way it ends soon — undone, marked started, or
	// replaced by a done marker — so a caller whose work is still fresh may
	// ask again.
	Unconfirmed bool
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

func (e *QuorumError) Unwrap() error { return e.Err }

// NodeError is one node's failure inside a QuorumError.
type NodeError struct {
	Addr string
	Err  error
}

func (e *NodeError) Error() string { return "node " + e.Addr + ": " + e.Err.Error() }

func (e *NodeError) Unwrap() error { return e.Err }

// ParseHeld turns the value found in a key into the error Acquire reports:
// "<token>|<replica>" for a held key, "done|<replica>|<note>" for a done
// marker. Unknown formats give a HeldError with no holder.
func ParseHeld(key Key, value string) *HeldError {
	e := &HeldError{Key: key}
	if rest, ok := strings.CutPrefix(value, wire.DonePrefix); ok {
		e.Done = true
		e.Holder, e.Note, _ = strings.Cut(rest, "|")
		e.Note, _, _ = strings.Cut(e.Note, "|") // the lease id follows
		return e
	}
	if _, holder, ok := strings.Cut(value, "|"); ok {
		e.Holder = holder
	}
	return e
}

// ErrPaused is matched by the error of a Claim refused by a pause.
var ErrPaused = errors.New("locking: paused")

// PausedError is a Claim refused because its family is paused.
type PausedError struct {
	Key   Key
	Pause Pause
	// Refusal, when set, is what else refused the claim in the same
	// round: another lease holds the key (a *HeldError). A pause that
	// began after the work was due (Pause.Covers is false) did not stop
	// that lease's work: the key is held, not paused.
	Refusal error
}

func (e *PausedError) Error() string {
	s := "locking: " + e.Key.String() + " not claimed: paused"
	if !e.Pause.Until.IsZero() {
		s += " until " + e.Pause.Until.UTC().Format(time.RFC3339)
	}
	return s
}

func (e *PausedError) Is(target error) bool { return target == ErrPaused }
