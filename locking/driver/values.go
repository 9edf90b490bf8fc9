package driver

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking/internal/wire"
)

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
	// Majority: the takeover met the claim on a majority of the stores.
	// A done marker replaces the claim where it is set, so no settler's
	// end (its marker, entry and report) reached a majority before: a
	// settler's entry of the claim found in the history was left on a
	// minority, by an end that never reported and can no longer succeed.
	Majority bool
}

// ParseAbandoned describes the claim stored in k, whose lease expired.
func ParseAbandoned(k Key, stored string) *Abandoned {
	value, started := wire.ClaimOf(stored)
	tok, holder, _ := strings.Cut(value, "|")
	return &Abandoned{Key: k, Holder: holder, ID: LeaseID(tok), Started: started}
}

// LeaseID is the short form of a lease's random token.
func LeaseID(token string) string { return token[:min(len(token), 16)] }

// NodeStatus is one node's answer to a Ping.
type NodeStatus struct {
	Addr string
	Up   bool
	Err  error
}

// Pause is a family's pause state, kept in the lock stores beside its keys
// (<prefix>:{<family>}:pause) and read by every Claim in the family in the
// same round trip: while a pause is active, Claim fails with a
// *PausedError, except one that takes an abandoned claim over (its caller
// settles the dead run's slot, and runs nothing). Acquire is not
// affected (a manual run still runs).
type Pause struct {
	Paused bool
	Until  time.Time // when Paused: the end, on the writer's clock; zero means until resumed
	By     string    // who paused or resumed (a replica or a host name)
	Reason string
	// Version orders the writes: SetPause writes above every version it
	// found, so the newest pause or resume wins on every store. It is the
	// write's time in Unix milliseconds (or one more than the previous
	// version): Since.
	Version int64
	// Past are the pauses that ended before this write, oldest first
	// (pause_past.go).
	Past []PauseSpan
}

// ActiveAt reports whether the pause holds at t.
func (p Pause) ActiveAt(t time.Time) bool {
	return p.Paused && (p.Until.IsZero() || t.Before(p.Until))
}

// Since is when the pause (or resume) was written.
func (p Pause) Since() time.Time { return time.UnixMilli(p.Version) }

// Covers reports whether work due at t falls within the pause: written
// before t and not ended by t. A slot missed during a pause and claimed
// after it ended is still covered.
func (p Pause) Covers(t time.Time) bool { return p.ActiveAt(t) && !t.Before(p.Since()) }

// FormatPause is the register's value: "<version>|<p or r>|<until ms>|<by>|<reason>",
// then the past pauses (formatPast).
func FormatPause(p Pause) string {
	state, until := "r", int64(0)
	if p.Paused {
		state = "p"
		if !p.Until.IsZero() {
			until = p.Until.UnixMilli()
		}
	}
	reason := strings.ReplaceAll(p.Reason, pastMark[:1], " ")
	return fmt.Sprintf("%d|%s|%d|%s|%s", p.Version, state, until, p.By, reason) + formatPast(p.Past)
}

// ParsePause reads a register's value; "" (never set) is not paused.
func ParsePause(v string) Pause {
	if v == "" {
		return Pause{} // the common case, without splitting
	}
	f := strings.SplitN(v, "|", 5)
	if len(f) < 5 {
		return Pause{}
	}
	var p Pause
	p.Version, _ = strconv.ParseInt(f[0], 10, 64)
	p.Paused = f[1] == "p"
	if ms, _ := strconv.ParseInt(f[2], 10, 64); p.Paused && ms > 0 {
		p.Until = time.UnixMilli(ms)
	}
	p.By = f[3]
	p.Reason, p.Past = cutPast(f[4])
	return p
}

// NewestPause is the pause of highest version among values.
func NewestPause(values []string) Pause {
	var best Pause
	for _, v := range values {
		if p := ParsePause(v); p.Version > best.Version {
			best = p
		}
	}
	return best
}
