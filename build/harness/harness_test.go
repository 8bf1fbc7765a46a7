package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
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

func TestOpenAPIInputs(t *testing.T) {
	tree := t.TempDir()
	api := t.TempDir()
	write := func(path, content string) {
		must(t, os.MkdirAll(filepath.Dir(path), 0o755))
		must(t, os.WriteFile(path, []byte(content), 0o644))
	}
	write(filepath.Join(tree, "pkg/apis/a/v1/doc.go"), "// +k8s:openapi-gen=true\npackage v1\n")
	write(filepath.Join(tree, "pkg/apis/b/doc.go"), "// +k8s:deepcopy-gen=package\npackage b\n")
	write(filepath.Join(tree, "_output/x/doc.go"), "// +k8s:openapi-gen=true\npackage x\n")
	write(filepath.Join(tree, "vendor/k8s.io/api/doc.go"), "// +k8s:openapi-gen=true\npackage api\n")
	write(filepath.Join(tree, "pkg/c/_examples/doc.go"), "//   +k8s:openapi-gen=false\npackage c\n")
	write(filepath.Join(api, "core/v1/types.go"), "package v1\n\n// +k8s:openapi-gen=true\ntype T struct{}\n")

	tr := &Tree{Row: row121, Dir: tree}
	mods := "k8s.io/kubernetes \n" +
		"k8s.io/api k8s.io/api v0.21.14 " + api + "\n" +
		"k8s.io/utils k8s.io/utils v0.0.0-2021 /nowhere\n" +
		"k8s.io/code-generator k8s.io/code-generator v0.21.14 /cg\n" +
		"k8s.io/sample-apiserver k8s.io/sample-apiserver v0.21.14 /sample\n"
	roots, boilerplate := tr.openAPIRoots([]byte(mods))
	if boilerplate != "/cg/hack/boilerplate.go.txt" || len(roots) != 2 || roots["k8s.io/api"] != api {
		t.Fatalf("openAPIRoots = %v, %q", roots, boilerplate)
	}
	// A staging module go list names without a directory is not
	// downloaded yet: its tags would be missed.
	notYet := mods + "k8s.io/kube-controller-manager k8s.io/kube-controller-manager v0.21.14\n" +
		"k8s.io/utils k8s.io/utils v0.0.0-2021\n"
	if got := tr.undownloadedStaging([]byte(notYet)); strings.Join(got, " ") != "k8s.io/kube-controller-manager@v0.21.14" {
		t.Fatalf("undownloadedStaging = %v", got)
	}
	if got := tr.undownloadedStaging([]byte(mods)); len(got) != 0 {
		t.Fatalf("undownloadedStaging = %v, want none", got)
	}
	got, err := taggedPackages(roots)
	must(t, err)
	want := "k8s.io/api/core/v1 k8s.io/kubernetes/pkg/apis/a/v1 k8s.io/kubernetes/pkg/c/_examples"
	if strings.Join(got, " ") != want {
		t.Fatalf("taggedPackages = %v, want %s", got, want)
	}
}
