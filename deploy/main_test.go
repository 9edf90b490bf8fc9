// Package deploy tests the monitoring shipped under deploy/: the Prometheus
// alert rules (prometheus/), the Grafana dashboard (grafana/), and that
// every metric they name is served by the real binary's /metrics. The
// Azure Monitor log alerts are tested beside their templates (deploy/azure).
package deploy

import (
	"os"
	"os/exec"
	"testing"

	"github.com/slotlock/slotlock/internal/secrettest"
)

func TestMain(m *testing.M) { os.Exit(secrettest.AfterTests(m.Run())) }

// promtool returns the path of Prometheus's promtool. Without it the test
// is skipped on a developer's machine, but fails in CI (CI set), where
// .ci/test installs it: a check that never runs is no check.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("promtool is not on PATH in CI; .ci/test installs it (apt-get install -y prometheus)")
	}
	t.Skip("promtool is not on PATH (apt-get install -y prometheus); in CI this fails instead")
	return ""
}

// runPromtool runs promtool in dir and fails the test with its output when
// it exits non-zero.
func runPromtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
