package scheduler

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestEngineShape keeps the engine's shape (docs/architecture.md): no
// type with more than 30 methods, and Scheduler — the composition root
// and the public API — with at most 20 methods and 12 fields. Methods
// are counted where declared, tests' accessors (export_test.go) included.
func TestEngineShape(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]int{}
	fields := -1
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") && name != "export_test.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					methods[receiverName(d.Recv.List[0].Type)]++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == "Scheduler" {
						fields = 0
						for _, fl := range ts.Type.(*ast.StructType).Fields.List {
							fields += max(len(fl.Names), 1)
						}
					}
				}
			}
		}
	}
	for typ, n := range methods {
		if n > 30 {
			t.Errorf("%s has %d methods, more than 30", typ, n)
		}
	}
	t.Logf("Scheduler: %d methods, %d fields; attempt: %d methods", methods["Scheduler"], fields, methods["attempt"])
	if n := methods["Scheduler"]; n > 20 {
		t.Errorf("Scheduler has %d methods, more than 20", n)
	}
	if fields < 0 || fields > 12 {
		t.Errorf("Scheduler has %d fields, want at most 12", fields)
	}
}

// receiverName is the type a method's receiver expression names.
func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
