package config

import (
	"errors"
	"fmt"
	"slices"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/v2"
	yaml "go.yaml.in/yaml/v4"

	"github.com/slotlock/slotlock/scheduler"
)

// Load reads the configuration: the defaults, then the YAML file at path
// (skipped when path is ""), then the SLOTLOCK_* variables of environ
// (KEY=value strings as os.Environ returns; nil means none). Nesting in
// variable names is "__": SLOTLOCK_LOCK__TTL=20s, SLOTLOCK_REDIS__PASSWORD.
// SLOTLOCK_REDIS__NODES takes a comma-separated address list. A job is
// addressed by index or name: SLOTLOCK_JOBS__0__ENABLED=false,
// SLOTLOCK_JOBS__heartbeat__TIMEOUT=5s.
//
// Decoding is strict (unknown keys and mistyped values are errors) and
// validation covers every key, every job's schedule, time zone, plugin and
// params. On failure Load returns a nil Config and an Errors value listing
// every problem, each an *Error naming its key path (and, for a job, its
// index and name) and, where known, the file position or the variable it
// came from. Load does not panic on any input.
func Load(path string, environ []string) (*Config, error) {
	if path == "" {
		return load("", nil, environ)
	}
	b, err := ReadFile(path)
	if err != nil {
		return nil, Errors{&Error{Index: -1, Err: err}}
	}
	return load(path, b, environ)
}

// load is Load on the file's contents; data == nil means no file.
func load(path string, data []byte, environ []string) (cfg *Config, err error) {
	defer func() {
		if v := recover(); v != nil {
			cfg = nil
			err = Errors{&Error{Index: -1, Err: fmt.Errorf("config: internal error while loading (a bug, please report): %v", v)}}
		}
	}()
	if path != "" {
		if err := checkConfigMode(path); err != nil {
			return nil, Errors{&Error{Index: -1, Err: err}}
		}
	}
	l := &loader{report: report{path: path, pos: map[string]yaml.Mark{}, envSrc: map[string]string{}}}
	cfg = l.load(data, environ)
	if len(l.errs) > 0 {
		return nil, l.errs
	}
	return cfg, nil
}

// loader is one load of the configuration: the sources it merges and the
// checks it runs; the problems it finds, with where each value came from,
// are its report's.
type loader struct {
	report
	jobEnv []envVar // SLOTLOCK_JOBS__... overrides, applied to the list
	// emptyNodesEnv is the SLOTLOCK_REDIS__NODES variable when it names no
	// node (empty, blanks or commas only).
	emptyNodesEnv string
	// fileNodes is how many redis.nodes the file names.
	fileNodes int
	// groups are the valid concurrency groups by name (validateGroups),
	// for the jobs that name one.
	groups map[string]*scheduler.Group
}

// loadFile parses the file into k, all but its jobs, which it returns
// (has: the file has the key). The jobs stay out of koanf: their overrides
// are applied to the list (applyJobEnv), and koanf's deep copies of a list
// of thousands of jobs, at the load and at Raw, were most of a load.
func (l *loader) loadFile(k *koanf.Koanf, data []byte) (jobs any, has, ok bool) {
	m, ok := l.parseFile(data)
	if !ok {
		return nil, false, false
	}
	l.fileNodes = countFileNodes(m)
	jobs, has = m["jobs"]
	delete(m, "jobs")
	if err := k.Load(confmap.Provider(m, ""), nil); err != nil {
		l.add("", fmt.Errorf("%s: %w", l.path, err))
		return nil, false, false
	}
	return jobs, has, true
}

func (l *loader) load(data []byte, environ []string) *Config {
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(defaultsMap(), ""), nil); err != nil {
		l.add("", fmt.Errorf("config: loading defaults: %w", err))
		return nil
	}
	var fileJobs any
	fileHasJobs := false
	if data != nil {
		var ok bool
		if fileJobs, fileHasJobs, ok = l.loadFile(k, data); !ok {
			return nil // a file that does not parse: its errors are all there is to say
		}
	}
	if len(environ) > 0 {
		p := env.Provider(".", env.Opt{
			Prefix:        EnvPrefix,
			EnvironFunc:   func() []string { return environ },
			TransformFunc: l.envKey,
		})
		if err := k.Load(p, nil); err != nil {
			l.add("", fmt.Errorf("environment: %w", err))
		}
	}

	l.checkEmptyNodesOverride()

	raw := k.Raw()
	jobsRaw, hasJobs := raw["jobs"]
	if fileHasJobs {
		jobsRaw, hasJobs = fileJobs, true
	}
	delete(raw, "jobs")

	datesAsText(raw["calendars"])
	notifyDefaults(raw["notify"])
	cfg := Defaults()
	cfg.Path = l.path
	if err := decoder.Decode(raw, &cfg); err != nil {
		l.addDecodeErrors("", -1, "", err)
	}
	emptyListsNil(&cfg)

	var list []any
	switch x := jobsRaw.(type) {
	case nil:
	case []any:
		list = x
	default:
		if hasJobs {
			l.addf("jobs", "expected a list of jobs, got %s", describe(jobsRaw))
		}
	}
	l.applyJobEnv(list)
	l.checkEnvConflicts()
	cfg.Jobs = make([]Job, 0, len(list))
	malformed := map[int]bool{}
	for i, item := range list {
		j, ok := l.decodeJob(i, item)
		cfg.Jobs = append(cfg.Jobs, j)
		if !ok {
			malformed[i] = true
		}
	}

	l.readPasswordFile(&cfg.Redis)
	l.validate(&cfg, malformed)

	// Settings first, then jobs in file order; each group in the order found.
	slices.SortStableFunc(l.errs, func(a, b error) int {
		return errIndex(a) - errIndex(b)
	})
	return &cfg
}

// emptyListsNil makes the lists written empty nil, as unwritten ones are,
// so that a configuration compares and dumps the same either way.
func emptyListsNil(cfg *Config) {
	if len(cfg.Redis.Nodes) == 0 {
		cfg.Redis.Nodes = nil
	}
	if len(cfg.Calendars) == 0 {
		cfg.Calendars = nil
	}
	if len(cfg.Notify) == 0 {
		cfg.Notify = nil
	}
	if len(cfg.Groups) == 0 {
		cfg.Groups = nil
	}
}

func errIndex(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Index
	}
	return -1
}

// countFileNodes is the length of the file's redis.nodes list (0 when it
// has none, or not a list: decoding reports that).
func countFileNodes(m map[string]any) int {
	r, _ := m["redis"].(map[string]any)
	nodes, _ := r["nodes"].([]any)
	return len(nodes)
}

// checkEmptyNodesOverride fails closed on a SLOTLOCK_REDIS__NODES that
// names no node. Read as "no nodes", it would put the replica on
// in-process locks, and a fleet started that way runs every slot on every
// replica; in-process locks are only for a configuration that names no
// Redis node at all.
func (l *loader) checkEmptyNodesOverride() {
	name := l.emptyNodesEnv
	if name == "" {
		return
	}
	var err error
	if l.fileNodes > 0 {
		err = fmt.Errorf("%s names no node (it is empty, blank or only commas) and would drop the %d node(s) the file names, "+
			"leaving this replica on in-process locks: set it to host:port,host:port,... or unset it to keep the file's nodes", name, l.fileNodes)
	} else {
		err = fmt.Errorf("%s names no node (it is empty, blank or only commas): set it to host:port,host:port,..., "+
			"or unset it for in-process locks (one replica only)", name)
	}
	l.errs = append(l.errs, &Error{Path: "redis.nodes", Index: -1, Err: err, Where: "env " + name})
}
