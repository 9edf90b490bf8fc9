package config

import (
	"reflect"
	"strings"
	"time"

	"github.com/slotlock/slotlock/jobs"
)

// The configuration's YAML form, derived from the struct tags: `yaml`
// names a key ("-" leaves the field out), `redact` says how the dump shows
// a setting. Sections (structs) and lists of them carry no redact tag; every
// other field must, and one without is shown as a secret.
const (
	redactTag    = "redact"
	redactShow   = "show"   // the value as it is
	redactSecret = "secret" // jobs.Redacted unless empty
	redactParams = "params" // a plugin's params, as jobs.RedactParams shows them (the Job's Runner decides)
)

// tree renders v as the nested maps and lists of its YAML form: a struct
// as a map keyed by its yaml tags, a slice as a list, a duration as a Go
// duration string, a nil map as an empty one, every other value as it is
// (a named string type as a plain string). With redact, each setting is
// shown as its redact tag says.
func tree(v reflect.Value, redact bool) any {
	t := v.Type()
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return time.Duration(v.Int()).String()
	case t.Kind() == reflect.Struct:
		m := map[string]any{}
		for i := range t.NumField() {
			f := t.Field(i)
			if key := yamlKey(f); key != "" {
				m[key] = field(v, f, v.Field(i), redact)
			}
		}
		return m
	case t.Kind() == reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = tree(v.Index(i), redact)
		}
		return out
	case t.Kind() == reflect.Map && v.IsNil():
		return map[string]any{}
	case t.Kind() == reflect.String:
		return v.String()
	}
	return v.Interface()
}

// field renders the field f of the struct parent, whose value is v.
func field(parent reflect.Value, f reflect.StructField, v reflect.Value, redact bool) any {
	if !redact || isSection(f.Type) {
		return tree(v, redact)
	}
	switch f.Tag.Get(redactTag) {
	case redactShow:
		return tree(v, redact)
	case redactParams:
		var runner jobs.Job
		if j, ok := parent.Interface().(Job); ok {
			runner = j.Runner
		}
		params, _ := v.Interface().(map[string]any)
		if shown := jobs.RedactParams(runner, params); shown != nil {
			return shown
		}
		return map[string]any{}
	}
	if v.IsZero() {
		return tree(v, redact)
	}
	return jobs.Redacted
}

// isSection reports whether t holds settings rather than being one: a
// struct (a duration is a setting) or a list of structs.
func isSection(t reflect.Type) bool {
	if t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}

// yamlKey is the key a field is written as, "" for none.
func yamlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

// defaultsMap is Defaults() as the nested map koanf merges the file over.
func defaultsMap() map[string]any {
	return tree(reflect.ValueOf(Defaults()), false).(map[string]any)
}

// sections are the top-level keys, in the order of Config's fields; an
// environment variable without "__" is an override when it names one.
var sections = func() []string {
	var keys []string
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		if k := yamlKey(t.Field(i)); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}()
