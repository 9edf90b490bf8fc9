package smallworld

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
)

// TestSmallWorldReplay replays every schedule in testdata/*.trace — the
// counterexamples the checker found — and checks the invariants at its
// end. A trace is "world NAME" and then one action per line (actions.go);
// lines starting with # are comments. After the last action the world
// goes on with its first fault-free choice at each step until it rests. An
// action the code no longer offers (the protocol changed its requests) is
// logged and skipped, so that the scenario is still played as far as it
// goes.
func TestSmallWorldReplay(t *testing.T) {
	files, err := filepath.Glob("testdata/*.trace")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.trace")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".trace"), func(t *testing.T) {
			cfg, path := readTrace(t, f)
			for _, v := range replay(t, cfg, path) {
				t.Errorf("%s: %s", v.class, v.detail)
			}
		})
	}
}

// readTrace parses a trace file.
func readTrace(t *testing.T, name string) (worldConfig, []action) {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cfg worldConfig
	var path []action
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "world "):
			c, ok := worlds[strings.TrimPrefix(line, "world ")]
			if !ok {
				t.Fatalf("%s: unknown %q", name, line)
			}
			cfg = c
		default:
			a, err := parseAction(line)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			path = append(path, a)
		}
	}
	if cfg.name == "" {
		t.Fatalf("%s: no world line", name)
	}
	return cfg, path
}

// replay runs path in a world of cfg, then lets it come to rest, closes
// it and returns what it breaks.
func replay(t *testing.T, cfg worldConfig, path []action) (out []violation) {
	synctest.Test(t, func(t *testing.T) {
		cryptotest.SetGlobalRandom(t, 1)
		w := newWorld(cfg)
		defer w.end()
		synctest.Wait()
		for _, a := range path {
			if !w.apply(a) {
				t.Logf("skipped: %v is not possible here", a)
			}
			synctest.Wait()
		}
		for {
			next := ""
			for _, a := range w.enabled() {
				if !isFault(a.kind) {
					w.apply(a)
					next = a.String()
					break
				}
			}
			if next == "" {
				break
			}
			t.Logf("then: %s", next)
			synctest.Wait()
		}
		w.close()
		out = w.violations()
		t.Logf("ledger: runs %v; reports %v; history %v", w.runs, w.reports, w.final)
	})
	return out
}

// TestSmallWorldKnownLimits replays testdata/*.limit: schedules that
// break an invariant by a limit the docs state and the code keeps. Each
// names its class on a line "# expect CLASS", and must still break it (a
// change that lifts the limit makes it a .trace, and the docs change).
func TestSmallWorldKnownLimits(t *testing.T) {
	files, err := filepath.Glob("testdata/*.limit")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no known limit kept as a trace")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".limit"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, rest, ok := strings.Cut(string(data), "# expect ")
			want, _, _ := strings.Cut(rest, "\n")
			if !ok || want == "" {
				t.Fatalf("%s: no \"# expect CLASS\" line", f)
			}
			cfg, path := readTrace(t, f)
			got := replay(t, cfg, path)
			if !slices.ContainsFunc(got, func(v violation) bool { return v.class == want }) {
				t.Errorf("%s no longer breaks %s (got %v): the limit is lifted; make it a .trace and update docs/guarantees.md", f, want, got)
			}
		})
	}
}
