package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v4"
)

// jsonCases are JSON files readJSON takes, each read by both parsers.
var jsonCases = []string{
	`{}`,
	`{"jobs": []}`,
	`{"a": {}, "b": [], "c": [{}, []], "d": [[1, 2], {"e": null}]}`,
	`{"n": [0, -1, 1.5, -0.25, 1e3, 1E-2, 2.5e+10, 12345678901234567890, -0, 100000000000000000000000]}`,
	`{"b": [true, false, null], "s": ["", " ", "true", "null", "1", "~", "#x", "a: b", "- x", "&a", "*a", "!t"]}`,
	`{"escapes": "tab\tnl\ncr\rquote\"back\\slash\b\f", "key with spaces": "v", "": "empty key"}`,
	`{"unicode": "grüße, 日本語 — ü", "ü": {"日本": "x", "after": 1}}`,
	"{\n  \"log\": {\"level\": \"info\"},\n  \"jobs\": [\n    {\"name\": \"a\",\n     \"schedule\": \"@every 1s\"}\n  ]\n}\n",
	"\n\n  {\"a\"  :  1 ,  \"b\":[ 1 ,2 ] }  \n\n",
	"{\"crlf\": [1,\r\n 2],\r\n \"x\": \"y\"}\r\n",
}

// jsonFallbacks are files readJSON leaves to the YAML parser: not one JSON
// object, or JSON the two would read differently.
var jsonFallbacks = []string{
	``, `[1, 2]`, `"x"`, `1`, `null`, `jobs: []`, `{"a": 1} {"b": 2}`, `{"a": 1}, 2`, `{"a": 1`, `{"a": 1,}`,
	// A duplicate key: an error in YAML. Escapes YAML may read otherwise.
	`{"a": 1, "a": 2}`, `{"a": "\u00fc"}`, `{"a": "\ud83d\ude00"}`, `{"a": "x\/y"}`,
	"{\"a\":\t1}", "{\"a\": 1}\r", "{\"a\": \"x\u007f\"}", "{\"a\": \"\u0085\u0080\"}", "{\"a\": \"\u0085\"}", "{\"a\": \"\u2028\u2029\"}", "\ufeff{\"a\": 1}", "{\"a\": \"\xff\"}",
	"{\"a\"\n: 1}", // a key whose colon is on the next line: not a simple key
	`{"` + strings.Repeat("k", 1025) + `": 1}`,
	`{"a": ` + strings.Repeat("[", jsonMaxDepth+1) + strings.Repeat("]", jsonMaxDepth+1) + `}`,
	"{\"a\": 1}\n# a comment after", "# a comment\n{\"a\": 1}", "---\n{\"a\": 1}",
}

// TestJSONTreeIsYAMLTree holds readJSON to the YAML parser: for every JSON
// file it takes, the same tree (kinds, tags, styles, values, lines and
// columns) and the same decoded map; the repository's example and test
// configurations written as JSON in several layouts are among them.
func TestJSONTreeIsYAMLTree(t *testing.T) {
	cases := append([]string{}, jsonCases...)
	paths, _ := filepath.Glob("testdata/configs/*.yaml")
	paths = append(paths, "../../config.yaml")
	for _, p := range paths {
		cases = append(cases, asJSON(t, p)...)
	}
	for i, c := range cases {
		got, ok := readJSON([]byte(c))
		if !ok {
			t.Errorf("case %d: readJSON did not take %q", i, shorten(c))
			continue
		}
		var want yaml.Node
		if err := yaml.Unmarshal([]byte(c), &want); err != nil {
			t.Errorf("case %d: YAML does not read %q: %v", i, shorten(c), err)
			continue
		}
		if diff := nodeDiff("", got, &want); diff != "" {
			t.Errorf("case %d %q: %s", i, shorten(c), diff)
		}
		var gm, wm map[string]any
		if err := got.Decode(&gm); err != nil {
			t.Errorf("case %d: decode: %v", i, err)
		}
		_ = want.Decode(&wm)
		if !reflect.DeepEqual(gm, wm) {
			t.Errorf("case %d: decoded\n%v\nYAML decodes\n%v", i, gm, wm)
		}
	}
	for i, c := range jsonFallbacks {
		if _, ok := readJSON([]byte(c)); ok {
			t.Errorf("fallback %d: readJSON took %q, which is the YAML parser's", i, shorten(c))
		}
	}
}

// TestJSONFileErrorsAsYAML: a JSON file's configuration errors name the
// same positions whichever parser read it (a duplicate key is YAML's).
func TestJSONFileErrorsAsYAML(t *testing.T) {
	file := "{\n  \"lock\": {\"ttl\": \"soon\"},\n  \"jobs\": [\n    {\"name\": \"a\", \"schedule\": \"every day\", \"plugin\": \"log\", \"params\": {\"message\": \"x\"}}\n  ]\n}\n"
	_, err := load("c.json", []byte(file), nil)
	if err == nil {
		t.Fatal("a bad ttl and schedule loaded")
	}
	for _, want := range []string{"c.json:2:", "lock.ttl", "c.json:4:", "jobs[0].schedule"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	_, err = load("c.json", []byte(`{"lock": {"ttl": "1s"}, "lock": {}}`), nil)
	if err == nil || !strings.Contains(err.Error(), "already defined") {
		t.Errorf("a duplicate key: %v, want YAML's error", err)
	}
}

// asJSON is the YAML file at path as JSON: compact, indented by two
// spaces and with CRLF line ends.
func asJSON(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var compact, indented bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false) // no \u escapes: those are the YAML parser's
	if err := enc.Encode(jsonable(v)); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	_ = json.Indent(&indented, compact.Bytes(), "", "  ")
	crlf := strings.ReplaceAll(indented.String(), "\n", "\r\n")
	return []string{compact.String(), indented.String(), crlf}
}

// jsonable turns YAML's decoded maps (keys of any type) into JSON's.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
	}
	return v
}

// nodeDiff describes the first difference between two trees, "" none.
func nodeDiff(path string, a, b *yaml.Node) string {
	type fields struct {
		Kind          yaml.Kind
		Style         yaml.Style
		Tag, Value    string
		Line, Column  int
		Content       int
		Anchor, Alias bool
	}
	f := func(n *yaml.Node) fields {
		return fields{n.Kind, n.Style, n.Tag, n.Value, n.Line, n.Column, len(n.Content), n.Anchor != "", n.Alias != nil}
	}
	if fa, fb := f(a), f(b); fa != fb {
		return fmt.Sprintf("at %q: JSON's %+v, YAML's %+v", path, fa, fb)
	}
	for i := range a.Content {
		if d := nodeDiff(fmt.Sprintf("%s/%d", path, i), a.Content[i], b.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// FuzzJSONTree: whatever readJSON takes, the YAML parser reads to the same
// tree and map.
//
//	go test -fuzz=FuzzJSONTree ./internal/config
func FuzzJSONTree(f *testing.F) {
	for _, c := range append(append([]string{}, jsonCases...), jsonFallbacks...) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := readJSON(data)
		if !ok {
			return
		}
		var want yaml.Node
		if err := yaml.Unmarshal(data, &want); err != nil {
			t.Fatalf("readJSON took %q, which YAML refuses: %v", data, err)
		}
		if diff := nodeDiff("", got, &want); diff != "" {
			t.Fatalf("%q: %s", data, diff)
		}
		var gm, wm any
		gerr, werr := got.Decode(&gm), want.Decode(&wm)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(gm, wm) {
			t.Fatalf("%q: decoded %v (%v), YAML decodes %v (%v)", data, gm, gerr, wm, werr)
		}
	})
}
