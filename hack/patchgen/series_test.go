package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/series"
)

func TestTouchedFiles(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.patch")
	b := filepath.Join(dir, "b.patch")
	write(t, a, "Subject: x\n---\ndiff --git a/pkg/kubelet/kubelet.go b/pkg/kubelet/kubelet.go\n+x\ndiff --git a/pkg/kubelet/new.go b/pkg/kubelet/new.go\nnew file mode 100644\n")
	write(t, b, "diff --git a/pkg/kubelet/config/file.go b/pkg/kubelet/config/file.go\ndiff --git a/pkg/kubelet/kubelet.go b/pkg/kubelet/kubelet.go\n")
	got, err := series.TouchedFiles([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pkg/kubelet/config/file.go", "pkg/kubelet/kubelet.go", "pkg/kubelet/new.go"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TouchedFiles = %v, want %v", got, want)
	}
}

func TestReadSeries(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, seriesFile), "# comment\n0001-a.patch\n\n  0002-b.patch  \n")
	got, err := series.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0001-a.patch", "0002-b.patch"}; !reflect.DeepEqual(got, want) {
		t.Errorf("series.Read = %v, want %v", got, want)
	}
	g := generator{patchesDir: t.TempDir()}
	if _, err := g.hookPatches(row("1.21.14"), t.TempDir()); err == nil {
		t.Error("hookPatches without a hook set succeeded")
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func row(v string) matrix.Row { return matrix.Row{Kubernetes: v} }
