// Package lockingtest is a conformance suite for locking.Locker
// implementations, in the manner of testing/slogtest: every implementation
// (Redlock over real Redis nodes, Local in-process) must pass the same
// checks, so the scheduler cannot tell them apart.
//
//	func TestConformance(t *testing.T) {
//		lockingtest.Run(t, func(t *testing.T) locking.Locker {
//			l := locking.NewLocal(locking.Options{Replica: "r1"})
//			t.Cleanup(func() { l.Close() })
//			return l
//		})
//	}
//
// newLocker is called once per subtest; lockers of different subtests may
// share a store (the suite uses a fresh key family in every subtest). The
// suite runs on real time with TTLs of a few hundred milliseconds, so the
// whole run takes a few seconds. It counts the process's goroutines, so do
// not run it in parallel with other tests (no t.Parallel).
package lockingtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Run runs every conformance check as a subtest of t.
func Run(t *testing.T, newLocker func(t *testing.T) locking.Locker) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, newLocker(t))
		})
	}
}

// RunSynctest is Run with each check in its own testing/synctest bubble,
// on virtual time: for stores that live in the bubble (locking/locksim).
// newLocker is called inside the bubble.
func RunSynctest(t *testing.T, newLocker func(t *testing.T) locking.Locker) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { c.fn(t, newLocker(t)) })
		})
	}
}

var cases = []struct {
	name string
	fn   func(t *testing.T, l locking.Locker)
}{
	{"ExclusiveHold", testExclusiveHold},
	{"ConcurrentExclusion", testConcurrentExclusion},
	{"TokensIncrease", testTokensIncrease},
	{"StaleLeaseCannotReleaseOrExtend", testStale},
	{"DoneMarker", testDoneMarker},
	{"TTLExpiryFreesKey", testExpiry},
	{"KeepRenewsAcrossTTLs", testKeep},
	{"ReleaseStopsWatchdog", testNoGoroutineLeft},
	{"Records", testRecords},
	{"CanceledContext", testCanceled},
	{"PingModeClose", testPingModeClose},
	{"ReadClocks", testReadClocks},
	{"ClaimAbandoned", testClaimAbandoned},
	{"ClaimRelease", testClaimRelease},
	{"ClaimKept", testClaimKept},
	{"ClaimOrphan", testClaimOrphan},
	{"ClaimStarted", testClaimStarted},
	{"Pause", testPause},
	{"PauseAfterTheClaim", testPauseAfterTheClaim},
	{"PausePast", testPausePast},
	{"Log", testLog},
	{"LogOwnEndAfterASettle", testLogOwnEndAfterASettle},
	{"AppendLog", testAppendLog},
	{"AppendLogFenced", testAppendLogFenced},
	{"ReadClaims", testReadClaims},
	{"Handled", testHandled},
	{"ReadLease", testReadLease},
	{"TokensUnique", testTokensUnique},
	{"BadKeys", testBadKeys},
	{"EndTogether", testEndTogether},
	{"ClaimWith", testClaimWith},
	{"Semaphore", testSemaphore},
	{"SemaphoreContended", testSemaphoreContended},
}

// family returns a key family unique to this run and subtest.
func family(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return name + "-" + hex.EncodeToString(b[:])
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustAcquire(t *testing.T, l locking.Locker, key locking.Key, ttl time.Duration) *locking.Lease {
	t.Helper()
	lease, err := l.Acquire(ctx(t), key, ttl)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", key, err)
	}
	return lease
}

func wantHeld(t *testing.T, err error, done bool) *locking.HeldError {
	t.Helper()
	var held *locking.HeldError
	if !errors.As(err, &held) || !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("want a *HeldError matching ErrNotAcquired, got %v", err)
	}
	if held.Done != done {
		t.Fatalf("HeldError.Done = %v, want %v (%v)", held.Done, done, err)
	}
	return held
}
