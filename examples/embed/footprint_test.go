package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What a service that embeds the scheduler with its ops handler links:
// the library's dependencies only, never the command's (Azure identity,
// OTLP exporters and gRPC, koanf, fsnotify).
const (
	maxModules = 20
	// maxStrippedBytes bounds the example's binary stripped (built with
	// -ldflags='-s -w'); unstripped it is about 6 MB larger. What keeps it
	// there is that nothing linked looks methods up by name through
	// reflection (see reflective).
	maxStrippedBytes = 15 << 20
)

// reflective are packages that find methods by name through reflection
// (text/template's calls, and so html/template's): the linker must then
// keep every exported method of every linked type — go-redis's clients
// alone have hundreds — which would add about 8 MB to the binary.
var reflective = []string{"text/template", "html/template"}

// library are the packages a service imports to embed the scheduler, with
// their subpackages, whatever they become.
var library = []string{
	"github.com/slotlock/slotlock/ops/...",
	"github.com/slotlock/slotlock/scheduler/...",
	"github.com/slotlock/slotlock/jobs/...",
	"github.com/slotlock/slotlock/locking",
	"github.com/slotlock/slotlock/locking/redlock",
}

// forbidden are import path prefixes of the command's dependencies.
var forbidden = []string{
	"github.com/Azure/",
	"go.opentelemetry.io/otel/exporters",
	"google.golang.org/grpc",
	"github.com/knadh/koanf",
	"github.com/fsnotify",
	"github.com/slotlock/slotlock/cmd/",
}

func goTool(t *testing.T) string {
	t.Helper()
	g, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	return g
}

// The import graph of the library packages holds none of the command's
// dependencies and no package that looks methods up by name.
func TestLibraryImportsNoCommandDependency(t *testing.T) {
	out, err := exec.Command(goTool(t), append([]string{"list", "-deps"}, library...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if !slices.Contains(pkgs, "github.com/slotlock/slotlock/ops") {
		t.Fatalf("go list -deps %s does not list ops:\n%s", strings.Join(library, " "), out)
	}
	for _, p := range pkgs {
		for _, f := range forbidden {
			if strings.HasPrefix(p, f) {
				t.Errorf("the library imports %s", p)
			}
		}
		if slices.Contains(reflective, p) {
			t.Errorf("the library imports %s", p)
		}
	}
}

// The example service's binary links at most maxModules modules (its own
// included, as go version -m lists them) and, stripped, is at most
// maxStrippedBytes.
func TestBinaryFootprint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example")
	}
	bin := filepath.Join(t.TempDir(), "embed")
	if out, err := exec.Command(goTool(t), "build", "-ldflags=-s -w", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(goTool(t), "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	var mods []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && (f[0] == "mod" || f[0] == "dep") {
			mods = append(mods, f[1])
			for _, p := range forbidden {
				if strings.HasPrefix(f[1]+"/", p) {
					t.Errorf("the binary links %s", f[1])
				}
			}
		}
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d modules, %d bytes stripped", len(mods), fi.Size())
	if len(mods) > maxModules {
		t.Errorf("%d modules, want at most %d:\n%s", len(mods), maxModules, strings.Join(mods, "\n"))
	}
	if fi.Size() > maxStrippedBytes {
		t.Errorf("%d bytes stripped, want at most %d", fi.Size(), maxStrippedBytes)
	}
}
