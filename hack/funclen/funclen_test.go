// Package funclen keeps the code's functions short enough to read: none
// in e2e/ over 100 lines, none elsewhere over 120 (the figures set when
// the e2e's swap sequence became one). Tests are not counted: their
// length is their table of cases.
package funclen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// limit is the longest function allowed in the file at rel (a path
// relative to the repository root, with slashes).
func limit(rel string) int {
	if strings.HasPrefix(rel, "e2e/") {
		return 100
	}
	return 120
}

// skipped are directories that hold no code of ours: build output and
// what tests leave.
var skipped = map[string]bool{"_output": true, "testdata": true, ".git": true, "vendor": true}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	assert.NilError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		assert.Assert(t, parent != dir, "no repository root above the test")
		dir = parent
	}
}

// tooLong lists the functions of one file over their limit, as
// "file:line: name is N lines (limit L)".
func tooLong(fset *token.FileSet, f *ast.File, rel string) []string {
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
		if n := end - start + 1; n > limit(rel) {
			out = append(out, fmt.Sprintf("%s:%d: %s is %d lines (limit %d)", rel, start, fn.Name.Name, n, limit(rel)))
		}
	}
	return out
}

func TestFunctionLengths(t *testing.T) {
	root := repoRoot(t)
	var long []string
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipped[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		long = append(long, tooLong(fset, f, filepath.ToSlash(rel))...)
		return nil
	})
	assert.NilError(t, err)
	assert.Assert(t, files > 100, "found only %d Go files under %s", files, root)
	assert.Assert(t, len(long) == 0, "functions over their limit:\n%s", strings.Join(long, "\n"))
}

func TestTooLong(t *testing.T) {
	src := "package p\n\nfunc short() {\n}\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", 100) + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	assert.NilError(t, err)
	assert.DeepEqual(t, tooLong(fset, f, "e2e/p.go"), []string{"e2e/p.go:6: long is 102 lines (limit 100)"})
	assert.Assert(t, len(tooLong(fset, f, "pkg/p.go")) == 0)
}
