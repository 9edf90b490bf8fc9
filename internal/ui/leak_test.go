package ui

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine is still running after its
// tests ended.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
