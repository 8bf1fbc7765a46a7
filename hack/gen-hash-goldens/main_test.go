package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/hack/gen-hash-goldens/golden"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

func TestProgramParses(t *testing.T) {
	src := program("v1.18.19")
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", src, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	var imports []string
	for _, imp := range f.Imports {
		imports = append(imports, imp.Path.Value)
	}
	joined := strings.Join(imports, " ")
	for _, want := range []string{`"k8s.io/kubernetes/pkg/kubelet/container"`, `"k8s.io/api/core/v1"`, `"io/ioutil"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("program does not import %s", want)
		}
	}
}

func TestParseOutput(t *testing.T) {
	row := matrix.Row{Kubernetes: "1.18.19"}
	items := []golden.CorpusItem{{Name: "a"}, {Name: "b"}}
	tests := []struct {
		out string
		ok  bool
	}{
		{"a 3c42280f\nb 1\n", true},
		{"b 1\na 3c42280f\n", false},
		{"a 3c42280f\n", false},
		{"a 3c42280f\nb 1\nc 2\n", false},
		{"a\nb 1\n", false},
	}
	for _, tt := range tests {
		lines, err := parseOutput(row, []byte(tt.out), items)
		if (err == nil) != tt.ok {
			t.Errorf("parseOutput(%q) error = %v, want ok %v", tt.out, err, tt.ok)
		}
		if err == nil && (lines[0] != golden.Line{Minor: "1.18", Item: "a", Hash: "3c42280f"}) {
			t.Errorf("parseOutput(%q) = %+v", tt.out, lines)
		}
	}
}

func TestReusable(t *testing.T) {
	rows, err := matrix.Load()
	if err != nil {
		t.Fatal(err)
	}
	corpus := []byte(`[{"name":"a","container":{"name":"c"}}]`)
	f := &golden.File{CorpusSHA256: golden.CorpusSHA256(corpus)}
	for _, r := range rows {
		f.Trees = append(f.Trees, golden.TreeOf(r))
		f.Lines = append(f.Lines, golden.Line{Minor: r.Minor(), Item: "a", Hash: "1"})
	}
	path := filepath.Join(t.TempDir(), "hashes.golden")
	write := func(f *golden.File) {
		if err := os.WriteFile(path, f.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	selected, _ := matrix.Select(rows, []string{"1.18"})

	write(f)
	if _, err := reusable(path, corpus, rows, selected); err != nil {
		t.Errorf("fresh golden not reusable: %v", err)
	}
	if _, err := reusable(path, []byte(`[]`), rows, selected); err == nil || !strings.Contains(err.Error(), "another corpus") {
		t.Errorf("changed corpus: %v", err)
	}
	f.Trees[2].Go = "go1.13.14" // 1.18 is being regenerated: fine
	write(f)
	if _, err := reusable(path, corpus, rows, selected); err != nil {
		t.Errorf("stale tree of a regenerated minor: %v", err)
	}
	f.Trees[3].Go = "go1.15.14" // 1.19 is kept: stale
	write(f)
	if _, err := reusable(path, corpus, rows, selected); err == nil || !strings.Contains(err.Error(), "1.19") {
		t.Errorf("stale kept tree: %v", err)
	}
	if _, err := reusable(filepath.Join(t.TempDir(), "none"), corpus, rows, selected); err == nil {
		t.Error("missing golden accepted")
	}
}
