package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/hack/gen-hash-goldens/golden"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

// TestCommittedGoldenIsFresh is what `make test` runs.
func TestCommittedGoldenIsFresh(t *testing.T) {
	if err := verify("../../kubelet-compat/testdata/containers.json", "../../kubelet-compat/testdata/hashes.golden"); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyDetectsStaleGoldens(t *testing.T) {
	rows, err := matrix.Load()
	if err != nil {
		t.Fatal(err)
	}
	corpus := []byte(`[{"name":"a","container":{"name":"c"}},{"name":"b","container":{"name":"d"}}]`)
	good := func() *golden.File {
		f := &golden.File{CorpusSHA256: golden.CorpusSHA256(corpus)}
		for _, r := range rows {
			f.Trees = append(f.Trees, golden.TreeOf(r))
			f.Lines = append(f.Lines, golden.Line{Minor: r.Minor(), Item: "a", Hash: "3c42280f"}, golden.Line{Minor: r.Minor(), Item: "b", Hash: "1"})
		}
		return f
	}
	tests := []struct {
		name   string
		mutate func(f *golden.File)
		want   string
	}{
		{"fresh", func(*golden.File) {}, ""},
		{"other corpus", func(f *golden.File) { f.CorpusSHA256 = strings.Repeat("0", 64) }, "corpus sha256"},
		{"other tree", func(f *golden.File) { f.Trees[2].Version = "v1.18.20" }, "does not match matrix row"},
		{"missing tree", func(f *golden.File) { f.Trees = f.Trees[1:] }, "tree lines"},
		{"missing line", func(f *golden.File) { f.Lines = f.Lines[1:] }, "hash lines"},
		{"items swapped", func(f *golden.File) { f.Lines[0], f.Lines[1] = f.Lines[1], f.Lines[0] }, "want minor"},
		{"bad hash", func(f *golden.File) { f.Lines[3].Hash = "XYZ" }, "not lowercase hex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f := good()
			tt.mutate(f)
			corpusPath, goldenPath := filepath.Join(dir, "containers.json"), filepath.Join(dir, "hashes.golden")
			if err := os.WriteFile(corpusPath, corpus, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(goldenPath, f.Format(), 0o644); err != nil {
				t.Fatal(err)
			}
			err := verify(corpusPath, goldenPath)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("verify error = %v, want it to mention %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
	if err := verify(filepath.Join(t.TempDir(), "none.json"), "x"); err == nil {
		t.Error("missing corpus not reported")
	}
}
