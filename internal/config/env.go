package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/slotlock/slotlock/internal/strictdecode"
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

// envVar is one SLOTLOCK_JOBS__... override, applied to the jobs list.
type envVar struct {
	name  string   // the variable as written
	segs  []string // after the prefix, split at "__"
	value string
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
			// Fail closed: the node list is what makes the locks shared;
			// an override that leaves none is reported by load, never read
			// as "in-process locks".
			l.emptyNodesEnv = name
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
			path = strictdecode.JoinKey(path, key)
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
