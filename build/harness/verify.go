package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/binversion"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

// TestPackages are the kubelet packages the series patches and tests.
var TestPackages = []string{"./pkg/kubelet/kuberuntime/", "./pkg/kubelet/config/", "./pkg/kubelet/prober/"}

// AllocationTestPackage is where trees from 1.34 on admit pods (the
// allocation manager): patched there, so tested where it exists.
const AllocationTestPackage = "./pkg/kubelet/allocation/"

// KubeletTestPackage and KubeletTestRun select, of the kubelet package that
// patch 0004 changes, the tests of its admission path (HandlePodAdditions:
// upstream's and the series'); the whole package's tests take long and need
// more of the host than the others.
const (
	KubeletTestPackage = "./pkg/kubelet/"
	KubeletTestRun     = "^(TestHandle|TestPurgingObsoleteStatusMapEntries$|TestGenerateAPIPodStatusWithDifferentRestartPolicies$)"
)

// Test runs the patched packages' unit tests (upstream's and the series')
// with the row's Go.
func (t *Tree) Test(ctx context.Context) error {
	start := time.Now()
	packages := TestPackages
	if _, err := os.Stat(filepath.Join(t.Dir, AllocationTestPackage)); err == nil {
		packages = append(packages[:len(packages):len(packages)], AllocationTestPackage)
	}
	t.h.logf(t.Row, "testing %s with go%s...", strings.Join(packages, " "), t.Row.Go)
	args := append([]string{"test", "-count=1"}, packages...)
	if err := t.run(ctx, "test", t.goBin(), args...); err != nil {
		return err
	}
	t.h.logf(t.Row, "testing %s -run %q with go%s...", KubeletTestPackage, KubeletTestRun, t.Row.Go)
	if err := t.run(ctx, "test-kubelet", t.goBin(), "test", "-count=1", "-v", "-run", KubeletTestRun, KubeletTestPackage); err != nil {
		return err
	}
	t.h.logf(t.Row, "tests passed in %s", time.Since(start).Round(time.Second))
	return nil
}

// CheckBinaries checks that every built binary reports the stamped version
// and was built by the row's Go.
func (t *Tree) CheckBinaries(ctx context.Context, binaries []string) error {
	out := t.h.OutputDir(t.Row)
	for _, bin := range binaries {
		path := filepath.Join(out, bin)
		got, err := binversion.Ask(ctx, path, binversion.Args(bin)...)
		if err != nil {
			return fmt.Errorf("[%s] %s: %w", t.Row.Kubernetes, bin, err)
		}
		if !strings.Contains(got, t.Version) {
			return fmt.Errorf("[%s] %s reports %q, want %s", t.Row.Kubernetes, bin, got, t.Version)
		}
		goVersion := &exec.Cmd{Name: t.goBin(), Args: []string{"version", path}, Env: toolchain.Env(t.GOROOT, t.Row.Go, t.h.opts.CacheDir)}
		gov, err := goVersion.Output(ctx)
		if err != nil {
			// go1.13's `go version FILE` works; keep the message useful if not.
			return fmt.Errorf("[%s] go version %s: %w", t.Row.Kubernetes, path, err)
		}
		if !strings.Contains(string(gov), "go"+t.Row.Go) {
			return fmt.Errorf("[%s] %s was built with %q, want go%s", t.Row.Kubernetes, bin, strings.TrimSpace(string(gov)), t.Row.Go)
		}
	}
	t.h.logf(t.Row, "%s report %s, built with go%s", strings.Join(binaries, ", "), t.Version, t.Row.Go)
	return nil
}
