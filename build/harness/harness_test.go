package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/build/matrix"
)

var row121 = matrix.Row{Kubernetes: "1.21.14", Go: "1.16.15"}

func TestOutputDir(t *testing.T) {
	for _, tt := range []struct {
		patched bool
		want    string
	}{
		{true, "_output/1.21.14"},
		{false, "_output/1.21.14-unpatched"},
	} {
		h := New(Options{OutputDir: "_output", Patched: tt.patched})
		wd, _ := os.Getwd()
		if got := h.OutputDir(row121); got != filepath.Join(wd, tt.want) {
			t.Errorf("OutputDir(patched=%v) = %s, want %s", tt.patched, got, tt.want)
		}
	}
}

func TestLdflags(t *testing.T) {
	h := New(Options{Patched: true, SourceDateEpoch: 1700000000})
	tree := &Tree{Row: row121, Version: "v1.21.14+compat.1", h: h}
	got := tree.ldflags()
	for _, want := range []string{
		"-X 'k8s.io/component-base/version.gitVersion=v1.21.14+compat.1'",
		"-X 'k8s.io/client-go/pkg/version.gitVersion=v1.21.14+compat.1'",
		"-X 'k8s.io/component-base/version.gitMajor=1'",
		"-X 'k8s.io/component-base/version.gitMinor=21'",
		"-X 'k8s.io/component-base/version.gitTreeState=clean'",
		"-X 'k8s.io/component-base/version.buildDate=2023-11-14T22:13:20Z'",
		"-s -w",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ldflags lack %q:\n%s", want, got)
		}
	}
}

func TestSeries(t *testing.T) {
	dir := t.TempDir()
	h := New(Options{PatchesDir: dir})
	if _, err := h.series(row121); err == nil || !strings.Contains(err.Error(), "no patch series for 1.21") {
		t.Fatalf("series without a directory = %v", err)
	}
	must(t, os.MkdirAll(filepath.Join(dir, "v1.21"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "v1.21", "series"), []byte("# comment\n\n"), 0o644))
	if _, err := h.series(row121); err == nil || !strings.Contains(err.Error(), "lists no patches") {
		t.Fatalf("empty series = %v", err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "v1.21", "series"), []byte("# comment\n0001-a.patch\n0002-b.patch\n"), 0o644))
	got, err := h.series(row121)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || filepath.Base(got[0]) != "0001-a.patch" || !filepath.IsAbs(got[1]) {
		t.Errorf("series = %v", got)
	}
}

// TestBuildRefusesUnknownBinary: a typo fails before anything is built.
func TestBuildRefusesUnknownBinary(t *testing.T) {
	out := t.TempDir()
	h := New(Options{OutputDir: out, Patched: true, SourceDateEpoch: 1})
	tree := &Tree{Row: row121, Version: "v1.21.14+compat.1", h: h, Dir: t.TempDir(), logDir: t.TempDir()}
	err := tree.Build(context.Background(), []string{"kubelt"})
	if err == nil || !strings.Contains(err.Error(), `unknown binary "kubelt"`) {
		t.Fatalf("Build(kubelt) = %v", err)
	}
}

// TestFailedStepNamesItsLog: a failing step names the version, the step and its log.
func TestFailedStepNamesItsLog(t *testing.T) {
	logDir := t.TempDir()
	h := New(Options{})
	tree := &Tree{Row: row121, h: h, Dir: t.TempDir(), logDir: logDir, GOROOT: t.TempDir()}
	err := tree.run(context.Background(), "patch-0001-x", "sh", "-c", "echo 'Hunk #1 FAILED' >&2; exit 1")
	if err == nil {
		t.Fatal("failing step succeeded")
	}
	logPath := filepath.Join(logDir, "patch-0001-x.log")
	if want := "[1.21.14] step patch-0001-x failed: see " + logPath; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	data, _ := os.ReadFile(logPath)
	if !strings.Contains(string(data), "Hunk #1 FAILED") {
		t.Errorf("log lacks the command's output: %q", data)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
