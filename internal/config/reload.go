package config

import (
	"encoding/json"
	"reflect"
	"slices"
)

// What a hot reload may change: the jobs and the calendars they name
// (calendar files are read again). Every other setting is read
// once at start (the lock stores, the key prefix, the lock ttl, the ops
// server, the log format, ...); a new value in the file is reported by
// RestartNeeded and waits for the next start.

// LoadData is Load on data, the contents of the file at path already read
// (a reload compares them with the last ones it loaded). data == nil is an
// empty file, not "no file".
func LoadData(path string, data []byte, environ []string) (*Config, error) {
	if data == nil {
		data = []byte{}
	}
	return load(path, data, environ)
}

// RestartNeeded lists the settings outside the jobs whose values differ
// between c (in force) and next, as key paths ("lock.ttl", "redis.nodes"),
// sorted. It compares the effective values, secrets included, and returns
// only their names.
func (c *Config) RestartNeeded(next *Config) []string {
	a, b := settings(c), settings(next)
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !reflect.DeepEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// WithJobs returns a copy of c with next's jobs and the calendars and
// groups they name: the configuration in force after a reload, whose settings are
// still c's.
func (c *Config) WithJobs(next *Config) *Config {
	out := *c
	out.Jobs, out.Calendars, out.Groups = next.Jobs, next.Calendars, next.Groups
	return &out
}

// DiffJobs compares c's jobs with next's by name: the names only next has,
// those only c has, and those whose definitions differ (any key, params
// and secrets included), each in its file's order.
func (c *Config) DiffJobs(next *Config) (added, removed, changed []string) {
	old := map[string]string{}
	for _, j := range c.Jobs {
		old[j.Name] = jobKey(j)
	}
	kept := map[string]bool{}
	for _, j := range next.Jobs {
		k, ok := old[j.Name]
		switch {
		case !ok:
			added = append(added, j.Name)
		case k != jobKey(j):
			changed = append(changed, j.Name)
		}
		kept[j.Name] = true
	}
	for _, j := range c.Jobs {
		if !kept[j.Name] {
			removed = append(removed, j.Name)
		}
	}
	return added, removed, changed
}

// jobKey is a job's definition as text, to compare with another's.
func jobKey(j Job) string {
	b, _ := json.Marshal(jobTree(j, false)) // maps, strings and numbers: cannot fail
	return string(b)
}

// settings flattens every section but the jobs into key path -> value
// (a list, such as redis.nodes, is one value).
func settings(c *Config) map[string]any {
	out := map[string]any{}
	m := tree(reflect.ValueOf(*c), false).(map[string]any)
	delete(m, "jobs")
	delete(m, "calendars") // part of the jobs' definitions (jobTree), reloaded with them
	delete(m, "groups")    // likewise
	flattenSettings("", m, out)
	return out
}

func flattenSettings(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			flattenSettings(path, sub, out)
			continue
		}
		out[path] = v
	}
}
