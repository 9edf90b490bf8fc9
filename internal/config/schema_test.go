package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v4"
)

// Every setting has a redaction decision: a redact tag on each field that
// is not a section, so the configuration dump never shows a new setting by
// accident (tree.go masks a field without one).
func TestEverySettingHasARedactionDecision(t *testing.T) {
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			key := yamlKey(f)
			if key == "" {
				continue
			}
			p := path + key
			if isSection(f.Type) {
				elem := f.Type
				if elem.Kind() == reflect.Slice {
					elem, p = elem.Elem(), p+"[]"
				}
				walk(p+".", elem)
				continue
			}
			require.Contains(t, []string{redactShow, redactSecret, redactParams}, f.Tag.Get(redactTag),
				"%s (%s.%s) needs a redact tag: show, secret or params", p, typ.Name(), f.Name)
		}
	}
	walk("", reflect.TypeFor[Config]())
}

// The schema of docs/configuration.md (section "Schema") lists every
// setting and no other, each with the default Load applies; a job's
// required keys, which have no default, say "required" in their comment.
func TestDocumentedSchemaMatchesTheDefaults(t *testing.T) {
	blocks := documentedSchema(t)
	require.Len(t, blocks, 2, "the Schema section has the settings block and the job block")

	// The settings, as Defaults returns them.
	settings := leaves(t, "", blocks[0])
	require.ElementsMatch(t, sortedKeys(treeLeaves("", tree(reflect.ValueOf(Defaults()), false))), sortedKeys(settings),
		"the documented settings block and the Config struct name different keys")
	cfg, err := load("docs/configuration.md", []byte(blocks[0]), nil)
	require.NoError(t, err, "the documented settings block does not load")
	require.Equal(t, defaultsMap(), tree(reflect.ValueOf(*cfg), false), "the documented settings block differs from Defaults()")

	// A job, as DefaultJob returns it.
	var doc struct {
		Jobs []map[string]any `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(blocks[1]), &doc))
	require.Len(t, doc.Jobs, 1, "the documented job block shows one job")
	job := leaves(t, "jobs[0].", blocks[1])
	defaults := treeLeaves("jobs[0].", tree(reflect.ValueOf(DefaultJob()), false))
	require.ElementsMatch(t, sortedKeys(defaults), sortedKeys(job), "the documented job block and the Job struct name different keys")
	var documented Job
	require.NoError(t, decoder.Decode(doc.Jobs[0], &documented), "the documented job does not decode")
	for path, v := range treeLeaves("jobs[0].", tree(reflect.ValueOf(documented), false)) {
		if !reflect.DeepEqual(v, defaults[path]) {
			require.True(t, strings.HasPrefix(job[path], "required"),
				"%s: docs/configuration.md shows %v, the default is %v (or say \"required\" in its comment)", path, v, defaults[path])
		}
	}
}

// documentedSchema returns the ```yaml blocks of the Schema section of
// docs/configuration.md.
func documentedSchema(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Schema\n")
	require.True(t, ok, "docs/configuration.md has no ## Schema section")
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for {
		_, rest, ok := strings.Cut(section, "```yaml\n")
		if !ok {
			return blocks
		}
		block, after, _ := strings.Cut(rest, "```")
		blocks = append(blocks, block)
		section = after
	}
}

// leaves maps the path of every setting written in block to its line
// comment. A list or an empty map is one setting; a job list's first item
// is walked as jobs[0].
func leaves(t *testing.T, prefix, block string) map[string]string {
	t.Helper()
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(block), &doc))
	out := map[string]string{}
	var walk func(path string, n *yaml.Node)
	walk = func(path string, n *yaml.Node) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			p := path + key.Value
			switch {
			case key.Value == "jobs" && val.Kind == yaml.SequenceNode && len(val.Content) > 0:
				walk(prefix, val.Content[0])
			case val.Kind == yaml.MappingNode && len(val.Content) > 0:
				walk(p+".", val)
			default:
				out[p] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(key.LineComment+val.LineComment), "#"))
			}
		}
	}
	walk("", doc.Content[0])
	return out
}

// treeLeaves is leaves for what tree returns.
func treeLeaves(prefix string, v any) map[string]any {
	out := map[string]any{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, e := range m {
				walk(path+k+".", e)
			}
			return
		}
		out[strings.TrimSuffix(path, ".")] = v
	}
	walk(prefix, v)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
