// Package wire is the format of what the lock stores hold, in one place
// for locking's front end, its drivers (the in-process store,
// locking/redlock and its Lua scripts) and the simulated stores
// (locking/locksim): the reserved names of a family's keys and the values
// of claims and done markers.
//
// A lease stores "<token>|<replica>" (token: 32 hex characters of a
// random 128-bit number); a claim stores the same, prefixed with
// StartedPrefix once its work was confirmed started; a done marker stores
// "done|<replica>|<note>|<lease id>".
package wire

import "strings"

// Reserved key names of a family: its fencing counter, the hashes of its
// open claims and of their leases, its log and its pause register.
// CheckKey refuses them as a key's name.
const (
	FenceName  = "fence"
	ClaimsName = "claims"
	LivesName  = "lives"
	LogName    = "log"
	PauseName  = "pause"
)

// TombPrefix starts the reserved names of tombstones left by undone
// acquisitions (redlock's undo).
const TombPrefix = "undone:"

// StartedPrefix starts a claim's stored value once its owner confirmed
// that the work began (Lease.Start; ExtendOp with Start).
const StartedPrefix = "started:"

// ClaimOf splits a claim as stored into the lease value and whether its
// work was confirmed started.
func ClaimOf(stored string) (value string, started bool) {
	return strings.CutPrefix(stored, StartedPrefix)
}

// DonePrefix starts a done marker's value (DoneValue).
const DonePrefix = "done|"

// DoneValue is the value of a done marker left by Lease.End: the replica,
// the note and the lease's id, so that an End retried after an answer
// was lost recognises its own marker.
func DoneValue(replica, note, id string) string {
	return DonePrefix + replica + "|" + note + "|" + id
}

// MaxRecord bounds record and token values: the Lua scripts compare
// numbers as doubles, which are exact up to 2^53.
const MaxRecord = 1 << 53
