package redlock

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// A family's keys are "<prefix>:{<family>}:<name>". Every claim and its
// end name several of them (the lease's key, the family's fence, claims,
// lives, pause and log), and the family's own names are the same on
// every call: they are built once per family and kept in a small cache
// rather than concatenated per call.

// familyKeys are one family's key prefix and its keys of fixed name.
type familyKeys struct {
	family                           string
	base                             string // "<prefix>:{<family>}:"
	fence, claims, lives, pause, log string
}

// familySlots bounds the cache: a family whose slot another family took
// since is built again (the cache is direct-mapped), so the memory held
// stays bounded however many families a locker sees.
const familySlots = 1024

// familyCache is the nodeSet's cache of familyKeys, safe for concurrent
// use: a slot holds an immutable entry, replaced whole.
type familyCache struct {
	seed  maphash.Seed
	slots [familySlots]atomic.Pointer[familyKeys]
}

func newFamilyCache() *familyCache { return &familyCache{seed: maphash.MakeSeed()} }

// family returns the keys of family under prefix.
func (c *familyCache) family(prefix, family string) *familyKeys {
	slot := &c.slots[maphash.String(c.seed, family)%familySlots]
	if f := slot.Load(); f != nil && f.family == family {
		return f
	}
	base := prefix + ":{" + family + "}:"
	f := &familyKeys{family: family, base: base,
		fence: base + wire.FenceName, claims: base + wire.ClaimsName, lives: base + wire.LivesName,
		pause: base + wire.PauseName, log: base + wire.LogName}
	slot.Store(f)
	return f
}

// key is k's Redis key.
func (r *nodeSet) key(k locking.Key) string {
	f := r.families.family(r.prefix, k.Family)
	switch k.Name {
	case wire.FenceName:
		return f.fence
	case wire.ClaimsName:
		return f.claims
	case wire.LivesName:
		return f.lives
	case wire.PauseName:
		return f.pause
	case wire.LogName:
		return f.log
	}
	return f.base + k.Name
}

func (r *nodeSet) fenceKey(family string) string {
	return r.families.family(r.prefix, family).fence
}
