package harness

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/series"
)

func TestSeriesFilesAndBazelDirs(t *testing.T) {
	dir := t.TempDir()
	p1 := filepath.Join(dir, "0001.patch")
	p2 := filepath.Join(dir, "0002.patch")
	writeFile(t, p1, "diff --git a/pkg/kubelet/BUILD b/pkg/kubelet/BUILD\ndiff --git a/pkg/kubelet/kubeletcompat/doc.go b/pkg/kubelet/kubeletcompat/doc.go\n")
	writeFile(t, p2, "diff --git a/pkg/kubelet/kuberuntime/x.go b/pkg/kubelet/kuberuntime/x.go\ndiff --git a/pkg/kubelet/BUILD b/pkg/kubelet/BUILD\ndiff --git a/docs/x.md b/docs/x.md\n")
	files, err := series.TouchedFiles([]string{p1, p2})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"docs/x.md", "pkg/kubelet/BUILD", "pkg/kubelet/kubeletcompat/doc.go", "pkg/kubelet/kuberuntime/x.go"}; !reflect.DeepEqual(files, want) {
		t.Errorf("TouchedFiles = %v, want %v", files, want)
	}
	visit, compare := bazelDirs(files)
	if want := []string{"pkg/kubelet", "pkg/kubelet/kubeletcompat", "pkg/kubelet/kuberuntime"}; !reflect.DeepEqual(visit, want) {
		t.Errorf("gazelle visits %v, want %v", visit, want)
	}
	if want := []string{"pkg", "pkg/kubelet", "pkg/kubelet/kubeletcompat", "pkg/kubelet/kuberuntime"}; !reflect.DeepEqual(compare, want) {
		t.Errorf("compared BUILD dirs %v, want %v", compare, want)
	}
}

func TestStagingResolves(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "staging", "publishing", "rules.yaml"), "rules:\n- destination: api\n  branches: []\n- destination: apimachinery\n")
	writeFile(t, filepath.Join(root, "pkg", "a", "a.go"), "package a\n\nimport (\n\tv1 \"k8s.io/api/core/v1\"\n\t\"k8s.io/utils/pointer\"\n\t\"k8s.io/apimachinery/pkg/types\"\n)\n")
	got, err := stagingResolves(root, []string{"pkg/a"})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")[1:]
	want := []string{
		"# gazelle:resolve go k8s.io/api/core/v1 //staging/src/k8s.io/api/core/v1:go_default_library",
		"# gazelle:resolve go k8s.io/apimachinery/pkg/types //staging/src/k8s.io/apimachinery/pkg/types:go_default_library",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("stagingResolves = %q, want %q", lines, want)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
