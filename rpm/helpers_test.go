package rpm

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	kcexec "github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// allVersions are the versions the harness builds; the tests package fakes of them.
var allVersions = []string{"1.18.19", "1.19.16", "1.20.15", "1.21.14"}

// testEpoch is a fixed SOURCE_DATE_EPOCH for the tests (2021-06-01).
const testEpoch = 1622505600

// requireRPMTools skips without rpmbuild and rpm, except in CI where their
// absence is a broken setup (`make test` installs them through rpm-deps).
func requireRPMTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"rpmbuild", "rpm"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s not found: run `make rpm-deps` (apt-get install rpm)", tool)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("skipped: %s needs root (CI runs as root)", why)
	}
}

// writeFakeHarness writes small shell scripts that stand in for the harness
// output: <dir>/<ver>/{kubelet,kubeadm,kubectl} printing their version like
// the real ones, plus a fake kubelet-compat CLI, whose path it returns.
// "sleep" makes a fake keep running (and its script open), like a live kubelet.
func writeFakeHarness(t *testing.T, dir string, versions []string) string {
	t.Helper()
	for _, v := range versions {
		for _, bin := range []string{"kubelet", "kubeadm", "kubectl"} {
			script := fmt.Sprintf(`#!/bin/sh
case "$1" in
completion) echo "# fake bash completion of %[1]s %[2]s"; echo "complete -F __start_%[1]s %[1]s" ;;
sleep) sleep "$2" ;;
*) echo "Kubernetes v%[2]s (fake %[1]s)" ;;
esac
`, bin, v)
			writeExecutable(t, filepath.Join(dir, v, bin), script)
		}
	}
	cli := filepath.Join(dir, "kubelet-compat")
	writeExecutable(t, cli, "#!/bin/sh\necho \"fake kubelet-compat $*\"\n")
	return cli
}

func writeExecutable(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// run runs a command and returns its stdout, failing the test on error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := kcexec.Command(name, args...).Output(ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return string(out)
}

// result is what a command did, for tests that expect failures.
type result struct {
	code           int
	stdout, stderr string
}

func runResult(t *testing.T, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		r.code = exitErr.ExitCode()
	}
	return r
}

// unmountUnder unmounts everything mounted below dir, deepest first, so a
// failed bind-mode test never leaves mounts behind (or lets RemoveAll
// reach through them).
func unmountUnder(t *testing.T, dir string) {
	t.Helper()
	for _, mp := range mountsUnder(t, dir) {
		if err := exec.Command("umount", "-l", mp).Run(); err != nil {
			t.Errorf("umount %s: %v", mp, err)
		}
	}
}

// mountsUnder lists the mount points below dir, deepest and latest first.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mps []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			mps = append(mps, fields[4])
		}
	}
	// Reverse mount order: a stacked mount goes before the one below it.
	for i, j := 0, len(mps)-1; i < j; i, j = i+1, j-1 {
		mps[i], mps[j] = mps[j], mps[i]
	}
	sort.SliceStable(mps, func(i, j int) bool { return len(mps[i]) > len(mps[j]) })
	return mps
}
