package redlock

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestDriverShape keeps the driver's concerns apart: the lease steps
// (redlock), the fleet's state (store) and the rounds (nodeSet) each stay
// a type of their own, none over 30 methods.
func TestDriverShape(t *testing.T) {
	const most = 30
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fs := token.NewFileSet()
	methods := map[string]int{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fs, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
				typ := fd.Recv.List[0].Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					methods[id.Name]++
				}
			}
		}
	}
	for typ, n := range methods {
		if n > most {
			t.Errorf("type %s has %d methods, at most %d", typ, n, most)
		}
	}
}
