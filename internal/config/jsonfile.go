package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v4"
)

// A configuration file written as JSON, as tools generate one (YAML is a
// superset of JSON), is read by encoding/json into the node tree the YAML
// parser would have built for it, marks included: the YAML parser reads
// flow collections — all of a JSON file — in time that grows faster than
// the file: `slotlock validate` of a generated file of 10,000 jobs
// (2.3 MB) took 4.7 s and 430 MB, at every start and every reload, and a
// block-style YAML file of the same jobs 1.4 s.
//
// Only what both read alike is taken here; for anything else readJSON
// answers false and the YAML parser reads the file, with its own errors:
// a file that is not one JSON object, a duplicate key (an error in YAML,
// the last value in JSON), a key YAML does not take as a simple key, a
// \u or \/ escape, a character YAML does not allow in a file or takes as
// a line break (NEL, LS, PS), a tab or a lone CR, nesting deeper than a
// configuration's. TestJSONTreeIsYAMLTree and FuzzJSONTree hold the trees
// equal.

// jsonMaxDepth bounds the nesting read here: a configuration's is below
// ten; deeper files are the YAML parser's, with its own limits.
const jsonMaxDepth = 64

// readJSON returns the document node the YAML parser would build for b,
// or false when the YAML parser must read b.
func readJSON(b []byte) (*yaml.Node, bool) {
	if rest := bytes.TrimLeft(b, " \t\r\n"); len(rest) == 0 || rest[0] != '{' {
		return nil, false // JSON allows only whitespace before the object
	}
	if !yamlPrintable(b) {
		return nil, false
	}
	r := &jsonReader{data: b, dec: json.NewDecoder(bytes.NewReader(b)), line: 1, col: 1}
	r.dec.UseNumber()
	root, ok := r.value(0)
	if !ok {
		return nil, false
	}
	if _, err := r.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false // more after the object
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Line: root.Line, Column: root.Column, Content: []*yaml.Node{root}}
	return doc, true
}

// jsonReader builds the tree from the decoder's tokens; the marks come
// from the tokens' offsets in data.
type jsonReader struct {
	data []byte
	dec  *json.Decoder
	end  int // where the last token ended

	at        int // the offset line and col are of
	line, col int // 1-based, col in characters, as the YAML parser's marks
}

// next reads a token and the offset it starts at.
func (r *jsonReader) next() (json.Token, int, bool) {
	tok, err := r.dec.Token()
	if err != nil {
		return nil, 0, false
	}
	start := r.end
	for start < len(r.data) && strings.IndexByte(" \t\r\n,:", r.data[start]) >= 0 {
		start++
	}
	r.end = int(r.dec.InputOffset())
	return tok, start, true
}

// mark moves line and col to off, which is not before the last mark.
func (r *jsonReader) mark(off int) (line, col int) {
	for ; r.at < off; r.at++ {
		switch c := r.data[r.at]; {
		case c == '\r': // of a CRLF (yamlPrintable): the LF breaks the line
		case c == '\n':
			r.line, r.col = r.line+1, 1
		case c&0xC0 != 0x80: // not a UTF-8 continuation byte: a character
			r.col++
		}
	}
	return r.line, r.col
}

// value reads one value: a token, and for an object or array what it
// holds.
func (r *jsonReader) value(depth int) (*yaml.Node, bool) {
	tok, start, ok := r.next()
	if !ok {
		return nil, false
	}
	return r.node(tok, start, depth)
}

func (r *jsonReader) node(tok json.Token, start, depth int) (*yaml.Node, bool) {
	line, col := r.mark(start)
	n := &yaml.Node{Line: line, Column: col}
	switch v := tok.(type) {
	case json.Delim:
		if depth >= jsonMaxDepth || (v != '{' && v != '[') {
			return nil, false
		}
		return r.collection(n, v, depth)
	case string:
		raw := r.data[start:r.end]
		if bytes.Contains(raw, []byte(`\u`)) || bytes.Contains(raw, []byte(`\/`)) {
			return nil, false
		}
		n.Kind, n.Style, n.Tag, n.Value = yaml.ScalarNode, yaml.DoubleQuotedStyle, "!!str", v
	case json.Number:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, plainTag(string(v)), string(v)
	case bool:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", string(r.data[start:r.end])
	case nil:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
	default:
		return nil, false
	}
	return n, true
}

// collection reads an object's members or an array's elements up to
// their closing delimiter.
func (r *jsonReader) collection(n *yaml.Node, open json.Delim, depth int) (*yaml.Node, bool) {
	n.Kind, n.Tag, n.Style = yaml.SequenceNode, "!!seq", yaml.FlowStyle
	var keys map[string]bool
	if open == '{' {
		n.Kind, n.Tag, keys = yaml.MappingNode, "!!map", map[string]bool{}
	}
	for {
		tok, start, ok := r.next()
		if !ok {
			return nil, false
		}
		if d, isDelim := tok.(json.Delim); isDelim && (d == '}' || d == ']') {
			return n, true
		}
		if keys != nil {
			key, _ := tok.(string)
			if keys[key] || !r.simpleKey(start) {
				return nil, false // YAML's error to report
			}
			keys[key] = true
		}
		child, ok := r.node(tok, start, depth+1)
		if !ok {
			return nil, false
		}
		n.Content = append(n.Content, child)
		if keys != nil {
			v, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			n.Content = append(n.Content, v)
		}
	}
}

// simpleKey reports whether the key that starts at start and ended last
// is one YAML reads in a flow mapping: at most 1,024 characters, its colon
// on its line.
func (r *jsonReader) simpleKey(start int) bool {
	colon := bytes.IndexByte(r.data[r.end:], ':')
	return r.end-start <= 1024 && colon >= 0 && !bytes.ContainsAny(r.data[r.end:r.end+colon], "\r\n")
}

// plainTags caches the YAML parser's tag for the plain scalars numbers
// are written as: a file has few distinct ones, and the cache keeps at
// most plainTagsMax whatever files the process reads.
var (
	plainTags  sync.Map
	plainTagsN atomic.Int32
)

const plainTagsMax = 1024

// plainTag is the tag the YAML parser resolves the plain scalar s to.
func plainTag(s string) string {
	if t, ok := plainTags.Load(s); ok {
		return t.(string)
	}
	var doc yaml.Node
	tag := "!!str"
	if err := yaml.Unmarshal([]byte(s), &doc); err == nil && len(doc.Content) == 1 {
		tag = doc.Content[0].Tag
	}
	if plainTagsN.Load() < plainTagsMax { // a few over it when loads race
		plainTags.Store(s, tag)
		plainTagsN.Add(1)
	}
	return tag
}

// yamlPrintable reports whether b is UTF-8 of characters YAML allows in a
// file (its c-printable set, without a byte order mark), with no tab, no
// CR but in a CRLF and no line break YAML knows that JSON does not (NEL,
// LS, PS).
func yamlPrintable(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			// A lone CR breaks a line in YAML, not in marks counted here;
			// a tab is the YAML parser's to judge where it stands.
			if c < 0x20 && c != '\n' && c != '\r' || c == 0x7F || c == '\r' && (i+1 == len(b) || b[i+1] != '\n') {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return false
		case r == 0x85, r == 0x2028, r == 0x2029:
			return false // line breaks to YAML, which folds them in a quoted string
		case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD && r != 0xFEFF, r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
		i += size
	}
	return true
}
