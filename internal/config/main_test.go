package config

import (
	"os"
	"testing"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// TestMain scans every config error and dump the tests captured for the
// fake credentials (secrettest), then checks for leaked goroutines.
func TestMain(m *testing.M) { os.Exit(secrettest.AfterTests(m.Run())) }
