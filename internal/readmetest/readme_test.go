package readmetest

import (
	"bytes"
	"flag"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the example blocks of README.md and docs/*.md from the example files")

// root is the repository, seen from this package.
const root = "../.."

// docFiles are the documents whose blocks and links are checked: README.md
// and every page under docs/.
func docFiles(t *testing.T) []string {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	return append([]string{filepath.Join(root, "README.md")}, pages...)
}

// exampleBlock matches a marker line and the fenced Go block after it.
var exampleBlock = regexp.MustCompile("(?m)^<!-- example: (\\S+) as package (\\w+)\\b[^\\n]*-->\\n```go\\n((?s:.*?))```\\n")

func TestDocExamples(t *testing.T) {
	found := 0
	for _, doc := range docFiles(t) {
		found += checkExamples(t, doc)
	}
	require.NotZero(t, found, "no document has a <!-- example: FILE as package NAME --> block")
}

// checkExamples compares (or, with -update, rewrites) the example blocks of
// one document and returns how many it has.
func checkExamples(t *testing.T, doc string) int {
	text, err := os.ReadFile(doc)
	require.NoError(t, err)
	blocks := exampleBlock.FindAllSubmatchIndex(text, -1)

	var out bytes.Buffer
	last := 0
	for _, m := range blocks {
		file, pkg := string(text[m[2]:m[3]]), string(text[m[4]:m[5]])
		want, err := render(filepath.Join(root, filepath.FromSlash(file)), pkg)
		require.NoError(t, err, file)
		got := string(text[m[6]:m[7]])
		if !*update {
			require.Equal(t, want, got, "%s's block from %s differs from the example: edit the example, then run go test ./internal/readmetest -update", doc, file)
		}
		out.Write(text[last:m[6]])
		out.WriteString(want)
		last = m[7]
	}
	out.Write(text[last:])
	if *update && !bytes.Equal(out.Bytes(), text) {
		require.NoError(t, os.WriteFile(doc, out.Bytes(), 0o644))
		t.Logf("rewrote %d example blocks in %s", len(blocks), doc)
	}
	return len(blocks)
}

// render returns the example file at path as a reader's own package pkg
// would hold it: Example functions (and their doc comments) cut, the
// imports reduced to those the rest uses, gofmt'ed.
func render(file, pkg string) (string, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return "", err
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	type cut struct {
		from, to int
		with     string
	}
	cuts := []cut{{off(f.Name.Pos()), off(f.Name.End()), pkg}}

	used := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && strings.HasPrefix(d.Name.Name, "Example") {
				from := d.Pos()
				if d.Doc != nil {
					from = d.Doc.Pos()
				}
				cuts = append(cuts, cut{off(from), off(d.End()), ""})
				continue
			}
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
		}
		ast.Inspect(d, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok {
					used[id.Name] = true
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			cuts = append(cuts, cut{off(g.Pos()), off(g.End()), imports(g, used)})
		}
	}

	slices.SortFunc(cuts, func(a, b cut) int { return b.from - a.from })
	for _, c := range cuts {
		src = slices.Concat(src[:c.from], []byte(c.with), src[c.to:])
	}
	out, err := format.Source(src)
	return string(out), err
}

// imports writes an import declaration of the specs of g whose name is
// used: the standard library first, then the rest.
func imports(g *ast.GenDecl, used map[string]bool) string {
	var std, other []string
	for _, s := range g.Specs {
		spec := s.(*ast.ImportSpec)
		p, _ := strconv.Unquote(spec.Path.Value)
		name := path.Base(p)
		line := spec.Path.Value
		if spec.Name != nil {
			name = spec.Name.Name
			line = name + " " + line
		}
		if !used[name] && name != "_" {
			continue
		}
		if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
			other = append(other, line)
		} else {
			std = append(std, line)
		}
	}
	var b strings.Builder
	b.WriteString("import (\n")
	for _, l := range std {
		b.WriteString("\t" + l + "\n")
	}
	if len(std) > 0 && len(other) > 0 {
		b.WriteString("\n")
	}
	for _, l := range other {
		b.WriteString("\t" + l + "\n")
	}
	b.WriteString(")")
	return b.String()
}
