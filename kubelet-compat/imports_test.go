package kubeletcompat

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsAllowed: the non-test files are compiled into kubelet trees and
// may use only what every supported tree vendors. klog in particular is out:
// 1.18 has k8s.io/klog, 1.19+ k8s.io/klog/v2, so logging is injected.
func TestImportsAllowed(t *testing.T) {
	allowed := []string{"k8s.io/api/", "k8s.io/apimachinery/", "github.com/davecgh/go-spew/"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
				continue // standard library
			}
			ok := false
			for _, prefix := range allowed {
				ok = ok || strings.HasPrefix(path+"/", prefix)
			}
			if !ok {
				t.Errorf("%s imports %s: only the standard library, k8s.io/api, k8s.io/apimachinery and go-spew are allowed", name, path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no library files checked")
	}
}
