package greeter_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleBinary builds the example the way a user would and runs its
// custom plugin, so the example cannot rot.
func TestExampleBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "greeter")
	build := exec.Command("go", "build", "-o", bin, "./cmd/greeter")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "greetings.txt")
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(`
http: {addr: ""}
jobs:
  - name: hello
    schedule: "@daily"
    plugin: greet
    params: {to: slotlock, file: `+out+`}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(bin, "validate", "--config", cfg).CombinedOutput(); err != nil {
		t.Fatalf("validate: %v\n%s", err, b)
	}
	if b, err := exec.Command(bin, "trigger", "--config", cfg, "hello").CombinedOutput(); err != nil {
		t.Fatalf("trigger: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "hello, slotlock: job=hello slot=manual token=") {
		t.Fatalf("the custom plugin did not run as expected: %q", got)
	}

	// A typo in the plugin's params is a configuration error naming the key.
	if err := os.WriteFile(cfg, []byte(`
jobs:
  - name: hello
    schedule: "@daily"
    plugin: greet
    params: {too: slotlock, file: `+out+`}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command(bin, "validate", "--config", cfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(b), "too") {
		t.Fatalf("validate with a typo in params: %v\n%s", err, b)
	}
}
