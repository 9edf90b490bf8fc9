package locking

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking/internal/wire"
)

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

func reservedName(n string) bool {
	return n == wire.FenceName || n == wire.ClaimsName || n == wire.LivesName || n == wire.PauseName || n == wire.LogName ||
		strings.HasPrefix(n, wire.TombPrefix)
}

// CheckKey reports whether k can be used: a non-empty family without
// braces or white space (it becomes the key's hash tag: a brace would
// split a family over cluster slots), and a non-empty name that is not
// reserved ("fence", "claims", "lives", "pause", "log", "undone:…").
func CheckKey(k Key) error {
	switch {
	case k.Family == "":
		return fmt.Errorf("locking: key %q: empty family", k)
	case strings.ContainsAny(k.Family, "{} \t\r\n"):
		return fmt.Errorf("locking: key %q: family must not contain braces or white space", k)
	case k.Name == "" || reservedName(k.Name):
		return fmt.Errorf("locking: key %q: name must be non-empty and not %q, %q, %q, %q or %q", k, wire.FenceName, wire.ClaimsName, wire.LivesName, wire.PauseName, wire.LogName)
	}
	return nil
}

// Abandoned describes a claim (Locker.Claim) whose lease expired before
// its holder ended it: the holder died or froze after winning it. Claim
// hands such a key to a new lease with Grant.Abandoned set, so that
// exactly one caller learns of it; the work must not be done again.
//
// Started tells what the holder did with it. True: the holder confirmed
// on a store that its work began (Lease.Start, then a renewal): the work
// started and was abandoned. False: no store holds that confirmation, so
// the holder died or froze between winning the claim and its first
// confirming renewal — its work may have started or not, and no store can
// tell (see the package documentation, "Started, not started, unknown").
type Abandoned struct {
	Key     Key
	Holder  string // the replica that claimed it
	ID      string // the claim's Grant.ID
	Started bool   // the holder confirmed that the work began
}

// Grant describes a lease as it was granted: the key, the lease's
// identity, and, for a claim (Locker.Claim), what the claim found beside
// the key — its side outcomes, which the caller must act on before it
// does the work (see the package documentation, "Claims").
type Grant struct {
	// Key is the key the lease holds.
	Key Key
	// ID is a short random identifier of the lease (16 hex characters),
	// stored in the lock's value: a claim taken over after its holder died
	// names it (Abandoned.ID).
	ID string
	// Holder is the replica name stored in the lock's value
	// (Options.Replica).
	Holder string
	// TTL is the length the lease is renewed to.
	TTL time.Duration

	// Abandoned is non-nil when Claim took over a claim whose holder never
	// ended it (see Locker.Claim): the work it stands for must not be done
	// again.
	Abandoned *Abandoned
	// Leftover reports that the Claim took over, on a minority of the
	// stores, another claim of its key (one a store kept after missing its
	// end, or one a late request left): the lease holds the key, but the
	// claim is not the lease's on a majority, so the work must not be done
	// under it. End it with a done marker (Ending.DoneTTL) to clear the
	// leftover, or release it.
	Leftover bool
	// Orphan is non-nil when, during the Claim, a store held another claim
	// of the same family whose lease had expired: work abandoned by its
	// holder. Claim its key to take it over and report it (Abandoned).
	Orphan *Abandoned
	// Pause is the newest pause state of the claim's family that the
	// stores held when it was claimed — not active then (Claim refuses
	// while a pause is active), but it may have covered the work's due
	// time (Pause.Covers).
	Pause Pause
	// Joined is the lease taken together with the claim (With), with the
	// same token; nil when it was not taken.
	Joined *Lease
}

// ParseAbandoned describes the claim stored in k, whose lease expired.
func ParseAbandoned(k Key, stored string) *Abandoned {
	value, started := wire.ClaimOf(stored)
	tok, holder, _ := strings.Cut(value, "|")
	return &Abandoned{Key: k, Holder: holder, ID: leaseID(tok), Started: started}
}

// leaseID is the short form of a lease's random token.
func leaseID(token string) string { return token[:min(len(token), 16)] }

// NodeStatus is one node's answer to a Ping.
type NodeStatus struct {
	Addr string
	Up   bool
	Err  error
}

// Locker hands out leases. Implementations: Redlock (N independent Redis
// nodes) and Local (in-process, one replica), each with the Store on the
// same lock stores (Backend). Both pass the conformance suite in
// locking/lockingtest. A Locker is safe for concurrent use.
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
	// the key when its lease expires. Lease.End removes the claim (before
	// the work began) or turns it into a done marker (Ending.DoneTTL). Once
	// the lease has expired, the next Claim takes the key over: it
	// succeeds with Grant.Abandoned describing the claim, and must not do
	// the work (report it, then end it with a done marker). A claim seen on
	// any node counts, even when a majority lets the caller in. A
	// successful Claim may also report, in Grant.Orphan, another key of the
	// family whose claim was abandoned, for the caller to Claim and report.
	// While the family is paused (Store.SetPause) Claim fails with a
	// *PausedError. A key is used either with Acquire or with Claim, never
	// both. The options (With) add to what the same step takes; a Locker
	// that wraps another passes them on.
	Claim(ctx context.Context, key Key, ttl time.Duration, opts ...ClaimOption) (*Lease, error)

	// Ping checks every node; it returns nil when a majority answered within
	// the op timeout. The slice has one entry per node, in configuration order.
	Ping(ctx context.Context) ([]NodeStatus, error)

	// Mode describes the locker for logs: "local" or "redlock(3 nodes)".
	Mode() string

	// Close releases the connections. Leases still held are not released.
	Close() error
}
