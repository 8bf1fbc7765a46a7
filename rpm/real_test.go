package rpm

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
)

// TestRealHarnessOutput runs the install and reproducibility checks on the
// real binaries of the build harness; `make rpm-test-real` sets it up. It
// takes minutes (xz of 100 MB kubelets), so plain `go test` skips it.
func TestRealHarnessOutput(t *testing.T) {
	input := os.Getenv("RPM_TEST_REAL_INPUT")
	if input == "" {
		t.Skip("set RPM_TEST_REAL_INPUT (and RPM_TEST_REAL_CLI) to test the real harness output: make rpm-test-real")
	}
	requireRPMTools(t)
	versions := strings.Fields(os.Getenv("RPM_TEST_REAL_VERSIONS"))
	if len(versions) == 0 {
		versions = allVersions
	}
	cfg := Config{Options: packaging.Options{InputDir: input, KubeletCompat: os.Getenv("RPM_TEST_REAL_CLI"), Jobs: runtime.NumCPU()}}
	first, built := buildRPMs(t, versions, cfg)
	second, _ := buildRPMs(t, versions, cfg)
	a, _ := os.ReadFile(filepath.Join(first, "SHA256SUMS"))
	b, _ := os.ReadFile(filepath.Join(second, "SHA256SUMS"))
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("rebuild differs:\n%s\n%s", a, b)
	}
	for _, p := range built {
		st, _ := os.Stat(p)
		t.Logf("%-55s %8.1f MiB", filepath.Base(p), float64(st.Size())/(1<<20))
	}
	checkRequiresAndProvides(t, built, versions)

	root := t.TempDir()
	t.Cleanup(func() { unmountUnder(t, root) })
	rpmRoot(t, root, append([]string{"-i", "--noscripts", buildTestrootBase(t)}, built...)...)
	if out := rpmRoot(t, root, "-Va"); out != "" {
		t.Errorf("rpm -Va:\n%s", out)
	}
	latest := versions[len(versions)-1]
	run(t, filepath.Join(root, "usr/bin/kubernetes-select"), "--root", root, "all", latest)
	checkLinksServe(t, root, latest)
}
