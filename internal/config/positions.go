package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v4"

	"github.com/slotlock/slotlock/internal/strictdecode"
)

// report is a load's problems and what each needs to say where its value
// came from: every key path is mapped to the line and column of its key in
// the file, or to the environment variable that set it.
type report struct {
	path   string
	pos    map[string]yaml.Mark // key path -> position of the key in the file
	envSrc map[string]string    // key path -> the variable that set it
	errs   Errors
	// undecodable holds the paths whose values did not decode; validation
	// does not pile a second error on them.
	undecodable map[string]bool
}

// add records a problem at path outside the jobs (validateJob records its
// own, with the job's index and name).
func (r *report) add(path string, err error) {
	if r.undecodable[path] {
		return
	}
	r.errs = append(r.errs, &Error{Path: path, Index: -1, Err: err, Where: r.where(path)})
}

func (r *report) addValue(path, value string, err error) {
	if r.undecodable[path] {
		return
	}
	r.errs = append(r.errs, &Error{Path: path, Index: -1, Value: shownValue(path, value), Err: err, Where: r.where(path)})
}

func (r *report) addf(path, format string, args ...any) { r.add(path, fmt.Errorf(format, args...)) }

// where tells where the value at path came from: an environment variable
// or a file position (of the key, or of its nearest ancestor).
func (r *report) where(path string) string {
	for p := path; ; p = parentPath(p) {
		if name, ok := r.envSrc[p]; ok {
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
		for p, name := range r.envSrc {
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
		if m, ok := r.pos[p]; ok {
			return fmt.Sprintf("%s:%d:%d", r.path, m.Line, m.Column)
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

// parseFile parses the YAML file into a map and records the position of
// every key.
func (r *report) parseFile(b []byte) (map[string]any, bool) {
	doc, ok := readJSON(b)
	if !ok {
		if doc, ok = r.parseYAML(b); !ok {
			return nil, false
		}
		if doc == nil {
			return map[string]any{}, true // empty file: defaults only
		}
	}
	root := doc
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
		r.errs = append(r.errs, &Error{Index: -1, Where: r.mark(*root),
			Err: fmt.Errorf("the top level must be a map of sections (%s), got %s", strings.Join(sections, ", "), nodeKind(root))})
		return nil, false
	}
	r.recordPositions("", root, 0)
	var m map[string]any
	if err := root.Decode(&m); err != nil {
		r.addYAMLError(err)
		return nil, false
	}
	return m, true
}

// parseYAML parses the file's one document; nil and true when there is
// none, nil and false when it does not parse (the errors are recorded).
func (r *report) parseYAML(b []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		r.addYAMLError(err)
		return nil, false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		r.errs = append(r.errs, &Error{Index: -1, Where: r.mark(extra),
			Err: errors.New("the file holds more than one YAML document; put everything in one")})
		return nil, false
	} else if !errors.Is(err, io.EOF) {
		r.addYAMLError(err)
		return nil, false
	}
	return &doc, true
}

func (r *report) mark(n yaml.Node) string {
	return fmt.Sprintf("%s:%d:%d", r.path, n.Line, n.Column)
}

// addYAMLError turns the YAML library's errors into Errors with the file,
// line and column.
func (r *report) addYAMLError(err error) {
	var les *yaml.LoadErrors
	if errors.As(err, &les) && len(les.Errors) > 0 {
		for _, e := range les.Errors {
			r.addYAMLLoadError(e)
		}
		return
	}
	var le *yaml.LoadError
	if errors.As(err, &le) {
		r.addYAMLLoadError(le)
		return
	}
	r.errs = append(r.errs, &Error{Index: -1, Err: fmt.Errorf("%s: %s", r.path, strings.TrimPrefix(err.Error(), "yaml: "))})
}

func (r *report) addYAMLLoadError(e *yaml.LoadError) {
	where := r.path
	if e.Mark.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", r.path, e.Mark.Line, max(e.Mark.Column, 1))
	}
	msg := e.Message
	if e.ContextMsg != "" && e.ContextMark.Line > 0 {
		msg += fmt.Sprintf(" (%s at line %d, column %d)", e.ContextMsg, e.ContextMark.Line, e.ContextMark.Column)
	}
	r.errs = append(r.errs, &Error{Index: -1, Err: errors.New("invalid YAML: " + msg), Where: where})
}

// recordPositions maps every key path to the position of its key (and
// every list element to its own position). Aliases are not followed.
func (r *report) recordPositions(path string, n *yaml.Node, depth int) {
	if depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			p := strictdecode.JoinKey(path, key.Value)
			if _, dup := r.pos[p]; !dup {
				r.pos[p] = yaml.Mark{Line: key.Line, Column: key.Column}
			}
			r.recordPositions(p, val, depth+1)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			r.pos[p] = yaml.Mark{Line: item.Line, Column: item.Column}
			r.recordPositions(p, item, depth+1)
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

// IsEmpty reports whether data, a configuration file's contents, holds no
// setting: nothing, blanks, comments, document markers or a null
// document. Load takes such a file as the defaults; the command refuses
// it (a file caught mid-rewrite must not remove every job).
//
// A file whose first line of content is a top-level key ("jobs:") is a
// mapping and not empty, told without parsing it: the parse of a
// thousand-job file was 60 % of a replica's configuration load, at start
// and at every reload, for an answer its first key gives.
//
// So is one whose first content is a flow collection ("{" or "["): a
// JSON file, whose YAML parse is slow (jsonfile.go).
func IsEmpty(data []byte) bool {
	if line := firstContentLine(data); startsWithKey(line) || startsWithFlow(line) {
		return false
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false // Load reports it
		}
		root := &doc
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if !(root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
			return false
		}
	}
}

// firstContentLine is the first line of data that is not blank, a
// comment or a bare document start ("---"), without its line break and
// trailing blanks; nil when there is none.
func firstContentLine(data []byte) []byte {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimRight(line, " \t\r")
		if trimmed := bytes.TrimLeft(line, " \t"); len(trimmed) == 0 || trimmed[0] == '#' || string(line) == "---" {
			continue
		}
		return line
	}
	return nil
}

// startsWithKey reports whether line, a file's first line of content,
// begins with a plain key at column 0 followed by ':' and a blank or the
// line's end: the root of the first document is then a mapping. False
// means "not told": the parse decides.
func startsWithKey(line []byte) bool {
	n := 0
	for n < len(line) && (line[n] == '_' || line[n] == '-' && n > 0 ||
		line[n] >= 'a' && line[n] <= 'z' || line[n] >= 'A' && line[n] <= 'Z' || line[n] >= '0' && line[n] <= '9' && n > 0) {
		n++
	}
	return n > 0 && n < len(line) && line[n] == ':' && (n+1 == len(line) || line[n+1] == ' ' || line[n+1] == '\t')
}

// startsWithFlow reports whether line, a file's first line of content,
// opens a flow collection: the root of the first document is then a
// mapping or a sequence, or the file does not parse.
func startsWithFlow(line []byte) bool {
	line = bytes.TrimLeft(line, " \t")
	return len(line) > 0 && (line[0] == '{' || line[0] == '[')
}
