package redlock

import (
	"sync"
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
	base                             string // "<prefix>:{<family>}:"
	fence, claims, lives, pause, log string
}

// familyLimit bounds the cache: past it the cache starts over, so the
// memory held stays bounded however many families a locker sees. A
// scheduler's families are its jobs (and a few of the fleet's), far fewer.
const familyLimit = 1 << 16

// familyCache is the nodeSet's cache of familyKeys, safe for concurrent
// use. A sync.Map, because a family's entry is written once and then only
// read, by every claim of the job: its reads take no lock. (A
// direct-mapped array of 1,024 entries thrashed at 1,000 jobs: two of
// three lookups missed and built the keys again, 21 allocations a slot.)
type familyCache struct {
	m sync.Map // family → *familyKeys
	n atomic.Int64
}

func newFamilyCache() *familyCache { return &familyCache{} }

// family returns the keys of family under prefix.
func (c *familyCache) family(prefix, family string) *familyKeys {
	if f, ok := c.m.Load(family); ok {
		return f.(*familyKeys)
	}
	base := prefix + ":{" + family + "}:"
	f := &familyKeys{base: base,
		fence: base + wire.FenceName, claims: base + wire.ClaimsName, lives: base + wire.LivesName,
		pause: base + wire.PauseName, log: base + wire.LogName}
	if c.n.Add(1) > familyLimit {
		c.m.Clear()
		c.n.Store(1)
	}
	if g, loaded := c.m.LoadOrStore(family, f); loaded {
		return g.(*familyKeys)
	}
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
