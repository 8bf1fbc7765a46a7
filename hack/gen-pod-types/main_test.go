package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

// TestGeneratedTreesMatchMatrix is the offline half of -verify (which
// downloads every row's modules, in hack/verify-all): the generated file
// was read from exactly the matrix's rows. A new row fails it until
// `go run ./hack/gen-pod-types` runs.
func TestGeneratedTreesMatchMatrix(t *testing.T) {
	rows, err := matrix.Load()
	assert.NilError(t, err)
	want := map[int]string{}
	for _, row := range rows {
		minor, err := strconv.Atoi(strings.Split(row.Kubernetes, ".")[1])
		assert.NilError(t, err)
		want[minor] = "k8s.io/kubernetes@" + row.Tag() + ", k8s.io/apimachinery@" + row.ModuleVersion("k8s.io/apimachinery")
	}
	assert.Check(t, is.DeepEqual(generatedTrees(t, "../../"+outputFile), want), "run `go run ./hack/gen-pod-types`")
}

// generatedTrees reads podTypeTrees from the generated file.
func generatedTrees(t *testing.T, path string) map[int]string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	assert.NilError(t, err)
	trees := map[int]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || spec.Names[0].Name != "podTypeTrees" {
			return true
		}
		for _, elt := range spec.Values[0].(*ast.CompositeLit).Elts {
			kv := elt.(*ast.KeyValueExpr)
			minor, err := strconv.Atoi(kv.Key.(*ast.BasicLit).Value)
			assert.NilError(t, err)
			trees[minor], err = strconv.Unquote(kv.Value.(*ast.BasicLit).Value)
			assert.NilError(t, err)
		}
		return false
	})
	return trees
}

// TestPodTypes reads two small trees: only what the Pod reaches counts,
// through other packages of the two modules, unexported fields too.
func TestPodTypes(t *testing.T) {
	older := writeTree(t, `type Pod struct { metav1.ObjectMeta; Spec PodSpec }
type PodSpec struct { Seccomp *SeccompProfile; Limits map[string]resource.Quantity }
type SeccompProfile struct { Type string }
type Service struct { Name string }`, `type Quantity struct { s string }`)
	newer := writeTree(t, `type Pod struct { metav1.ObjectMeta; Spec PodSpec }
type PodSpec struct { Seccomp *SeccompProfile; Limits map[string]resource.Quantity }
type SeccompProfile struct { Type string; OCI *OCI }
type OCI struct { Ref string }
type Service struct { Name string; Port int }`, `type Quantity struct { s cached }
type cached struct { str string }`)
	a, err := podTypes(older)
	assert.NilError(t, err)
	b, err := podTypes(newer)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(a["PodSpec"], "struct{Seccomp *SeccompProfile; Limits map[string]resource.Quantity}"))
	assert.Check(t, is.Equal(a["Pod"], "struct{embedded metav1.ObjectMeta; Spec PodSpec}"))
	assert.Check(t, is.DeepEqual(changedTypes(a, b), []string{"OCI", "SeccompProfile", "resource.Quantity", "resource.cached"}))
}

// writeTree makes a kubernetes and an apimachinery module directory with
// core's types, meta/v1's ObjectMeta and resource's types.
func writeTree(t *testing.T, core, quantity string) tree {
	dir := t.TempDir()
	files := map[string]string{
		"k/pkg/apis/core/types.go":        "package core\n\nimport (\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\t\"k8s.io/apimachinery/pkg/api/resource\"\n)\n\n" + core + "\n",
		"am/pkg/apis/meta/v1/types.go":    "package v1\n\ntype ObjectMeta struct { Name string }\n",
		"am/pkg/api/resource/quantity.go": "package resource\n\n" + quantity + "\n",
	}
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		assert.NilError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return tree{kubernetes: filepath.Join(dir, "k"), apimachinery: filepath.Join(dir, "am")}
}
