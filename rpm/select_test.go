package rpm

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// selectScript is the kubernetes-select that kubernetes-unversioned ships.
const selectScript = "../pkg/layout/files/kubernetes-select"

// makeInstalledTree lays out under root what the versioned packages and
// kubernetes-unversioned install, with fake binaries, without rpm.
func makeInstalledTree(t *testing.T, root string, versions []string) {
	t.Helper()
	harness := t.TempDir()
	packagingtest.FakeHarness(t, harness, versions)
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
	// nofail: a version erased without its scriptlets must not stop the boot.
	return fmt.Sprintf("%s/%s/%s %s/%s none bind,nofail 0 0", KubeRoot, version, stage, CurrentDir, stage)
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

// selectStep is one run of kubernetes-select in a walk along an upgrade
// path (runSelectSteps).
type selectStep struct {
	name       string
	args       []string
	wantCode   int
	wantStderr string // substring
	unchanged  bool   // the tree must stay exactly as it was
	stage1     string // versions served afterwards
	stage2     string
}

// runSelectSteps runs the steps in mode on root and checks each: its exit
// and error (one line), the tree, the versions both stages serve, the mode.
func runSelectSteps(t *testing.T, root, mode string, steps []selectStep) {
	t.Helper()
	for _, s := range steps {
		before := treeState(t, root)
		r := kubernetesSelect(t, nil, root, append([]string{"--mode", mode}, s.args...)...)
		if r.Code != s.wantCode || !strings.Contains(r.Stderr, s.wantStderr) {
			t.Fatalf("%s: %v: exit %d, stderr %q; want exit %d with %q", s.name, s.args, r.Code, r.Stderr, s.wantCode, s.wantStderr)
		}
		if r.Code != 0 && strings.Count(strings.TrimSpace(r.Stderr), "\n") > 0 {
			t.Errorf("%s: want a one-line error, got %q", s.name, r.Stderr)
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
}

// TestSelectSkewPolicyAndIdempotence walks one upgrade path in each mode.
func TestSelectSkewPolicyAndIdempotence(t *testing.T) {
	steps := []selectStep{
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
			root := installedTreeFor(t, mode, allVersions)
			runSelectSteps(t, root, mode, steps)
			status := kubernetesSelect(t, nil, root, "status")
			if want := fmt.Sprintf("stage1: 1.18.19 (%s)\nstage2: 1.18.19 (%s)\n", mode, mode); status.Stdout != want {
				t.Errorf("status = %q, want %q", status.Stdout, want)
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
		if r := kubernetesSelect(t, nil, root, "--mode", mode, "all", "1.21.14"); r.Code != 0 {
			t.Fatalf("--mode %s: exit %d: %s", mode, r.Code, r.Stderr)
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
	if r := kubernetesSelect(t, nil, root, "stage2", "1.20.15"); r.Code != 0 || !strings.Contains(r.Stdout, "(bind)") {
		t.Errorf("default mode: exit %d, stdout %q, want bind kept", r.Code, r.Stdout)
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
			root := installedTreeFor(t, tc.mode, allVersions)
			if r := kubernetesSelect(t, nil, root, "--mode", tc.mode, "all", "1.18.19"); r.Code != 0 {
				t.Fatalf("select: %s", r.Stderr)
			}
			if r := kubernetesSelect(t, nil, root, "stage1", "1.19.16"); r.Code != 0 {
				t.Fatalf("select: %s", r.Stderr)
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
			if r.Code != tc.wantCode || !strings.Contains(r.Stderr, tc.wantStderr) {
				t.Fatalf("switch while running: exit %d, stderr %q; want %d with %q", r.Code, r.Stderr, tc.wantCode, tc.wantStderr)
			}
			want := map[bool]string{true: "1.19.16", false: "1.18.19"}[tc.wantCode == 0]
			if got := selectedVersion(t, root, "stage2"); got != want {
				t.Errorf("stage2 serves %q, want %s", got, want)
			}
		})
	}
}

// nodeScript returns a copy of kubernetes-select that acts on the tree under
// root as it would on a node, without --root: --restart-kubelet is refused
// with --root, whatever the environment says. The copy differs from the
// shipped script in exactly three lines, the node's paths KUBE_DIR,
// ETC_FSTAB and SYSTEMD_RUNNING, which name the tree's instead (so the copy
// sees no systemd running, whatever the host runs). Its systemctl is
// whichever PATH finds first: the tests put a fake one there.
func nodeScript(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(selectScript)
	assert.NilError(t, err)
	node := map[string]string{ // the lines' values on a node, and in the tree
		"KUBE_DIR=" + KubeRoot:                filepath.Join(root, KubeRoot),
		"ETC_FSTAB=/etc/fstab":                filepath.Join(root, "etc/fstab"),
		"SYSTEMD_RUNNING=/run/systemd/system": filepath.Join(root, "run/systemd/system"),
	}
	lines := strings.Split(string(b), "\n")
	for assignment, tree := range node {
		n := 0
		for i, line := range lines {
			if line == "readonly "+assignment || strings.HasPrefix(line, "readonly "+assignment+" ") {
				name, _, _ := strings.Cut(assignment, "=")
				lines[i] = fmt.Sprintf("readonly %s=%q # the test's tree", name, tree)
				n++
			}
		}
		assert.Equal(t, n, 1, "lines of %s that read: readonly %s", selectScript, assignment)
	}
	copy := filepath.Join(t.TempDir(), "kubernetes-select")
	writeExecutable(t, copy, strings.Join(lines, "\n"))
	return copy
}

// kubernetesSelectOnNode runs nodeScript's copy for root with args.
func kubernetesSelectOnNode(t *testing.T, env []string, root string, args ...string) result {
	t.Helper()
	return runResult(t, env, "bash", append([]string{nodeScript(t, root)}, args...)...)
}

// systemctlFake is a systemctl for the front of PATH whose kubelet is a
// state file: is-active reads it, stop and start write it, as systemd does
// for its jobs whatever happens to the client afterwards. Every call is
// appended to the log, "|"-terminated.
type systemctlFake struct {
	dir, log, state string
}

// newSystemctlFake writes one. after holds shell code per verb (stop, start,
// daemon-reload), run after the state changed: "exit 1" fails the call,
// "pause" marks it (see paused) and waits until the test releases it
// (paused() + ".release", at most 20 s).
func newSystemctlFake(t *testing.T, active bool, after map[string]string) *systemctlFake {
	t.Helper()
	dir := t.TempDir()
	f := &systemctlFake{dir: dir, log: filepath.Join(dir, "calls"), state: filepath.Join(dir, "state")}
	f.setActive(t, active)
	script := fmt.Sprintf(`#!/bin/sh
LOG=%q STATE=%q MARK=%q
pause() { : >"$MARK"; n=0; while [ ! -e "$MARK.release" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done; }
printf '%%s|' "$*" >>"$LOG"
case "$1" in
is-active) [ "$(cat "$STATE")" = active ]; exit ;;
stop) echo inactive >"$STATE" ;;
start) echo active >"$STATE" ;;
esac
case "$1" in
stop) %s ;;
start) %s ;;
daemon-reload) %s ;;
esac
exit 0
`, f.log, f.state, filepath.Join(dir, "paused"), or(after["stop"], ":"), or(after["start"], ":"), or(after["daemon-reload"], ":"))
	writeExecutable(t, filepath.Join(dir, "systemctl"), script)
	return f
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (f *systemctlFake) setActive(t *testing.T, active bool) {
	t.Helper()
	assert.NilError(t, os.WriteFile(f.state, []byte(map[bool]string{true: "active\n", false: "inactive\n"}[active]), 0o644))
}

func (f *systemctlFake) active(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile(f.state)
	assert.NilError(t, err)
	return string(b) == "active\n"
}

func (f *systemctlFake) calls() string {
	b, _ := os.ReadFile(f.log)
	return string(b)
}

// paused is the file a "pause" creates once the call is under way.
func (f *systemctlFake) paused() string { return filepath.Join(f.dir, "paused") }

// TestSelectRestartsKubelet checks the systemctl calls around a stage2
// switch, with a fake systemctl on PATH.
func TestSelectRestartsKubelet(t *testing.T) {
	for _, tc := range []struct {
		name      string
		active    bool
		args      []string
		breakIt   string // "dir": refused before the switch; "mv": fails in it
		wantCode  int
		wantCalls string
		wantServe string // stage2 afterwards, if not 1.19.16
	}{
		{name: "active kubelet is stopped and started", active: true, args: []string{"stage2", "1.19.16"},
			wantCalls: "is-active --quiet kubelet|stop kubelet|daemon-reload|start kubelet|"},
		{name: "inactive kubelet stays stopped", active: false, args: []string{"stage2", "1.19.16"},
			wantCalls: "is-active --quiet kubelet|"},
		{name: "refused switch leaves the kubelet alone", active: true, args: []string{"stage2", "1.19.16"}, breakIt: "dir", wantCode: 1,
			wantServe: ""},
		{name: "failed switch starts it again on the old version", active: true, args: []string{"stage2", "1.19.16"}, breakIt: "mv", wantCode: 1,
			wantCalls: "is-active --quiet kubelet|stop kubelet|daemon-reload|start kubelet|", wantServe: "1.18.19"},
		{name: "stage1 leaves the kubelet alone", active: true, args: []string{"stage1", "1.20.15"}},
		{name: "no-op leaves the kubelet alone", active: true, args: []string{"stage2", "1.18.19"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			makeInstalledTree(t, root, allVersions)
			for _, args := range [][]string{{"all", "1.18.19"}, {"stage1", "1.19.16"}} {
				if r := kubernetesSelect(t, nil, root, args...); r.Code != 0 {
					t.Fatalf("setup %v: %s", args, r.Stderr)
				}
			}
			systemctl := newSystemctlFake(t, tc.active, nil)
			path := systemctl.dir
			switch tc.breakIt {
			case "dir":
				// A non-empty directory where the stage2 link should go.
				cur := filepath.Join(root, CurrentDir, "stage2")
				if err := os.Remove(cur); err != nil {
					t.Fatal(err)
				}
				writeExecutable(t, filepath.Join(cur, "stray"), "")
			case "mv":
				// The rename that switches stage2 fails.
				path += ":" + fakeCommands(t, map[string]string{"mv": "case \"$*\" in */current/stage2) exit 1 ;; esac\nexec \"$REAL_MV\" \"$@\"\n"})
			}
			env := []string{"PATH=" + path + ":" + os.Getenv("PATH")}
			r := kubernetesSelectOnNode(t, env, root, append([]string{"--restart-kubelet"}, tc.args...)...)
			if r.Code != tc.wantCode {
				t.Fatalf("exit %d (%s), want %d", r.Code, r.Stderr, tc.wantCode)
			}
			if calls := systemctl.calls(); calls != tc.wantCalls {
				t.Errorf("systemctl calls %q, want %q", calls, tc.wantCalls)
			}
			assert.Check(t, is.Equal(systemctl.active(t), tc.active), "kubelet active afterwards")
			if tc.wantCode != 0 && tc.args[0] == "stage2" {
				if got := selectedVersion(t, root, "stage2"); got != tc.wantServe {
					t.Errorf("stage2 serves %q, want %q", got, tc.wantServe)
				}
			}
		})
	}
}

// TestSelectKubeletAfterSignalsAndErrors interrupts a --restart-kubelet
// stage2 switch at every step from stopping the kubelet to starting it, with
// HUP, INT and TERM, and makes systemctl fail: every way out must leave the
// kubelet running on an intact selection, or say on stderr, exiting
// non-zero, that it did not start it. A signal to the script alone is what
// kill(1) or a timeout sends; to its process group, what a terminal sends
// (^C, hang-up). Either way systemd finishes the job that systemctl asked
// for, which the fake models by changing its state first.
func TestSelectKubeletAfterSignalsAndErrors(t *testing.T) {
	// Started under nohup, this process ignores SIGHUP and its children
	// would too (bash cannot trap a signal ignored on entry): catch it
	// here, so that the script starts with the default disposition, as
	// under an operator's shell.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	t.Cleanup(func() { signal.Stop(hup) }) // after the parallel subtests
	for _, tc := range []struct {
		name       string
		systemctl  map[string]string // shell run after each verb's state change
		slowLn     bool              // pause in the switch, after the new link is made
		signal     syscall.Signal    // sent once the pause is under way
		group      bool              // to the process group, not the script alone
		wantCode   int
		wantActive bool
		wantServe  string // stage2 afterwards
		wantStderr string
	}{
		{name: "TERM while systemctl stops the kubelet", systemctl: map[string]string{"stop": "pause"}, signal: syscall.SIGTERM,
			wantCode: 143, wantActive: true, wantServe: "1.18.19", wantStderr: "kubelet started again on stage2 1.18.19"},
		{name: "INT to the script while systemctl stops the kubelet", systemctl: map[string]string{"stop": "pause"}, signal: syscall.SIGINT,
			wantCode: 130, wantActive: true, wantServe: "1.18.19", wantStderr: "kubelet started again on stage2 1.18.19"},
		{name: "INT to the group while systemctl stops the kubelet", systemctl: map[string]string{"stop": "pause"}, signal: syscall.SIGINT, group: true,
			wantCode: 130, wantActive: true, wantServe: "1.18.19", wantStderr: "kubelet started again on stage2 1.18.19"},
		{name: "HUP to the group while systemctl stops the kubelet", systemctl: map[string]string{"stop": "pause"}, signal: syscall.SIGHUP, group: true,
			wantCode: 129, wantActive: true, wantServe: "1.18.19", wantStderr: "kubelet started again on stage2 1.18.19"},
		{name: "TERM in the switch", slowLn: true, signal: syscall.SIGTERM,
			wantCode: 143, wantActive: true, wantServe: "1.18.19", wantStderr: "kubelet started again on stage2 1.18.19"},
		{name: "TERM in daemon-reload after the switch", systemctl: map[string]string{"daemon-reload": "pause"}, signal: syscall.SIGTERM,
			wantCode: 143, wantActive: true, wantServe: "1.19.16", wantStderr: "kubelet started again on stage2 1.19.16"},
		{name: "INT to the group in daemon-reload after the switch", systemctl: map[string]string{"daemon-reload": "pause"}, signal: syscall.SIGINT, group: true,
			wantCode: 130, wantActive: true, wantServe: "1.19.16", wantStderr: "kubelet started again on stage2 1.19.16"},
		{name: "TERM while systemctl starts the kubelet", systemctl: map[string]string{"start": "pause"}, signal: syscall.SIGTERM,
			wantCode: 143, wantActive: true, wantServe: "1.19.16", wantStderr: "kubelet started again on stage2 1.19.16"},
		{name: "stop fails", systemctl: map[string]string{"stop": "exit 1"},
			wantCode: 1, wantActive: true, wantServe: "1.18.19", wantStderr: "kubelet started again on stage2 1.18.19"},
		{name: "start fails after the switch", systemctl: map[string]string{"start": `echo inactive >"$STATE"; exit 1`},
			wantCode: 1, wantActive: false, wantServe: "1.19.16", wantStderr: "kubelet not started"},
		{name: "start fails after a switch undone", slowLn: true, signal: syscall.SIGTERM, systemctl: map[string]string{"start": `echo inactive >"$STATE"; exit 1`},
			wantCode: 143, wantActive: false, wantServe: "1.18.19", wantStderr: "kubelet not started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits for its pauses, in a tree of its own
			root := t.TempDir()
			makeInstalledTree(t, root, allVersions)
			for _, args := range [][]string{{"all", "1.18.19"}, {"stage1", "1.19.16"}} {
				r := kubernetesSelect(t, nil, root, args...)
				assert.Equal(t, r.Code, 0, "setup %v: %s", args, r.Stderr)
			}
			systemctl := newSystemctlFake(t, true, tc.systemctl)
			path := systemctl.dir
			if tc.slowLn {
				path += ":" + fakeCommands(t, map[string]string{"ln": fmt.Sprintf("\"$REAL_LN\" \"$@\" || exit\n: >%[1]q\nn=0\nwhile [ ! -e %[1]q.release ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done\n", systemctl.paused())})
			}
			cmd := exec.Command("bash", nodeScript(t, root), "--restart-kubelet", "stage2", "1.19.16")
			cmd.Env = append(os.Environ(), "PATH="+path+":"+os.Getenv("PATH"))
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			assert.NilError(t, cmd.Start())
			t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			if tc.signal != 0 {
				waitForFile(t, systemctl.paused())
				pid := cmd.Process.Pid
				if tc.group {
					pid = -pid
				}
				assert.NilError(t, syscall.Kill(pid, tc.signal))
				// The paused command goes on only now: the signal is
				// delivered while it runs, however loaded the machine.
				assert.NilError(t, os.WriteFile(systemctl.paused()+".release", nil, 0o644))
			}
			err := cmd.Wait()
			code := 0
			if exitErr, ok := err.(*exec.ExitError); ok {
				code = exitErr.ExitCode()
			} else {
				assert.NilError(t, err)
			}
			assert.Check(t, is.Equal(code, tc.wantCode), "stdout %q, stderr %q, systemctl %q", stdout.String(), stderr.String(), systemctl.calls())
			assert.Check(t, is.Equal(systemctl.active(t), tc.wantActive), "kubelet active afterwards; stderr %q, systemctl %q", stderr.String(), systemctl.calls())
			assert.Check(t, is.Equal(selectedVersion(t, root, "stage2"), tc.wantServe))
			assert.Check(t, is.Contains(stderr.String(), tc.wantStderr))
			// The rule every case above instantiates.
			if !systemctl.active(t) {
				assert.Check(t, code != 0 && strings.Contains(stderr.String(), "kubelet not started"),
					"kubelet left stopped without a word: exit %d, stderr %q", code, stderr.String())
			}
			assertNoTemporaries(t, root)
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
		if r.Code != tc.wantCode || !strings.Contains(r.Stdout, tc.wantStdout) || !strings.Contains(r.Stderr, tc.wantStderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, r.Code, r.Stdout, r.Stderr, tc.wantCode, tc.wantStdout, tc.wantStderr)
		}
	}
	if r := kubernetesSelect(t, nil, t.TempDir(), "status"); r.Code != 1 || !strings.Contains(r.Stderr, "is kubernetes-unversioned installed") {
		t.Errorf("empty root: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// fakeCommands writes executables named after the map's keys into a new
// directory, for the front of PATH. In the scripts, REAL_<NAME> (upper
// case) is the real command's path.
func fakeCommands(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		real, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		writeExecutable(t, filepath.Join(dir, name),
			fmt.Sprintf("#!/bin/sh\nREAL_%s=%s\n%s", strings.ToUpper(name), real, body))
	}
	return dir
}

// startSelect starts kubernetes-select on root in the background; wait
// returns its result.
func startSelect(t *testing.T, env []string, root string, args ...string) (wait func() result) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{selectScript, "--root", root}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		err := cmd.Wait()
		r := result{Stdout: stdout.String(), Stderr: stderr.String()}
		if exitErr, ok := err.(*exec.ExitError); ok {
			r.Code = exitErr.ExitCode()
		} else if err != nil {
			r.Code = -1
		}
		done <- r
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return func() result {
		select {
		case r := <-done:
			return r
		case <-time.After(time.Minute):
			t.Fatalf("kubernetes-select %v did not finish", args)
			return result{}
		}
	}
}

// waitForFile waits until path exists.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Lstat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear", path)
}

// TestSelectConcurrentRuns runs a second switch while a first one is in
// the middle of its own: every run must do what it says.
// A slow `ln` (or `mv`, for /etc/fstab) holds the first run in its switch;
// the second starts once the first is there.
func TestSelectConcurrentRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  string
		slow  string   // the command that pauses the first run
		after bool     // pause after running it, not before
		first []string // arguments of the two runs
		then  []string
	}{
		// Pausing after ln: the new link exists under its temporary name.
		{name: "symlink mode, one stage", mode: "symlink", slow: "ln", after: true,
			first: []string{"--force", "stage1", "1.21.14"}, then: []string{"--force", "stage1", "1.20.15"}},
		// Pausing before mv: the new /etc/fstab is written, not yet renamed.
		{name: "bind mode, both stages keep their fstab line", mode: "bind", slow: "mv",
			first: []string{"--force", "stage1", "1.19.16"}, then: []string{"--force", "stage2", "1.19.16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := installedTreeFor(t, tc.mode, allVersions)
			if r := kubernetesSelect(t, nil, root, "--mode", tc.mode, "all", "1.18.19"); r.Code != 0 {
				t.Fatalf("setup: %s", r.Stderr)
			}
			marks := t.TempDir()
			real := fmt.Sprintf("\"$REAL_%s\" \"$@\" || exit\n", strings.ToUpper(tc.slow))
			pause := fmt.Sprintf(": >%s/$$\nsleep 1\n", marks)
			script := pause + real
			if tc.after {
				script = real + pause
			}
			slow := fakeCommands(t, map[string]string{tc.slow: script})
			env := []string{"PATH=" + slow + ":" + os.Getenv("PATH")}

			first := startSelect(t, env, root, tc.first...)
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if m, _ := filepath.Glob(filepath.Join(marks, "*")); len(m) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the first run never ran %s", tc.slow)
				}
			}
			second := startSelect(t, env, root, tc.then...)
			r1, r2 := first(), second()
			for i, r := range []result{r1, r2} {
				if r.Code != 0 || !strings.Contains(r.Stdout, "selected") {
					t.Errorf("run %d: exit %d, stdout %q, stderr %q; want both to succeed", i+1, r.Code, r.Stdout, r.Stderr)
				}
			}
			// The second run waited for the first, so its choice is what
			// stays, together with what the first chose for another stage.
			want := map[string]string{"stage1": "1.18.19", "stage2": "1.18.19"}
			for _, args := range [][]string{tc.first, tc.then} {
				want[args[len(args)-2]] = args[len(args)-1]
			}
			for stage, v := range want {
				if got := selectedVersion(t, root, stage); got != v {
					t.Errorf("%s serves %q, want %s", stage, got, v)
				}
			}
			checkMode(t, root, tc.mode, want)
			assertNoTemporaries(t, root)
		})
	}
}

// TestSelectLockTimeout: a run that cannot get the lock in time changes
// nothing and says why in one line.
func TestSelectLockTimeout(t *testing.T) {
	root := treeWith118Selected(t)
	holder := exec.Command("flock", filepath.Join(root, CurrentDir), "sleep", "30")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
		holder.Wait()
	})
	time.Sleep(200 * time.Millisecond)
	before := treeState(t, root)
	r := kubernetesSelect(t, []string{"KUBERNETES_SELECT_LOCK_TIMEOUT=1"}, root, "stage1", "1.19.16")
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if r.Code != 1 || !strings.Contains(lines[len(lines)-1], "another kubernetes-select") {
		t.Errorf("exit %d, stderr %q; want 1 and a line about another kubernetes-select", r.Code, r.Stderr)
	}
	if after := treeState(t, root); after != before {
		t.Errorf("tree changed:\nbefore %s\nafter  %s", before, after)
	}
	// Reading needs no lock.
	if r := kubernetesSelect(t, nil, root, "status"); r.Code != 0 {
		t.Errorf("status while locked: exit %d: %s", r.Code, r.Stderr)
	}
}

// TestSelectFailedBindRollsBack makes the bind mount fail in the middle of
// a stage2 switch: the old selection must still serve,
// untouched in /etc/fstab, and the kubelet is started again only when the
// stage it runs from is intact.
func TestSelectFailedBindRollsBack(t *testing.T) {
	requireRoot(t, "bind mode (mount --bind)")
	for _, tc := range []struct {
		name      string
		from      string // mode of the old selection
		failMount string // grep pattern of the mount calls that fail
		wantServe string // stage2 afterwards
		wantCalls string
		wantNote  string
	}{
		{name: "from symlink, mount fails", from: "symlink", failMount: ".",
			wantServe: "1.18.19", wantCalls: "is-active --quiet kubelet|stop kubelet|daemon-reload|start kubelet|",
			wantNote: "1.18.19"},
		{name: "from bind, new mount fails", from: "bind", failMount: "1\\.19\\.16",
			wantServe: "1.18.19", wantCalls: "is-active --quiet kubelet|stop kubelet|daemon-reload|start kubelet|",
			wantNote: "1.18.19"},
		{name: "from bind, the old one cannot come back", from: "bind", failMount: ".",
			wantServe: "", wantCalls: "is-active --quiet kubelet|stop kubelet|",
			wantNote: "not started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			t.Cleanup(func() { unmountUnder(t, root) })
			makeInstalledTree(t, root, allVersions)
			for _, args := range [][]string{{"--mode", tc.from, "all", "1.18.19"}, {"stage1", "1.19.16"}} {
				if r := kubernetesSelect(t, nil, root, args...); r.Code != 0 {
					t.Fatalf("setup %v: %s", args, r.Stderr)
				}
			}
			fstab := filepath.Join(root, "etc/fstab")
			fstabBefore, _ := os.ReadFile(fstab)
			failing := fakeCommands(t, map[string]string{"mount": fmt.Sprintf(
				"if printf '%%s\\n' \"$*\" | grep -q '%s'; then echo \"mount: $*: permission denied\" >&2; exit 32; fi\nexec \"$REAL_MOUNT\" \"$@\"\n",
				tc.failMount)})
			systemctl := newSystemctlFake(t, true, nil)
			env := []string{"PATH=" + systemctl.dir + ":" + failing + ":" + os.Getenv("PATH")}

			r := kubernetesSelectOnNode(t, env, root, "--restart-kubelet", "--mode", "bind", "stage2", "1.19.16")
			if r.Code != 1 || !strings.Contains(r.Stderr, "cannot bind-mount") || !strings.Contains(r.Stderr, tc.wantNote) {
				t.Errorf("exit %d, stderr %q; want 1, cannot bind-mount, %q", r.Code, r.Stderr, tc.wantNote)
			}
			if got := selectedVersion(t, root, "stage2"); got != tc.wantServe {
				t.Errorf("stage2 serves %q, want %q", got, tc.wantServe)
			}
			if tc.wantServe != "" {
				checkMode(t, root, tc.from, map[string]string{"stage1": "1.19.16", "stage2": tc.wantServe})
			}
			if fstabAfter, _ := os.ReadFile(fstab); string(fstabAfter) != string(fstabBefore) {
				t.Errorf("fstab changed:\n%s\nwas:\n%s", fstabAfter, fstabBefore)
			}
			if calls := systemctl.calls(); calls != tc.wantCalls {
				t.Errorf("systemctl calls %q, want %q", calls, tc.wantCalls)
			}
			assert.Check(t, is.Equal(systemctl.active(t), tc.wantServe != ""), "kubelet active afterwards")
			assertNoTemporaries(t, root)
		})
	}
}

// TestSelectRefusesRootWithRestart: --restart-kubelet acts on this host's
// systemd, which is not the --root tree's, and an empty --root would be
// the live system. Both are usage errors, before anything is touched,
// whatever the environment says: no variable lifts the refusal or names
// the systemctl to run.
func TestSelectRefusesRootWithRestart(t *testing.T) {
	root := treeWith118Selected(t)
	// The systemctl on PATH only logs: were the refusal missing, the host's
	// kubelet must still not be touched.
	log := filepath.Join(t.TempDir(), "calls")
	fake := fakeCommands(t, map[string]string{"systemctl": fmt.Sprintf("printf '%%s|' \"$*\" >>%s\nexit 0\n", log)})
	path := "PATH=" + fake + ":" + os.Getenv("PATH")
	// What the tests once set to lift the refusal: a stray one in production
	// must not.
	stray := "KUBERNETES_SELECT_SYSTEMCTL=" + filepath.Join(fake, "systemctl")
	for _, tc := range []struct {
		name       string
		env        []string
		args       []string
		wantStderr string
	}{
		{name: "--root then --restart-kubelet", args: []string{"--root", root, "--restart-kubelet", "stage2", "1.18.19"}, wantStderr: "--restart-kubelet"},
		{name: "--restart-kubelet then --root=", args: []string{"--restart-kubelet", "--root=" + root, "all", "1.19.16"}, wantStderr: "--restart-kubelet"},
		{name: "stray variable, no-op selection", env: []string{stray}, args: []string{"--root", root, "--restart-kubelet", "stage2", "1.18.19"}, wantStderr: "--restart-kubelet"},
		{name: "stray variable, a switch", env: []string{stray}, args: []string{"--restart-kubelet", "--root=" + root, "--force", "stage2", "1.19.16"}, wantStderr: "--restart-kubelet"},
		{name: "empty --root", args: []string{"--root", "", "status"}, wantStderr: "--root"},
		{name: "empty --root=", args: []string{"--root=", "list"}, wantStderr: "--root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(log)
			before := treeState(t, root)
			r := runResult(t, append([]string{path}, tc.env...), "bash", append([]string{selectScript}, tc.args...)...)
			assert.Check(t, is.Equal(r.Code, 2), "stdout %q, stderr %q", r.Stdout, r.Stderr)
			assert.Check(t, is.Contains(r.Stderr, tc.wantStderr))
			assert.Check(t, is.Equal(strings.Count(strings.TrimSpace(r.Stderr), "\n"), 0), "want one line: %q", r.Stderr)
			assert.Check(t, is.Equal(treeState(t, root), before), "the tree changed")
			calls, _ := os.ReadFile(log)
			assert.Check(t, is.Equal(string(calls), ""), "systemctl was called")
		})
	}
}

// TestSelectEditsSymlinkedFstab: some images link /etc/fstab elsewhere; the
// link must stay and its target be edited, resolved inside the root.
func TestSelectEditsSymlinkedFstab(t *testing.T) {
	const others = "# /etc/fstab\nUUID=1234 / ext4 defaults 0 1\n"
	for _, tc := range []struct {
		name, link, real string // real: the target, relative to the root
		mode             string
	}{
		{name: "relative link, symlink mode", link: "../data/fstab", real: "data/fstab", mode: "symlink"},
		{name: "absolute link, symlink mode", link: "/data/fstab", real: "data/fstab", mode: "symlink"},
		{name: "chain of links, bind mode", link: "fstab.d/../fstab.link", real: "data/fstab", mode: "bind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := installedTreeFor(t, tc.mode, allVersions)
			real := filepath.Join(root, tc.real)
			if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(root, "etc/fstab.d"), 0o755); err != nil {
				t.Fatal(err)
			}
			// A stale stage1 line, which symlink mode removes.
			if err := os.WriteFile(real, []byte(others+fstabLine("stage1", "1.18.19")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.name == "chain of links, bind mode" {
				if err := os.Symlink("/data/fstab", filepath.Join(root, "etc/fstab.link")); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(tc.link, filepath.Join(root, "etc/fstab")); err != nil {
				t.Fatal(err)
			}
			if r := kubernetesSelect(t, nil, root, "--mode", tc.mode, "all", "1.21.14"); r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			if target, err := os.Readlink(filepath.Join(root, "etc/fstab")); err != nil || target != tc.link {
				t.Errorf("/etc/fstab is no longer the link to %s: %q %v", tc.link, target, err)
			}
			b, _ := os.ReadFile(real)
			want := others
			if tc.mode == "bind" {
				want += fstabLine("stage1", "1.21.14") + "\n" + fstabLine("stage2", "1.21.14") + "\n"
			}
			if string(b) != want {
				t.Errorf("%s:\n%s\nwant:\n%s", tc.real, b, want)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(real), ".*")); len(leftovers) > 0 {
				t.Errorf("temporaries left behind: %v", leftovers)
			}
		})
	}
}

// TestSelectRemovesStaleTemporaries: a run killed with SIGKILL leaves its
// temporaries; the next run, holding the lock, removes them and nothing else.
func TestSelectRemovesStaleTemporaries(t *testing.T) {
	root := t.TempDir()
	makeInstalledTree(t, root, allVersions)
	stale := []string{
		filepath.Join(root, CurrentDir, ".stage1.kubernetes-select.Ab12Cd"),
		filepath.Join(root, "etc/.fstab.kubernetes-select.Ab12Cd"),
	}
	kept := filepath.Join(root, "etc/fstab.backup")
	if err := os.Symlink("../1.18.19/stage1", stale[0]); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stale[1], kept, filepath.Join(root, "etc/fstab")} {
		writeExecutable(t, p, "# fstab\n")
	}
	if r := kubernetesSelect(t, nil, root, "stage1", "1.18.19"); r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	for _, p := range stale {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("%s was removed: %v", kept, err)
	}
}

// treeWith118Selected is an installed tree of every version with 1.18.19
// selected for both stages.
func treeWith118Selected(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	makeInstalledTree(t, root, allVersions)
	if r := kubernetesSelect(t, nil, root, "all", "1.18.19"); r.Code != 0 {
		t.Fatalf("setup: %s", r.Stderr)
	}
	return root
}

func assertNoTemporaries(t *testing.T, root string) {
	t.Helper()
	if leftovers, _ := filepath.Glob(filepath.Join(root, CurrentDir, ".*")); len(leftovers) > 0 {
		t.Errorf("temporaries left behind: %v", leftovers)
	}
}

// installedTreeFor is an installed tree of versions for a test of mode: in
// bind mode it needs root and unmounts what the test mounted.
func installedTreeFor(t *testing.T, mode string, versions []string) string {
	t.Helper()
	if mode == "bind" {
		requireRoot(t, "bind mode (mount --bind)")
	}
	root := t.TempDir()
	t.Cleanup(func() { unmountUnder(t, root) })
	makeInstalledTree(t, root, versions)
	return root
}

// TestSelectPreRelease: a pre-release's directory (1.38.0-beta.0, as the
// matrix and the binaries spell it) is a version kubernetes-select
// selects, ordered before its release (1.38.0) and after the minor before;
// the skew rules hold across them.
func TestSelectPreRelease(t *testing.T) {
	steps := []selectStep{
		{name: "first selection", args: []string{"all", "1.37.2"}, stage1: "1.37.2", stage2: "1.37.2"},
		{name: "stage1 to the pre-release: one minor up", args: []string{"stage1", "1.38.0-beta.0"}, stage1: "1.38.0-beta.0", stage2: "1.37.2"},
		{name: "the release's kubelet is newer than the pre-release's kubeadm", args: []string{"stage2", "1.38.0"}, wantCode: 1,
			wantStderr: "refusing stage2 1.38.0: newer than stage1 1.38.0-beta.0", unchanged: true, stage1: "1.38.0-beta.0", stage2: "1.37.2"},
		{name: "stage2 to the pre-release", args: []string{"stage2", "1.38.0-beta.0"}, stage1: "1.38.0-beta.0", stage2: "1.38.0-beta.0"},
		{name: "again is a no-op", args: []string{"stage2", "1.38.0-beta.0"}, unchanged: true, stage1: "1.38.0-beta.0", stage2: "1.38.0-beta.0"},
		{name: "stage1 to the release", args: []string{"stage1", "1.38.0"}, stage1: "1.38.0", stage2: "1.38.0-beta.0"},
		{name: "stage2 to the release", args: []string{"stage2", "1.38.0"}, stage1: "1.38.0", stage2: "1.38.0"},
		{name: "kubeadm below the kubelet", args: []string{"stage1", "1.38.0-beta.0"}, wantCode: 1,
			wantStderr: "refusing stage1 1.38.0-beta.0: older than stage2 1.38.0", unchanged: true, stage1: "1.38.0", stage2: "1.38.0"},
		{name: "back to the pre-release", args: []string{"all", "1.38.0-beta.0"}, stage1: "1.38.0-beta.0", stage2: "1.38.0-beta.0"},
		{name: "back to the minor before", args: []string{"all", "1.37.2"}, stage1: "1.37.2", stage2: "1.37.2"},
		{name: "the package's Version is not a directory", args: []string{"stage1", "1.38.0~beta.0"}, wantCode: 2,
			wantStderr: "must look like 1.21.14", unchanged: true, stage1: "1.37.2", stage2: "1.37.2"},
	}
	for _, mode := range []string{"symlink", "bind"} {
		t.Run(mode, func(t *testing.T) {
			root := installedTreeFor(t, mode, []string{"1.37.2", "1.38.0-beta.0", "1.38.0"})
			runSelectSteps(t, root, mode, steps)
			list := kubernetesSelect(t, nil, root, "list")
			assert.Check(t, is.Equal(list.Stdout, "1.37.2 stage1 stage2\n1.38.0-beta.0 stage1 stage2\n1.38.0 stage1 stage2\n"))
		})
	}
}
