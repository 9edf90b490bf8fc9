package jobs

import (
	"context"
	"slices"
	"strings"
	"testing"
)

type nopJob struct{}

func (nopJob) Run(context.Context, Run) error { return nil }

func nopFactory(map[string]any) (Job, error) { return nopJob{}, nil }

func unregister(name string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	delete(registry, name)
}

func panicMessage(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg = v.(string)
		}
	}()
	f()
	return ""
}

func TestRegisterLookupNames(t *testing.T) {
	Register("test.registry-ok", nopFactory)
	t.Cleanup(func() { unregister("test.registry-ok") })

	f, ok := Lookup("test.registry-ok")
	if !ok || f == nil {
		t.Fatal("Lookup did not find a registered plugin")
	}
	if _, ok := Lookup("no-such-plugin"); ok {
		t.Fatal("Lookup found an unknown plugin")
	}
	names := Names()
	if !slices.IsSorted(names) {
		t.Fatalf("Names not sorted: %v", names)
	}
	for _, want := range []string{"exec", "http", "log", "test.registry-ok"} {
		if !slices.Contains(names, want) {
			t.Errorf("Names() = %v, missing %q", names, want)
		}
	}
}

func TestRegisterDuplicatePanics(t *testing.T) {
	Register("test.dup", nopFactory)
	t.Cleanup(func() { unregister("test.dup") })
	msg := panicMessage(func() { Register("test.dup", nopFactory) })
	if !strings.Contains(msg, `twice`) || !strings.Contains(msg, `"test.dup"`) {
		t.Fatalf("duplicate Register: panic %q, want a message naming the plugin", msg)
	}
	// A built-in name is taken too.
	if msg := panicMessage(func() { Register("exec", nopFactory) }); msg == "" {
		t.Fatal("registering over the built-in exec did not panic")
	}
}

func TestRegisterRejectsBadInput(t *testing.T) {
	for _, name := range []string{"", "Upper", "-lead", "has space", strings.Repeat("a", 64)} {
		if msg := panicMessage(func() { Register(name, nopFactory) }); !strings.Contains(msg, "invalid plugin name") {
			t.Errorf("Register(%q): panic %q, want invalid plugin name", name, msg)
		}
	}
	if msg := panicMessage(func() { Register("test.nil", nil) }); !strings.Contains(msg, "nil factory") {
		t.Errorf("Register(nil factory): panic %q", msg)
	}
	if _, ok := Lookup("test.nil"); ok {
		t.Error("a rejected registration was stored")
	}
}
