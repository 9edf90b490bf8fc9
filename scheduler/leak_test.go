package scheduler

import (
	"flag"
	"os"
	"testing"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// TestMain fails the package when a fake credential reached any captured
// log line or span (secrettest), or when a goroutine is still running after
// its tests ended: every goroutine the code under test starts must be
// owned and stopped by someone. The real-time tests run all at once
// (raiseParallel).
func TestMain(m *testing.M) {
	flag.Parse()
	raiseParallel()
	os.Exit(secrettest.AfterTests(m.Run()))
}
