package rpm

import (
	"bufio"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// allVersions are the versions the harness builds; the tests package fakes of them.
var allVersions = []string{"1.18.19", "1.19.16", "1.20.15", "1.21.14"}

// The helpers both formats' tests share (pkg/packaging/packagingtest).
const testEpoch = packagingtest.Epoch

type result = packagingtest.Result

var (
	run             = packagingtest.Run
	runResult       = packagingtest.RunResult
	writeExecutable = packagingtest.WriteExecutable
)

// requireRPMTools skips without rpmbuild and rpm, except in CI where their
// absence is a broken setup (`make test` installs them through rpm-deps).
func requireRPMTools(t *testing.T) {
	t.Helper()
	packagingtest.RequireTools(t, "make rpm-deps", "rpmbuild", "rpm")
}

func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("skipped: %s needs root (CI runs as root)", why)
	}
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
