package locking

import (
	"errors"

	"github.com/slotlock/slotlock/locking/driver"
)

// The values a caller passes and gets back are the ones that cross to the
// driver, so they have one definition (in locking/driver) and one name
// here.
type (
	// Key names one lock: a Family (one per job) and a Name.
	Key = driver.Key
	// Abandoned describes a claim whose holder never ended it
	// (Grant.Abandoned, Grant.Orphan).
	Abandoned = driver.Abandoned
	// Pause is a family's pause state (Store.SetPause, Grant.Pause).
	Pause = driver.Pause
	// PauseSpan is a pause that ended, kept in the register (Pause.Past).
	PauseSpan = driver.PauseSpan
	// NodeStatus is one node's answer to Locker.Ping.
	NodeStatus = driver.NodeStatus
	// NodeClock is one node's clock against the caller's
	// (ClockReader.ReadClocks).
	NodeClock = driver.NodeClock
	// NodeIdentity is which server a node is and whose data it holds
	// (IdentityReader.ReadIdentities).
	NodeIdentity = driver.NodeIdentity
	// Store is the fleet's state kept beside the locks: pause register,
	// log, records, open claims.
	Store = driver.Store
	// LogEntry is one entry of a family's log.
	LogEntry = driver.LogEntry
	// LogAppend is one Store.AppendLog.
	LogAppend = driver.LogAppend
	// Released is the outcome of Lease.End, per part ended.
	Released = driver.Released

	// HeldError: the key is held by another lease or is a done marker.
	HeldError = driver.HeldError
	// SplitVoteError: no would-be holder reached a majority.
	SplitVoteError = driver.SplitVoteError
	// QuorumError: fewer than a majority of the nodes answered.
	QuorumError = driver.QuorumError
	// NodeError is one node's failure inside a QuorumError.
	NodeError = driver.NodeError
	// PausedError: a Claim refused because its family is paused.
	PausedError = driver.PausedError
)

// Sentinel errors, the same values as the driver's. Test with errors.Is.
var (
	// ErrNotAcquired: the key is held, or is a done marker (*HeldError).
	ErrNotAcquired = driver.ErrNotAcquired
	// ErrLockLost: the lease could not be renewed on a majority in time,
	// or the key is no longer this lease's; a kept context's cause.
	ErrLockLost = driver.ErrLockLost
	// ErrNoQuorum: fewer than a majority of the nodes answered
	// (*QuorumError).
	ErrNoQuorum = driver.ErrNoQuorum
	// ErrClosed: the Locker was closed.
	ErrClosed = driver.ErrClosed
	// ErrSlowAcquire: the acquisition used up the lease's validity; it was
	// undone and nobody holds the key.
	ErrSlowAcquire = driver.ErrSlowAcquire
	// ErrSplitVote: no would-be holder reached a majority; nobody holds
	// the key, and a retry after a short random delay likely succeeds.
	ErrSplitVote = driver.ErrSplitVote
	// ErrStaleToken: a fenced AppendLog met a newer token.
	ErrStaleToken = driver.ErrStaleToken
	// ErrLogHasEntry: an AppendLog with IfAbsent found an entry of its
	// score.
	ErrLogHasEntry = driver.ErrLogHasEntry
	// ErrBusy: this replica's own queue to the nodes could not send the
	// call in time; no node is at fault.
	ErrBusy = driver.ErrBusy
	// ErrPaused: a Claim refused by its family's pause (*PausedError).
	ErrPaused = driver.ErrPaused
)

// ErrUnfit: Options.Fit said this process may not hold leases now; no
// call was made. The error wraps Fit's.
var ErrUnfit = errors.New("locking: this process is unfit to hold leases")
