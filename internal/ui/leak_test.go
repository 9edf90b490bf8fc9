package ui

import (
	"os"
	"testing"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// TestMain fails the package when a fake credential reached a page or an
// API answer that a test captured (secrettest), or when a goroutine is
// still running after its tests ended.
func TestMain(m *testing.M) { os.Exit(secrettest.AfterTests(m.Run())) }
