//go:build linux

package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var (
	soakFlag = flag.Duration("soak", 0, "run the soak test (TestSoak) for this long, e.g. 10m; also SLOTLOCK_SOAK")
	seedFlag = flag.Int64("seed", 0, "soak: random seed for the fault schedule (0: time-based, printed)")
	// faultsFlag narrows the draw, to soak a new fault (or one under
	// suspicion) more often than one in fifteen.
	faultsFlag = flag.String("soak.faults", "", "soak: draw only these faults (comma-separated names; default all)")
)

// bins holds the programs built once by TestMain; buildErr says why the
// scenarios cannot run.
var (
	bins     Binaries
	buildErr error
)

func TestMain(m *testing.M) {
	flag.Parse()
	var dir string
	if !testing.Short() {
		dir, buildErr = os.MkdirTemp("", "slotlock-e2e-bin-")
		if buildErr == nil {
			bins, buildErr = build(dir)
		}
	}
	stopWatch := watchHost()
	code := m.Run()
	stopWatch()
	KillAll()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	// Every goroutine the harness started (process waiters, proxies, log
	// readers) must have ended with its scenario.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: goroutines left running after the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// build compiles slotlock, ledgerjob and fencedslotlock from the module
// root (plain go build: the race detector covers the packages in their
// unit tests).
func build(dir string) (Binaries, error) {
	b := Binaries{Slotlock: filepath.Join(dir, "slotlock"), LedgerJob: filepath.Join(dir, "ledgerjob"),
		Fenced: filepath.Join(dir, "fencedslotlock")}
	start := time.Now()
	for _, x := range []struct{ out, pkg string }{{b.LedgerJob, "./e2e/internal/ledgerjob"}, {b.Slotlock, "./cmd/slotlock"},
		{b.Fenced, "./e2e/internal/fencedslotlock"}} {
		cmd := exec.Command("go", "build", "-o", x.out, x.pkg)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go build %s: %v\n%s", x.pkg, err, strings.TrimSpace(string(out)))
		}
	}
	fmt.Fprintf(os.Stderr, "e2e: built slotlock, ledgerjob and fencedslotlock in %v\n", time.Since(start).Round(time.Millisecond))
	return b, nil
}

// requireSuite skips in -short mode and fails when the binaries did not
// build.
func requireSuite(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: multi-process fault scenarios skipped in -short mode")
	}
	if buildErr != nil {
		t.Fatalf("e2e: %v", buildErr)
	}
}
