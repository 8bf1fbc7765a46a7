package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// corePackage is the internal API package whose Pod the kubelet hashes.
const corePackage = "k8s.io/kubernetes/pkg/apis/core"

// qualifier is how the generated table (and pkg/upstream's walk over
// k8s.io/api, which maps k8s.io/api/core/v1 to "") names a package's types:
// none for the internal core package, "metav1." for apimachinery's meta/v1,
// the last path element and a dot for any other.
func qualifier(importPath string) string {
	switch importPath {
	case corePackage:
		return ""
	case "k8s.io/apimachinery/pkg/apis/meta/v1":
		return "metav1."
	}
	return path.Base(importPath) + "."
}

// tree says where a row's modules are: the k8s.io/kubernetes and the
// k8s.io/apimachinery module directories.
type tree struct {
	kubernetes, apimachinery string
}

// dir is the directory of an import path in the tree, "" for a package
// outside both modules (the standard library, gopkg.in/inf.v0...), whose
// types the walk does not follow.
func (t tree) dir(importPath string) string {
	for _, m := range []struct{ module, dir string }{{"k8s.io/kubernetes", t.kubernetes}, {"k8s.io/apimachinery", t.apimachinery}} {
		if importPath == m.module || strings.HasPrefix(importPath, m.module+"/") {
			return filepath.Join(m.dir, filepath.FromSlash(strings.TrimPrefix(importPath, m.module)))
		}
	}
	return ""
}

// declaration is a type declared in a package, with the imports of its file.
type declaration struct {
	spec    *ast.TypeSpec
	imports map[string]string // file's import name -> import path
}

// loadPackage parses the type declarations of a package's non-test files.
func loadPackage(dir string) (map[string]declaration, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	decls := map[string]declaration{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		imports := map[string]string{}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			n := path.Base(p)
			if imp.Name != nil {
				n = imp.Name.Name
			}
			imports[n] = p
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				decls[ts.Name.Name] = declaration{spec: ts, imports: imports}
			}
		}
	}
	return decls, nil
}

// typeName is a named type: its package's import path and its name.
type typeName struct{ pkg, name string }

func (n typeName) String() string { return qualifier(n.pkg) + n.name }

// podTypes returns the definition of every named type reachable from the
// internal Pod of a tree through its fields, keyed by qualified name: a
// struct's fields in order (name and type, embedded ones as "embedded"),
// another type's underlying type. go-spew prints every field, unexported
// ones included, and every type's name, so these are what a change of the
// hashed pod's text can come from.
func podTypes(t tree) (map[string]string, error) {
	packages := map[string]map[string]declaration{}
	defs := map[string]string{}
	queue := []typeName{{corePackage, "Pod"}}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if _, done := defs[n.String()]; done {
			continue
		}
		decls, ok := packages[n.pkg]
		if !ok {
			var err error
			if decls, err = loadPackage(t.dir(n.pkg)); err != nil {
				return nil, fmt.Errorf("package %s: %w", n.pkg, err)
			}
			packages[n.pkg] = decls
		}
		d, ok := decls[n.name]
		if !ok {
			return nil, fmt.Errorf("type %s not found in %s", n.name, t.dir(n.pkg))
		}
		r := renderer{pkg: n.pkg, decls: decls, imports: d.imports, tree: t}
		def := r.expr(d.spec.Type)
		if d.spec.Assign.IsValid() {
			def = "= " + def
		}
		defs[n.String()] = def
		queue = append(queue, r.refs...)
	}
	return defs, nil
}

// renderer prints a type expression with package-independent qualifiers
// and collects the named types it references inside the two modules.
type renderer struct {
	pkg     string
	decls   map[string]declaration
	imports map[string]string
	tree    tree
	refs    []typeName
}

func (r *renderer) expr(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		if _, local := r.decls[e.Name]; local {
			n := typeName{r.pkg, e.Name}
			r.refs = append(r.refs, n)
			return n.String()
		}
		return e.Name // predeclared
	case *ast.SelectorExpr:
		p := r.imports[e.X.(*ast.Ident).Name]
		n := typeName{p, e.Sel.Name}
		if r.tree.dir(p) != "" {
			r.refs = append(r.refs, n)
		}
		return n.String()
	case *ast.StarExpr:
		return "*" + r.expr(e.X)
	case *ast.ArrayType:
		if e.Len == nil {
			return "[]" + r.expr(e.Elt)
		}
		return "[" + exprText(e.Len) + "]" + r.expr(e.Elt)
	case *ast.MapType:
		return "map[" + r.expr(e.Key) + "]" + r.expr(e.Value)
	case *ast.StructType:
		var fields []string
		for _, f := range e.Fields.List {
			typ := r.expr(f.Type)
			if len(f.Names) == 0 {
				fields = append(fields, "embedded "+typ)
			}
			for _, name := range f.Names {
				fields = append(fields, name.Name+" "+typ)
			}
		}
		return "struct{" + strings.Join(fields, "; ") + "}"
	case *ast.ParenExpr:
		return r.expr(e.X)
	}
	// Interfaces, funcs, channels: go-spew prints what they hold, not
	// their declaration; their text is enough to see a change.
	return exprText(e)
}

func exprText(e ast.Expr) string {
	var b strings.Builder
	if err := printer.Fprint(&b, token.NewFileSet(), e); err != nil {
		return fmt.Sprintf("%T", e)
	}
	return b.String()
}

// changedTypes are the names whose definitions differ between two rows'
// podTypes, a name only one of them has included, sorted.
func changedTypes(prev, next map[string]string) []string {
	var out []string
	for name, def := range next {
		if prev[name] != def {
			out = append(out, name)
		}
	}
	for name := range prev {
		if _, ok := next[name]; !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
