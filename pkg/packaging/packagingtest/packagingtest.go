// Package packagingtest holds the test helpers of both formats' tests
// (rpm/, deb/, cmd/build-packages): fake harness output, running the
// packaging tools, skipping without them.
package packagingtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// Epoch is a fixed SOURCE_DATE_EPOCH for the tests (2021-06-01).
const Epoch = 1622505600

// ControlPlane are the binaries of a -master package.
var ControlPlane = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// RequireTools skips without the programs, except in CI, where their
// absence is a broken setup (`make test` installs them; hint says how,
// e.g. "make rpm-deps").
func RequireTools(t testing.TB, hint string, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s not found: run `%s`", tool, hint)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// FakeHarness writes small shell scripts that stand in for the harness
// output: <dir>/<ver>/{kubelet,kubeadm,kubectl} (and the control-plane
// binaries for the versions in controlPlane) printing their version like
// the real ones, plus a fake kubelet-compat CLI, whose path it returns.
// "sleep N" makes a fake keep running (and its script open), like a live
// kubelet.
func FakeHarness(t testing.TB, dir string, versions []string, controlPlane ...string) string {
	t.Helper()
	for _, v := range versions {
		bins := []string{"kubelet", "kubeadm", "kubectl"}
		if slices.Contains(controlPlane, v) {
			bins = append(bins, ControlPlane...)
		}
		for _, bin := range bins {
			WriteExecutable(t, filepath.Join(dir, v, bin), fmt.Sprintf(`#!/bin/sh
case "$1" in
completion) echo "# fake bash completion of %[1]s %[2]s"; echo "complete -F __start_%[1]s %[1]s" ;;
sleep) sleep "$2" ;;
*) echo "Kubernetes v%[2]s (fake %[1]s)" ;;
esac
`, bin, v))
		}
	}
	cli := filepath.Join(dir, "kubelet-compat")
	WriteExecutable(t, cli, "#!/bin/sh\necho \"fake kubelet-compat $*\"\n")
	return cli
}

// WriteExecutable writes an executable file, making its directory.
func WriteExecutable(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// Run runs a command and returns its stdout, failing the test (with its
// stderr) on error or after two minutes.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, stderr.String())
	}
	return string(out)
}

// Result is what a command did, for tests that expect failures.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// RunResult runs a command with env added to the environment and returns
// what it did; it fails the test only if the command could not run.
func RunResult(t testing.TB, env []string, name string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	if err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		r.Code = exitErr.ExitCode()
	}
	return r
}

// RuntimeComponents are the components of FakeRuntime's output by
// default: two containerds, so that two versions install side by side.
var RuntimeComponents = []string{"containerd@1.7.35", "containerd@2.4.2", "runc@1.5.3", "crictl@1.34.0", "cni-plugins@1.10.0"}

// runtimeBinaries are the binaries make runtime writes per component.
var runtimeBinaries = map[string][]string{
	"containerd":  {"containerd", "containerd-shim-runc-v2", "ctr"},
	"runc":        {"runc"},
	"crictl":      {"crictl"},
	"cni-plugins": {"bridge", "host-local", "loopback", "portmap"},
}

// FakeRuntime writes what make runtime writes into dir for components
// (name@version): <dir>/<name>-<version>/ with small scripts for its
// binaries, printing "fake <binary> <version>", and the BUILDINFO.json
// that records them.
func FakeRuntime(t testing.TB, dir string, components ...string) {
	t.Helper()
	if len(components) == 0 {
		components = RuntimeComponents
	}
	for _, c := range components {
		name, version, _ := versions.SplitRef(c)
		out := filepath.Join(dir, name+"-"+version)
		var bins []string
		for _, bin := range runtimeBinaries[name] {
			content := fmt.Sprintf("#!/bin/sh\necho \"fake %s %s $*\"\n", bin, version)
			WriteExecutable(t, filepath.Join(out, bin), content)
			sum := sha256.Sum256([]byte(content))
			bins = append(bins, fmt.Sprintf(`{"name":%q,"sha256":%q}`, bin, hex.EncodeToString(sum[:])))
		}
		info := fmt.Sprintf(`{"component":%q,"binaries":[%s]}`, c, strings.Join(bins, ","))
		if err := os.WriteFile(filepath.Join(out, "BUILDINFO.json"), []byte(info), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// HoldLock holds flock(1) on path, as another run of a selection tool
// would, until the test ends.
func HoldLock(t testing.TB, path string) {
	t.Helper()
	holder := exec.Command("flock", path, "sleep", "30")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
		holder.Wait()
	})
	time.Sleep(200 * time.Millisecond)
}
