package config

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
)

// DefinitionsHash identifies the job definitions: the first 12 hex digits
// of a keyed hash of the jobs section. Replicas that run the same jobs
// show the same hash in their heartbeats, `slotlock status`, the status
// page and slotlock_config_info, where they are compared fleet-wide; a
// deploy that changes a job changes it.
//
// The hash is published, so it must not be a guessing oracle for a secret
// in the params. With a Redis password (the one secret every replica of
// a fleet shares and that no log, page or metric shows) it is
// HMAC-SHA-256 keyed with that password over the whole, unredacted jobs
// section: a changed secret in a job changes the hash too, and without the
// password nobody can test a guess against it. Without a password (no
// nodes, no auth, or Entra ID tokens, which differ between replicas) there
// is no shared key, and it is a plain SHA-256 of the redacted section
// (Redacted: every secret-bearing value "***"), so no secret feeds it.
// A password rotation changes the hash once every replica has the new
// password; replicas with different passwords show different hashes.
func (c *Config) DefinitionsHash() string {
	if c.Redis.Password == "" || c.Redis.Auth == AuthEntra {
		b, _ := json.Marshal(jobsTree(c.Jobs, true)) // maps, strings and numbers: cannot fail
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:6])
	}
	b, _ := json.Marshal(jobsTree(c.Jobs, false))
	mac := hmac.New(sha256.New, definitionsKey(c.Redis.Password))
	mac.Write(b)
	return hex.EncodeToString(mac.Sum(nil)[:6])
}

// definitionsKey derives the hash's key from the Redis password, so the
// key is used for nothing else.
func definitionsKey(password string) []byte {
	k := hmac.New(sha256.New, []byte(password))
	k.Write([]byte("slotlock definitions hash v1"))
	return k.Sum(nil)
}

// jobsTree is the jobs section as the hash and the reload's comparison
// see it: a job's calendar is the dates it excludes (a changed holiday
// file is a changed definition), and a job without one shows no calendar
// key, so that its hash is what it was before calendars existed.
func jobsTree(js []Job, redact bool) []any {
	out := make([]any, len(js))
	for i, j := range js {
		out[i] = jobTree(j, redact)
	}
	return out
}

func jobTree(j Job, redact bool) any {
	m, ok := tree(reflect.ValueOf(j), redact).(map[string]any)
	if !ok {
		return m
	}
	if cal := j.ResolvedCalendar; cal != nil {
		m["calendar"] = map[string]any{"name": cal.Name(), "weekdays_only": cal.WeekdaysOnly(), "dates": cal.Dates()}
	} else if j.Calendar == "" {
		delete(m, "calendar")
	}
	if len(j.Notify) == 0 {
		delete(m, "notify") // a job without rules hashes as before notifications existed
	}
	// A group is its limit too; a job without one shows no group key.
	if g := j.ResolvedGroup; g != nil {
		m["group"] = map[string]any{"name": g.Name, "limit": g.Limit}
	} else if j.Group == "" {
		delete(m, "group")
	}
	return m
}
