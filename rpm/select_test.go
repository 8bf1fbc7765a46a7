package rpm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// selectScript is the kubernetes-select that kubernetes-unversioned ships.
const selectScript = "files/kubernetes-select"

// makeInstalledTree lays out under root what the versioned packages and
// kubernetes-unversioned install, with fake binaries, without rpm.
func makeInstalledTree(t *testing.T, root string, versions []string) {
	t.Helper()
	harness := t.TempDir()
	writeFakeHarness(t, harness, versions)
	for _, v := range versions {
		for stage, bins := range map[string][]string{"stage1": {"kubeadm"}, "stage2": {"kubelet", "kubectl"}} {
			for _, bin := range bins {
				b, err := os.ReadFile(filepath.Join(harness, v, bin))
				if err != nil {
					t.Fatal(err)
				}
				writeExecutable(t, filepath.Join(root, KubeRoot, v, stage, "usr/bin", bin), string(b))
			}
		}
	}
	for _, stage := range []string{"stage1", "stage2"} {
		if err := os.MkdirAll(filepath.Join(root, CurrentDir, stage), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func kubernetesSelect(t *testing.T, env []string, root string, args ...string) result {
	t.Helper()
	return runResult(t, env, "bash", append([]string{selectScript, "--root", root}, args...)...)
}

var fakeVersion = regexp.MustCompile(`Kubernetes v(\S+) \(fake`)

// selectedVersion runs the binary that current/<stage> serves and returns
// the version it reports, or "" when the stage serves nothing.
func selectedVersion(t *testing.T, root, stage string) string {
	t.Helper()
	bin := map[string]string{"stage1": "kubeadm", "stage2": "kubelet"}[stage]
	out, err := exec.Command(filepath.Join(root, CurrentDir, stage, "usr/bin", bin)).Output()
	if err != nil {
		return ""
	}
	m := fakeVersion.FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s of %s printed %q", bin, stage, out)
	}
	return string(m[1])
}

// stageState describes current/<stage> exactly enough to tell whether a
// command changed anything.
func stageState(t *testing.T, root, stage string) string {
	t.Helper()
	p := filepath.Join(root, CurrentDir, stage)
	st, err := os.Lstat(p)
	if err != nil {
		return "missing"
	}
	target, _ := os.Readlink(p)
	mounts := 0
	for _, mp := range mountsUnder(t, root) {
		if mp == p {
			mounts++
		}
	}
	return fmt.Sprintf("mode=%v inode=%d link=%q mounts=%d", st.Mode().Type(), st.Sys().(*syscall.Stat_t).Ino, target, mounts)
}

func treeState(t *testing.T, root string) string {
	t.Helper()
	fstab, _ := os.ReadFile(filepath.Join(root, "etc/fstab"))
	return stageState(t, root, "stage1") + "\n" + stageState(t, root, "stage2") + "\nfstab:\n" + string(fstab)
}

func fstabLine(stage, version string) string {
	return fmt.Sprintf("%s/%s/%s %s/%s none bind 0 0", KubeRoot, version, stage, CurrentDir, stage)
}

// checkMode checks that both stages are in mode, with fstab to match.
func checkMode(t *testing.T, root, mode string, versions map[string]string) {
	t.Helper()
	fstab, _ := os.ReadFile(filepath.Join(root, "etc/fstab"))
	for _, stage := range []string{"stage1", "stage2"} {
		p := filepath.Join(root, CurrentDir, stage)
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		isLink := st.Mode()&os.ModeSymlink != 0
		mounted := strings.Contains(strings.Join(mountsUnder(t, root), "\n")+"\n", p+"\n")
		hasEntry := strings.Contains(string(fstab), fstabLine(stage, versions[stage]))
		switch mode {
		case "symlink":
			if !isLink || mounted || strings.Contains(string(fstab), p) {
				t.Errorf("%s: symlink=%v mounted=%v fstab=%q, want a symlink only", stage, isLink, mounted, fstab)
			}
		case "bind":
			if isLink || !mounted || !hasEntry {
				t.Errorf("%s: symlink=%v mounted=%v fstab entry=%v, want a bind mount in fstab", stage, isLink, mounted, hasEntry)
			}
		}
	}
}

// TestSelectSkewPolicyAndIdempotence walks one upgrade path in each mode.
func TestSelectSkewPolicyAndIdempotence(t *testing.T) {
	type step struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string // substring
		unchanged  bool   // the tree must stay exactly as it was
		stage1     string // versions served afterwards
		stage2     string
	}
	steps := []step{
		{name: "first selection", args: []string{"all", "1.18.19"}, stage1: "1.18.19", stage2: "1.18.19"},
		{name: "again is a no-op", args: []string{"all", "1.18.19"}, unchanged: true, stage1: "1.18.19", stage2: "1.18.19"},
		{name: "two minors up", args: []string{"stage1", "1.20.15"}, wantCode: 1, wantStderr: "more than one minor version", unchanged: true, stage1: "1.18.19", stage2: "1.18.19"},
		{name: "kubelet before kubeadm", args: []string{"stage2", "1.19.16"}, wantCode: 1, wantStderr: "newer than stage1 1.18.19", unchanged: true, stage1: "1.18.19", stage2: "1.18.19"},
		{name: "not installed", args: []string{"stage1", "1.19.0"}, wantCode: 1, wantStderr: "1.19.0 is not installed", unchanged: true, stage1: "1.18.19", stage2: "1.18.19"},
		{name: "stage1 one minor up", args: []string{"stage1", "1.19.16"}, stage1: "1.19.16", stage2: "1.18.19"},
		{name: "stage2 follows", args: []string{"stage2", "1.19.16"}, stage1: "1.19.16", stage2: "1.19.16"},
		{name: "forced skip", args: []string{"--force", "stage1", "1.21.14"}, stage1: "1.21.14", stage2: "1.19.16"},
		{name: "stage2 one minor up", args: []string{"stage2", "1.20.15"}, stage1: "1.21.14", stage2: "1.20.15"},
		{name: "stage1 below stage2", args: []string{"stage1", "1.19.16"}, wantCode: 1, wantStderr: "older than stage2 1.20.15", unchanged: true, stage1: "1.21.14", stage2: "1.20.15"},
		{name: "rollback of both", args: []string{"all", "1.18.19"}, stage1: "1.18.19", stage2: "1.18.19"},
	}
	for _, mode := range []string{"symlink", "bind"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "bind" {
				requireRoot(t, "bind mode (mount --bind)")
			}
			root := t.TempDir()
			t.Cleanup(func() { unmountUnder(t, root) })
			makeInstalledTree(t, root, allVersions)
			for _, s := range steps {
				before := treeState(t, root)
				r := kubernetesSelect(t, nil, root, append([]string{"--mode", mode}, s.args...)...)
				if r.code != s.wantCode || !strings.Contains(r.stderr, s.wantStderr) {
					t.Fatalf("%s: %v: exit %d, stderr %q; want exit %d with %q", s.name, s.args, r.code, r.stderr, s.wantCode, s.wantStderr)
				}
				if r.code != 0 && strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
					t.Errorf("%s: want a one-line error, got %q", s.name, r.stderr)
				}
				if after := treeState(t, root); s.unchanged && after != before {
					t.Errorf("%s: tree changed:\nbefore %s\nafter  %s", s.name, before, after)
				}
				if got := selectedVersion(t, root, "stage1"); got != s.stage1 {
					t.Errorf("%s: stage1 serves %q, want %s", s.name, got, s.stage1)
				}
				if got := selectedVersion(t, root, "stage2"); got != s.stage2 {
					t.Errorf("%s: stage2 serves %q, want %s", s.name, got, s.stage2)
				}
				checkMode(t, root, mode, map[string]string{"stage1": s.stage1, "stage2": s.stage2})
			}
			status := kubernetesSelect(t, nil, root, "status")
			if want := fmt.Sprintf("stage1: 1.18.19 (%s)\nstage2: 1.18.19 (%s)\n", mode, mode); status.stdout != want {
				t.Errorf("status = %q, want %q", status.stdout, want)
			}
		})
	}
}

// TestSelectSwitchesModes moves a stage between bind and symlink mode and
// back without changing the version, keeping fstab in step.
func TestSelectSwitchesModes(t *testing.T) {
	requireRoot(t, "bind mode (mount --bind)")
	root := t.TempDir()
	t.Cleanup(func() { unmountUnder(t, root) })
	makeInstalledTree(t, root, allVersions)
	fstab := filepath.Join(root, "etc/fstab")
	if err := os.MkdirAll(filepath.Dir(fstab), 0o755); err != nil {
		t.Fatal(err)
	}
	// Other entries must survive every rewrite.
	const others = "# /etc/fstab\nUUID=1234 / ext4 defaults 0 1\n"
	if err := os.WriteFile(fstab, []byte(others), 0o644); err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{"stage1": "1.21.14", "stage2": "1.21.14"}
	for _, mode := range []string{"symlink", "bind", "bind", "symlink", "bind"} {
		if r := kubernetesSelect(t, nil, root, "--mode", mode, "all", "1.21.14"); r.code != 0 {
			t.Fatalf("--mode %s: exit %d: %s", mode, r.code, r.stderr)
		}
		checkMode(t, root, mode, versions)
		b, _ := os.ReadFile(fstab)
		if !strings.HasPrefix(string(b), others) {
			t.Errorf("--mode %s: fstab lost other entries: %q", mode, b)
		}
		if st, _ := os.Stat(fstab); st.Mode().Perm() != 0o644 {
			t.Errorf("--mode %s: fstab mode %v", mode, st.Mode().Perm())
		}
		for _, stage := range []string{"stage1", "stage2"} {
			if got := selectedVersion(t, root, stage); got != "1.21.14" {
				t.Errorf("--mode %s: %s serves %q", mode, stage, got)
			}
		}
	}
	// Without --mode, a stage keeps its present mode.
	if r := kubernetesSelect(t, nil, root, "stage2", "1.20.15"); r.code != 0 || !strings.Contains(r.stdout, "(bind)") {
		t.Errorf("default mode: exit %d, stdout %q, want bind kept", r.code, r.stdout)
	}
}

// TestSelectWhileKubeletRuns shows why StarlingX moved to symlinks: a bind
// mount cannot be removed while a binary from it runs, a symlink can be
// replaced.
func TestSelectWhileKubeletRuns(t *testing.T) {
	for _, tc := range []struct {
		mode       string
		wantCode   int
		wantStderr string
	}{
		{mode: "bind", wantCode: 1, wantStderr: "busy"},
		{mode: "symlink", wantCode: 0},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			if tc.mode == "bind" {
				requireRoot(t, "bind mode (mount --bind)")
			}
			root := t.TempDir()
			t.Cleanup(func() { unmountUnder(t, root) })
			makeInstalledTree(t, root, allVersions)
			if r := kubernetesSelect(t, nil, root, "--mode", tc.mode, "all", "1.18.19"); r.code != 0 {
				t.Fatalf("select: %s", r.stderr)
			}
			if r := kubernetesSelect(t, nil, root, "stage1", "1.19.16"); r.code != 0 {
				t.Fatalf("select: %s", r.stderr)
			}
			kubelet := exec.Command(filepath.Join(root, CurrentDir, "stage2/usr/bin/kubelet"), "sleep", "60")
			kubelet.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := kubelet.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				syscall.Kill(-kubelet.Process.Pid, syscall.SIGKILL)
				kubelet.Wait()
			})
			time.Sleep(100 * time.Millisecond) // let the shell open its script

			r := kubernetesSelect(t, nil, root, "stage2", "1.19.16")
			if r.code != tc.wantCode || !strings.Contains(r.stderr, tc.wantStderr) {
				t.Fatalf("switch while running: exit %d, stderr %q; want %d with %q", r.code, r.stderr, tc.wantCode, tc.wantStderr)
			}
			want := map[bool]string{true: "1.19.16", false: "1.18.19"}[tc.wantCode == 0]
			if got := selectedVersion(t, root, "stage2"); got != want {
				t.Errorf("stage2 serves %q, want %s", got, want)
			}
		})
	}
}

// TestSelectRestartsKubelet checks the systemctl calls around a stage2
// switch, with a fake systemctl that logs them.
func TestSelectRestartsKubelet(t *testing.T) {
	for _, tc := range []struct {
		name      string
		active    bool
		args      []string
		breakIt   bool // make the switch fail
		wantCode  int
		wantCalls string
	}{
		{name: "active kubelet is stopped and started", active: true, args: []string{"stage2", "1.19.16"},
			wantCalls: "is-active --quiet kubelet|stop kubelet|daemon-reload|start kubelet|"},
		{name: "inactive kubelet stays stopped", active: false, args: []string{"stage2", "1.19.16"},
			wantCalls: "is-active --quiet kubelet|"},
		{name: "failed switch starts it again", active: true, args: []string{"stage2", "1.19.16"}, breakIt: true, wantCode: 1,
			wantCalls: "is-active --quiet kubelet|stop kubelet|daemon-reload|start kubelet|"},
		{name: "stage1 leaves the kubelet alone", active: true, args: []string{"stage1", "1.20.15"}},
		{name: "no-op leaves the kubelet alone", active: true, args: []string{"stage2", "1.18.19"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			makeInstalledTree(t, root, allVersions)
			for _, args := range [][]string{{"all", "1.18.19"}, {"stage1", "1.19.16"}} {
				if r := kubernetesSelect(t, nil, root, args...); r.code != 0 {
					t.Fatalf("setup %v: %s", args, r.stderr)
				}
			}
			if tc.breakIt {
				// A non-empty directory where the stage2 link should go.
				cur := filepath.Join(root, CurrentDir, "stage2")
				if err := os.Remove(cur); err != nil {
					t.Fatal(err)
				}
				writeExecutable(t, filepath.Join(cur, "stray"), "")
			}
			log := filepath.Join(t.TempDir(), "calls")
			systemctl := filepath.Join(t.TempDir(), "systemctl")
			activeCode := map[bool]int{true: 0, false: 3}[tc.active]
			writeExecutable(t, systemctl, fmt.Sprintf("#!/bin/sh\nprintf '%%s|' \"$*\" >>%s\n[ \"$1\" = is-active ] && exit %d\nexit 0\n", log, activeCode))
			env := []string{"KUBERNETES_SELECT_SYSTEMCTL=" + systemctl}
			r := kubernetesSelect(t, env, root, append([]string{"--restart-kubelet"}, tc.args...)...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d (%s), want %d", r.code, r.stderr, tc.wantCode)
			}
			calls, _ := os.ReadFile(log)
			if string(calls) != tc.wantCalls {
				t.Errorf("systemctl calls %q, want %q", calls, tc.wantCalls)
			}
		})
	}
}

func TestSelectUsage(t *testing.T) {
	root := t.TempDir()
	makeInstalledTree(t, root, []string{"1.21.14"})
	for _, tc := range []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{args: []string{"--help"}, wantCode: 0, wantStdout: "Usage: kubernetes-select"},
		{args: []string{}, wantCode: 2, wantStderr: "missing command"},
		{args: []string{"stage3", "1.21.14"}, wantCode: 2, wantStderr: "unknown command stage3"},
		{args: []string{"stage1"}, wantCode: 2, wantStderr: "needs exactly one VERSION"},
		{args: []string{"stage1", "v1.21.14"}, wantCode: 2, wantStderr: "must look like 1.21.14"},
		{args: []string{"--mode", "copy", "stage1", "1.21.14"}, wantCode: 2, wantStderr: "--mode must be symlink or bind"},
		{args: []string{"--frobnicate"}, wantCode: 2, wantStderr: "unknown option --frobnicate"},
		{args: []string{"list"}, wantCode: 0, wantStdout: "1.21.14 stage1 stage2\n"},
		{args: []string{"status"}, wantCode: 0, wantStdout: "stage1: none\nstage2: none\n"},
	} {
		r := kubernetesSelect(t, nil, root, tc.args...)
		if r.code != tc.wantCode || !strings.Contains(r.stdout, tc.wantStdout) || !strings.Contains(r.stderr, tc.wantStderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, r.code, r.stdout, r.stderr, tc.wantCode, tc.wantStdout, tc.wantStderr)
		}
	}
	if r := kubernetesSelect(t, nil, t.TempDir(), "status"); r.code != 1 || !strings.Contains(r.stderr, "is kubernetes-unversioned installed") {
		t.Errorf("empty root: exit %d, stderr %q", r.code, r.stderr)
	}
}
