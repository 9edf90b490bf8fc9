package redlock

import (
	"strconv"
	"testing"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// TestKeysFromTheCache holds the cached keys to their form, for more
// families than the cache holds (it starts over in between).
func TestKeysFromTheCache(t *testing.T) {
	r := &nodeSet{prefix: "p", families: newFamilyCache()}
	names := []string{wire.FenceName, wire.ClaimsName, wire.LivesName, wire.PauseName, wire.LogName, "slot:1", "run", ""}
	for round := range 2 {
		for i := range familyLimit + familyLimit/2 {
			fam := "job" + strconv.Itoa(i)
			for _, n := range names {
				if got, want := r.key(locking.Key{Family: fam, Name: n}), "p:{"+fam+"}:"+n; got != want {
					t.Fatalf("round %d: key %s:%s = %q, want %q", round, fam, n, got, want)
				}
			}
			if got, want := r.fenceKey(fam), "p:{"+fam+"}:fence"; got != want {
				t.Fatalf("fenceKey(%s) = %q, want %q", fam, got, want)
			}
		}
	}
}
