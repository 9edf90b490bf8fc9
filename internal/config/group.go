package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/slotlock/slotlock/scheduler"
)

// Group is one entry of the top-level groups list: a concurrency group,
// at most Limit runs of the jobs that name it at once, fleet-wide
// (docs/configuration.md, Concurrency groups).
type Group struct {
	Name  string `yaml:"name" redact:"show"`
	Limit int    `yaml:"limit" redact:"show"`
}

// Group returns the group named name.
func (c *Config) Group(name string) (*Group, bool) {
	for i := range c.Groups {
		if c.Groups[i].Name == name {
			return &c.Groups[i], true
		}
	}
	return nil, false
}

// validateGroups checks the groups: names in the jobs' form, each once,
// limits between 1 and scheduler.MaxGroupLimit. It returns the valid ones
// by name, for the jobs to resolve theirs against.
func (l *loader) validateGroups(c *Config) map[string]*scheduler.Group {
	valid := map[string]*scheduler.Group{}
	seen := map[string]int{}
	for i, g := range c.Groups {
		base := "groups[" + strconv.Itoa(i) + "]"
		ok := true
		if err := scheduler.CheckName(g.Name); err != nil {
			ok = false
			l.addValue(base+".name", g.Name, err)
		} else if first, dup := seen[g.Name]; dup {
			ok = false
			l.addValue(base+".name", g.Name, fmt.Errorf("duplicate: groups[%d] has the same name", first))
		} else {
			seen[g.Name] = i
		}
		if g.Limit < 1 || g.Limit > scheduler.MaxGroupLimit {
			ok = false
			l.addf(base+".limit", "must be between 1 and %d, got %d", scheduler.MaxGroupLimit, g.Limit)
		}
		if ok {
			valid[g.Name] = &scheduler.Group{Name: g.Name, Limit: g.Limit}
		}
	}
	return valid
}

// validateJobGroup checks that a job's group is defined and resolves it.
func (l *loader) validateJobGroup(c *Config, j *Job, add func(field, value string, err error)) {
	if j.Group == "" {
		return
	}
	if _, ok := c.Group(j.Group); !ok {
		var names []string // the valid ones, each once, in file order
		for _, g := range c.Groups {
			if v := l.groups[g.Name]; v != nil && v.Limit == g.Limit && !slices.Contains(names, g.Name) {
				names = append(names, g.Name)
			}
		}
		if len(names) == 0 {
			add("group", j.Group, errors.New("not defined: no valid entry in groups"))
		} else {
			add("group", j.Group, fmt.Errorf("not defined; groups: %s", strings.Join(names, ", ")))
		}
		return
	}
	j.ResolvedGroup = l.groups[j.Group] // nil when the group's own errors say why
}
