package redistest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine is still running after its
// tests ended: every goroutine the code under test starts must be owned
// and stopped by someone.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
