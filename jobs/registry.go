package jobs

import (
	"fmt"
	"regexp"
	"slices"
	"sync"
)

// Factory builds a Job from the params of one configured job. It is called
// once per job when the configuration is loaded (including by
// `slotlock validate`), so it must validate everything it can and must not
// start work or reach the network. Use DecodeParams to decode params
// strictly into a typed struct; return an error naming the bad field.
type Factory func(params map[string]any) (Job, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

var pluginName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Register makes a plugin available under name. It is meant to be called
// from an init function. It panics when name is already registered, when
// name is not of the form [a-z0-9][a-z0-9._-]{0,62}, or when f is nil: all
// three are programming errors that must surface at start, not at the
// first run.
func Register(name string, f Factory) {
	if !pluginName.MatchString(name) {
		panic(fmt.Sprintf("jobs: Register: invalid plugin name %q (want [a-z0-9][a-z0-9._-]{0,62})", name))
	}
	if f == nil {
		panic(fmt.Sprintf("jobs: Register: nil factory for plugin %q", name))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("jobs: Register called twice for plugin %q (two packages register the same name)", name))
	}
	registry[name] = f
}

// Lookup returns the factory registered under name.
func Lookup(name string) (Factory, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	f, ok := registry[name]
	return f, ok
}

// Names returns the registered plugin names, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
