// Package e2eimports keeps the product free of the e2e: no package under
// deploy/, cmd/ or pkg/, nor its tests, imports anything under e2e/,
// directly or through another package. What both need lives in pkg/
// (pkg/README.md). It asks `go list` (the module cache the tests build
// from; no network).
package e2eimports

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const module = "github.com/kubelet-compat/kubelet-compat"

// product are the patterns that must not reach e2e/.
var product = []string{"./deploy/...", "./cmd/...", "./pkg/..."}

func TestProductImportsNothingFromE2E(t *testing.T) {
	bad, roots := e2eImports(t, product...)
	assert.Assert(t, roots > 20, "go list matched %d packages under %v: the patterns are broken", roots, product)
	assert.Check(t, is.Len(bad, 0), "the product imports the e2e; move what both need into pkg/ (pkg/README.md):\n%s", strings.Join(bad, "\n"))
}

// TestChainToE2E proves the check is not vacuous: an import through
// another package, in a test variant too, is found.
func TestChainToE2E(t *testing.T) {
	m := module + "/"
	pkgs := map[string]listed{
		m + "pkg/a":                       {Imports: []string{"fmt", m + "pkg/b"}},
		m + "pkg/b":                       {Imports: []string{m + "e2e/pkg/x"}},
		m + "pkg/c [" + m + "pkg/c.test]": {Imports: []string{m + "e2e/pkg/x [" + m + "pkg/c.test]"}},
		m + "pkg/d":                       {Imports: []string{"fmt"}},
	}
	assert.Check(t, is.DeepEqual(chainToE2E(pkgs, m+"pkg/a"), []string{"pkg/a", "pkg/b", "e2e/pkg/x"}))
	assert.Check(t, is.DeepEqual(chainToE2E(pkgs, m+"pkg/c ["+m+"pkg/c.test]"), []string{"pkg/c (test)", "e2e/pkg/x (test)"}))
	assert.Check(t, is.Nil(chainToE2E(pkgs, m+"pkg/d")))
}

type listed struct {
	ImportPath string
	Imports    []string
	DepOnly    bool
}

// e2eImports lists, for each package of patterns (and its test variants)
// that reaches a package under e2e/, one import chain to it.
func e2eImports(t *testing.T, patterns ...string) (bad []string, roots int) {
	t.Helper()
	args := append([]string{"list", "-e", "-deps", "-test", "-json=ImportPath,Imports,DepOnly"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	assert.NilError(t, err, "go %s: %s", strings.Join(args, " "), stderr.String())
	pkgs := map[string]listed{}
	var order []string
	seen := map[string]bool{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			assert.NilError(t, err)
		}
		pkgs[p.ImportPath] = p
		order = append(order, p.ImportPath)
	}
	for _, path := range order {
		p := pkgs[path]
		if p.DepOnly || isE2E(path) || strings.HasSuffix(path, ".test") {
			continue // a test main imports its package's test variant, listed too
		}
		roots++
		if chain := chainToE2E(pkgs, path); chain != nil {
			seen["  "+strings.Join(chain, " -> ")] = true
		}
	}
	for c := range seen {
		bad = append(bad, c)
	}
	sort.Strings(bad)
	return bad, roots
}

// isE2E reports whether an import path (possibly a test variant, "p [q.test]")
// is a package under e2e/.
func isE2E(path string) bool {
	path, _, _ = strings.Cut(path, " ")
	return path == module+"/e2e" || strings.HasPrefix(path, module+"/e2e/")
}

// chainToE2E is the shortest import chain from root to a package under
// e2e/ (breadth first), or nil.
func chainToE2E(pkgs map[string]listed, root string) []string {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if isE2E(cur) {
			var chain []string
			for p := cur; p != ""; p = from[p] {
				chain = append([]string{short(p)}, chain...)
			}
			return chain
		}
		for _, imp := range pkgs[cur].Imports {
			if _, seen := from[imp]; !seen {
				from[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

// short is an import path relative to the module, "(test)" for a test
// variant.
func short(path string) string {
	path, variant, _ := strings.Cut(path, " ")
	path = strings.TrimPrefix(path, module+"/")
	if variant != "" {
		path += " (test)"
	}
	return path
}
