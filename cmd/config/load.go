package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/v2"
	yaml "go.yaml.in/yaml/v4"

	"github.com/slotlock/slotlock/jobs"
)

// EnvPrefix starts every environment variable that overrides a key.
const EnvPrefix = "SLOTLOCK_"

// Environment variables with the prefix that are not configuration keys:
// the contract's runtime settings (read by the command package) and the
// variables the exec plugin gives to a job's process, so that a job that
// runs slotlock itself does not trip over them.
var notConfigKeys = map[string]bool{
	"CONFIG": true, "REPLICA": true, "CLOCK_OFFSET": true,
	"JOB": true, "SLOT": true, "RUN_ID": true, "FENCING_TOKEN": true, "ATTEMPT": true,
}

// sections are the top-level keys; an environment variable is an override
// when its first segment names one, or when it has a "__" nesting.
var sections = []string{"log", "http", "redis", "lock", "shutdown", "jobs"}

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
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, Errors{&Error{Index: -1, Err: fmt.Errorf("cannot read configuration: %w", err)}}
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
	l := &loader{path: path, pos: map[string]yaml.Mark{}, envSrc: map[string]string{}}
	cfg = l.load(data, environ)
	if len(l.errs) > 0 {
		return nil, l.errs
	}
	return cfg, nil
}

type loader struct {
	path   string
	pos    map[string]yaml.Mark // key path -> position of the key in the file
	envSrc map[string]string    // key path -> the variable that set it
	jobEnv []envVar             // SLOTLOCK_JOBS__... overrides, applied to the list
	errs   Errors
	// undecodable holds the paths whose values did not decode; validation
	// does not pile a second error on them.
	undecodable map[string]bool
}

type envVar struct {
	name  string   // the variable as written
	segs  []string // after the prefix, split at "__"
	value string
}

// add records a problem at path. For paths inside jobs[i], index and name
// are filled in by the caller through addJob.
func (l *loader) add(path string, err error) {
	if l.undecodable[path] {
		return
	}
	l.errs = append(l.errs, &Error{Path: path, Index: -1, Err: err, Where: l.where(path)})
}

func (l *loader) addValue(path, value string, err error) {
	if l.undecodable[path] {
		return
	}
	l.errs = append(l.errs, &Error{Path: path, Index: -1, Value: value, Err: err, Where: l.where(path)})
}

func (l *loader) addf(path, format string, args ...any) { l.add(path, fmt.Errorf(format, args...)) }

// where tells where the value at path came from: an environment variable
// or a file position (of the key, or of its nearest ancestor).
func (l *loader) where(path string) string {
	for p := path; ; p = parentPath(p) {
		if name, ok := l.envSrc[p]; ok {
			return "env " + name
		}
		if p == "" {
			break
		}
	}
	// An unknown key may be the first segment of an overriding variable
	// (SLOTLOCK_FOO__BAR sets foo.bar; the decoder complains about foo).
	if path != "" {
		var names []string
		for p, name := range l.envSrc {
			if strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[") {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			return "env " + strings.Join(names, ", ")
		}
	}
	for p := path; p != ""; p = parentPath(p) {
		if m, ok := l.pos[p]; ok {
			return fmt.Sprintf("%s:%d:%d", l.path, m.Line, m.Column)
		}
	}
	return ""
}

// parentPath strips the last segment: "a.b[2].c" -> "a.b[2]" -> "a.b" -> "a" -> "".
func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

func (l *loader) load(data []byte, environ []string) *Config {
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(defaultsMap(), ""), nil); err != nil {
		l.add("", fmt.Errorf("config: loading defaults: %w", err))
		return nil
	}
	if data != nil {
		m, ok := l.parseFile(data)
		if !ok {
			return nil // a file that does not parse: its errors are all there is to say
		}
		if err := k.Load(confmap.Provider(m, ""), nil); err != nil {
			l.add("", fmt.Errorf("%s: %w", l.path, err))
			return nil
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

	raw := k.Raw()
	jobsRaw, hasJobs := raw["jobs"]
	delete(raw, "jobs")

	cfg := Defaults()
	cfg.Path = l.path
	if err := jobs.DecodeParams(raw, &cfg); err != nil {
		l.addDecodeErrors("", -1, "", err)
	}
	if len(cfg.Redis.Nodes) == 0 {
		cfg.Redis.Nodes = nil
	}

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

// parseFile parses the YAML file into a map and records the position of
// every key.
func (l *loader) parseFile(b []byte) (map[string]any, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return map[string]any{}, true // empty file: defaults only
		}
		l.addYAMLError(err)
		return nil, false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		l.errs = append(l.errs, &Error{Index: -1, Where: l.mark(extra),
			Err: errors.New("the file holds more than one YAML document; put everything in one")})
		return nil, false
	} else if !errors.Is(err, io.EOF) {
		l.addYAMLError(err)
		return nil, false
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return map[string]any{}, true
		}
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return map[string]any{}, true
	}
	if root.Kind != yaml.MappingNode {
		l.errs = append(l.errs, &Error{Index: -1, Where: l.mark(*root),
			Err: fmt.Errorf("the top level must be a map of sections (%s), got %s", strings.Join(sections, ", "), nodeKind(root))})
		return nil, false
	}
	l.recordPositions("", root, 0)
	var m map[string]any
	if err := root.Decode(&m); err != nil {
		l.addYAMLError(err)
		return nil, false
	}
	return m, true
}

func (l *loader) mark(n yaml.Node) string {
	return fmt.Sprintf("%s:%d:%d", l.path, n.Line, n.Column)
}

// addYAMLError turns the YAML library's errors into Errors with the file,
// line and column.
func (l *loader) addYAMLError(err error) {
	var les *yaml.LoadErrors
	if errors.As(err, &les) && len(les.Errors) > 0 {
		for _, e := range les.Errors {
			l.addYAMLLoadError(e)
		}
		return
	}
	var le *yaml.LoadError
	if errors.As(err, &le) {
		l.addYAMLLoadError(le)
		return
	}
	l.errs = append(l.errs, &Error{Index: -1, Err: fmt.Errorf("%s: %s", l.path, strings.TrimPrefix(err.Error(), "yaml: "))})
}

func (l *loader) addYAMLLoadError(e *yaml.LoadError) {
	where := l.path
	if e.Mark.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", l.path, e.Mark.Line, max(e.Mark.Column, 1))
	}
	msg := e.Message
	if e.ContextMsg != "" && e.ContextMark.Line > 0 {
		msg += fmt.Sprintf(" (%s at line %d, column %d)", e.ContextMsg, e.ContextMark.Line, e.ContextMark.Column)
	}
	l.errs = append(l.errs, &Error{Index: -1, Err: errors.New("invalid YAML: " + msg), Where: where})
}

// recordPositions maps every key path to the position of its key (and
// every list element to its own position). Aliases are not followed.
func (l *loader) recordPositions(path string, n *yaml.Node, depth int) {
	if depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			p := joinPath(path, key.Value)
			if _, dup := l.pos[p]; !dup {
				l.pos[p] = yaml.Mark{Line: key.Line, Column: key.Column}
			}
			l.recordPositions(p, val, depth+1)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			l.pos[p] = yaml.Mark{Line: item.Line, Column: item.Column}
			l.recordPositions(p, item, depth+1)
		}
	}
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	case yaml.AliasNode:
		return "an alias"
	}
	return "something else"
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// envKey maps SLOTLOCK_LOCK__TTL=20s to ("lock.ttl", "20s"). It returns ""
// for variables that are not configuration keys and keeps SLOTLOCK_JOBS__*
// aside (a job is addressed inside a list, which a map merge cannot do).
func (l *loader) envKey(name, value string) (string, any) {
	rest := strings.TrimPrefix(name, EnvPrefix)
	if notConfigKeys[rest] {
		return "", nil
	}
	segs := strings.Split(rest, "__")
	first := strings.ToLower(segs[0])
	if len(segs) == 1 && !slices.Contains(sections, first) {
		return "", nil // SLOTLOCK_SOMETHING without nesting: not ours
	}
	if slices.Contains(segs, "") {
		l.errs = append(l.errs, &Error{Index: -1, Where: "env " + name,
			Err: errors.New(`malformed override: segments are separated by exactly "__" (e.g. SLOTLOCK_LOCK__TTL)`)})
		return "", nil
	}
	if first == "jobs" {
		l.jobEnv = append(l.jobEnv, envVar{name: name, segs: segs, value: value})
		return "", nil
	}
	for i := range segs {
		segs[i] = strings.ToLower(segs[i])
	}
	path := strings.Join(segs, ".")
	l.envSrc[path] = name
	if path == "redis.nodes" {
		var nodes []any
		for _, a := range strings.Split(value, ",") {
			if a = strings.TrimSpace(a); a != "" {
				nodes = append(nodes, map[string]any{"addr": a})
			}
		}
		if nodes == nil {
			nodes = []any{}
		}
		return path, nodes
	}
	return path, value
}

// applyJobEnv applies SLOTLOCK_JOBS__<index or name>__<key>[__<key>...]
// overrides to the jobs list. Keys are lower-cased up to "params"; below
// it (plugin params such as exec's env names) they keep their case.
func (l *loader) applyJobEnv(list []any) {
	slices.SortFunc(l.jobEnv, func(a, b envVar) int { return strings.Compare(a.name, b.name) })
	for _, ev := range l.jobEnv {
		if len(ev.segs) < 3 {
			l.errs = append(l.errs, &Error{Index: -1, Where: "env " + ev.name,
				Err: errors.New("a job override names the job and a key: SLOTLOCK_JOBS__<index or name>__<key>")})
			continue
		}
		sel := ev.segs[1]
		idx := -1
		if n, err := strconv.Atoi(sel); err == nil {
			if n >= 0 && n < len(list) {
				idx = n
			}
		} else {
			for i, item := range list {
				if m, ok := item.(map[string]any); ok {
					if name, ok := m["name"].(string); ok && strings.EqualFold(name, sel) {
						idx = i
						break
					}
				}
			}
		}
		if idx < 0 {
			l.errs = append(l.errs, &Error{Index: -1, Path: "jobs", Where: "env " + ev.name,
				Err: fmt.Errorf("no job with index or name %q to override", sel)})
			continue
		}
		m, ok := list[idx].(map[string]any)
		if !ok {
			continue // the job itself is malformed; decodeJob reports it
		}
		keys := ev.segs[2:]
		lowered := true
		path := "jobs[" + strconv.Itoa(idx) + "]"
		for i, key := range keys {
			if lowered {
				key = strings.ToLower(key)
			}
			if key == "params" {
				lowered = false
			}
			path = joinPath(path, key)
			if i == len(keys)-1 {
				m[key] = ev.value
				break
			}
			next, ok := m[key].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[key] = next
			}
			m = next
		}
		l.envSrc[path] = ev.name
	}
}

// checkEnvConflicts reports variables that set both a key and something
// inside it (SLOTLOCK_LOCK=x with SLOTLOCK_LOCK__TTL=1s): which one would
// win is not defined, so neither does.
func (l *loader) checkEnvConflicts() {
	paths := make([]string, 0, len(l.envSrc))
	for p := range l.envSrc {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for i, p := range paths {
		for _, q := range paths[i+1:] {
			if strings.HasPrefix(q, p+".") {
				l.errs = append(l.errs, &Error{Path: p, Index: -1, Where: "env " + l.envSrc[p] + ", " + l.envSrc[q],
					Err: fmt.Errorf("conflicting overrides: %s sets %s, %s sets a key inside it", l.envSrc[p], p, l.envSrc[q])})
			}
		}
	}
}

func errIndex(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Index
	}
	return -1
}

// decodeJob decodes one list item over the per-job defaults. It returns
// false when the item is not a map at all (nothing further to check).
func (l *loader) decodeJob(i int, item any) (Job, bool) {
	j := DefaultJob()
	path := "jobs[" + strconv.Itoa(i) + "]"
	m, ok := item.(map[string]any)
	if !ok {
		l.errs = append(l.errs, &Error{Path: path, Index: i, Where: l.where(path),
			Err: fmt.Errorf("expected a job (a map with name, schedule, plugin, ...), got %s", describe(item))})
		return j, false
	}
	name, _ := m["name"].(string)
	if err := jobs.DecodeParams(m, &j); err != nil {
		l.addDecodeErrors(path, i, name, err)
	}
	return j, true
}

// addDecodeErrors turns DecodeParams' *jobs.FieldError list into Errors
// under prefix.
func (l *loader) addDecodeErrors(prefix string, index int, job string, err error) {
	for _, e := range flatten(err) {
		path := prefix
		var fe *jobs.FieldError
		if errors.As(e, &fe) {
			path = joinSub(prefix, fe.Path)
			e = fe.Err
		}
		var uk *jobs.UnknownKeyError
		if errors.As(e, &uk) {
			e = &unknownKey{path: path, suggestion: uk.Suggestion}
		} else {
			if l.undecodable == nil {
				l.undecodable = map[string]bool{}
			}
			l.undecodable[path] = true
		}
		l.errs = append(l.errs, &Error{Path: path, Index: index, Job: job, Err: e, Where: l.where(path)})
	}
}

// joinSub appends a DecodeParams path ("a.b", "a[1]") to prefix.
func joinSub(prefix, sub string) string {
	switch {
	case sub == "":
		return prefix
	case prefix == "":
		return sub
	case strings.HasPrefix(sub, "["):
		return prefix + sub
	}
	return prefix + "." + sub
}

// flatten returns the leaves of a tree of joined errors.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// readPasswordFile reads redis.password_file into redis.password.
func (l *loader) readPasswordFile(r *Redis) {
	if r.PasswordFile == "" {
		return
	}
	if r.Password != "" {
		l.add("redis.password_file", errors.New("set either redis.password or redis.password_file, not both"))
		return
	}
	b, err := os.ReadFile(r.PasswordFile)
	if err != nil {
		l.add("redis.password_file", fmt.Errorf("cannot read the password: %w", err))
		return
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		l.addValue("redis.password_file", r.PasswordFile, errors.New("the file is empty"))
		return
	}
	r.Password = pw
}

func describe(v any) string {
	switch v.(type) {
	case map[string]any, map[any]any:
		return "a map"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the string %q", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", v)
}

// defaultsMap is Defaults() as the nested map koanf merges the file over.
func defaultsMap() map[string]any {
	d := Defaults()
	return map[string]any{
		"log":  map[string]any{"level": d.Log.Level, "format": d.Log.Format},
		"http": map[string]any{"addr": d.HTTP.Addr},
		"redis": map[string]any{
			"nodes": []any{}, "username": "", "password": "", "password_file": "", "tls": false, "allow_insecure": false,
			"key_prefix": d.Redis.KeyPrefix, "auth": d.Redis.Auth, "entra_client_id": "",
			"dial_timeout": d.Redis.DialTimeout.String(), "op_timeout": d.Redis.OpTimeout.String(),
		},
		"lock":     map[string]any{"ttl": d.Lock.TTL.String(), "max_clock_skew": d.Lock.MaxClockSkew.String()},
		"shutdown": map[string]any{"grace": d.Shutdown.Grace.String()},
		"jobs":     []any{},
	}
}
