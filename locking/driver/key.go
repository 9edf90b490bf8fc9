package driver

import (
	"fmt"
	"slices"
	"strings"

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
	case badFamily(k.Family):
		return fmt.Errorf("locking: key %q: family must not contain braces or white space", k)
	case k.Name == "" || reservedName(k.Name):
		return fmt.Errorf("locking: key %q: name must be non-empty and not %q, %q, %q, %q or %q", k, wire.FenceName, wire.ClaimsName, wire.LivesName, wire.PauseName, wire.LogName)
	}
	return nil
}

// badFamily reports whether f holds a brace or white space (as CheckKey
// defines them: "{} \t\r\n"). A byte loop, as CheckKey runs on every
// acquisition: strings.ContainsAny builds its byte set on each call.
func badFamily(f string) bool {
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case '{', '}', ' ', '\t', '\r', '\n':
			return true
		}
	}
	return false
}

// CheckRecord reports whether v can be written to the record key.
func CheckRecord(key Key, v int64) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if v > wire.MaxRecord || v < -wire.MaxRecord {
		return fmt.Errorf("locking: record %s: value %d out of range (|v| <= 2^53)", key, v)
	}
	return nil
}

// ClaimKeys turns claim fields (key names) into sorted, distinct keys.
func ClaimKeys(family string, names []string) []Key {
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]Key, 0, len(names))
	for _, n := range names {
		out = append(out, Key{Family: family, Name: n})
	}
	return out
}
