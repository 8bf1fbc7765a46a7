package layout

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// runtimeSelect is the runtime-select that runtime-unversioned ships.
const runtimeSelect = "files/runtime-select"

// runtimeTree lays out under root what runtime-unversioned and the
// component packages install (three containerds: 1.7.35 as released,
// this project's patched 1.7.36 and 2.4.2; runc, crictl, cni), with
// fake binaries printing "fake <binary> <version>", without a package
// manager; and Debian's containerd at /usr/bin/containerd.
func runtimeTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, c := range []struct{ name, version, bin string }{
		{"containerd", "1.7.35", "containerd"}, {"containerd", "1.7.35", "containerd-shim-runc-v2"},
		{"containerd", "1.7.36+compat.1", "containerd"}, {"containerd", "1.7.36+compat.1", "containerd-shim-runc-v2"},
		{"containerd", "2.4.2", "containerd"}, {"containerd", "2.4.2", "containerd-shim-runc-v2"},
		{"runc", "1.5.3", "runc"}, {"crictl", "1.34.0", "crictl"}, {"crictl", "1.37.0", "crictl"}, {"cni", "1.10.0", "loopback"},
	} {
		packagingtest.WriteExecutable(t, filepath.Join(root, RuntimeRoot, c.name, c.version, "bin", c.bin),
			"#!/bin/sh\necho fake "+c.bin+" "+c.version+"\n")
	}
	assert.NilError(t, os.MkdirAll(filepath.Join(root, RuntimeCurrent), 0o755))
	packagingtest.WriteExecutable(t, filepath.Join(root, "usr/bin/containerd"), "#!/bin/sh\necho debian containerd 1.6.20\n")
	return root
}

func selectRuntime(t *testing.T, env []string, root string, args ...string) packagingtest.Result {
	t.Helper()
	if root != "" {
		args = append([]string{"--root", root}, args...)
	}
	return packagingtest.RunResult(t, env, "bash", append([]string{runtimeSelect}, args...)...)
}

// serves runs current/<component>/bin/<bin> and returns what it prints
// ("" when the selection serves nothing).
func serves(root, component, bin string) string {
	out, err := exec.Command(filepath.Join(root, RuntimeCurrent, component, "bin", bin)).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func dropIn(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "etc/systemd/system/containerd.service.d/50-runtime-select.conf"))
	if err != nil {
		return ""
	}
	return string(b)
}

// TestRuntimeSelect walks a node from Debian's containerd to the packaged
// ones and back: each selection serves its version through current/, the
// drop-in exists only while containerd or runc is selected here and
// points ExecStart at current/ only for containerd; Debian's
// /usr/bin/containerd is never touched; selecting again changes nothing.
func TestRuntimeSelect(t *testing.T) {
	root := runtimeTree(t)
	debian, err := os.ReadFile(filepath.Join(root, "usr/bin/containerd"))
	assert.NilError(t, err)
	for _, step := range []struct {
		args       []string
		wantOut    string
		containerd string // what current/containerd serves afterwards
		execStart  bool   // the drop-in sets ExecStart
		path       bool   // the drop-in sets PATH (exists)
	}{
		{args: []string{"containerd", "system"}, wantOut: "containerd: system already selected"},
		{args: []string{"containerd", "1.7.35"}, wantOut: "containerd: selected 1.7.35", containerd: "fake containerd 1.7.35", execStart: true, path: true},
		{args: []string{"containerd", "1.7.35"}, wantOut: "containerd: 1.7.35 already selected", containerd: "fake containerd 1.7.35", execStart: true, path: true},
		{args: []string{"containerd", "1.7.36+compat.1"}, wantOut: "containerd: selected 1.7.36+compat.1", containerd: "fake containerd 1.7.36+compat.1", execStart: true, path: true},
		{args: []string{"containerd", "2.4.2"}, wantOut: "containerd: selected 2.4.2", containerd: "fake containerd 2.4.2", execStart: true, path: true},
		{args: []string{"runc", "1.5.3"}, wantOut: "runc: selected 1.5.3", containerd: "fake containerd 2.4.2", execStart: true, path: true},
		{args: []string{"containerd", "system"}, wantOut: "containerd: selected system", execStart: false, path: true},
		{args: []string{"runc", "system"}, wantOut: "runc: selected system"},
		{args: []string{"crictl", "1.34.0"}, wantOut: "crictl: selected 1.34.0"},
	} {
		r := selectRuntime(t, nil, root, step.args...)
		assert.Assert(t, is.Equal(r.Code, 0), "%v: %s", step.args, r.Stderr)
		assert.Check(t, is.Equal(strings.TrimSpace(r.Stdout), step.wantOut), "%v", step.args)
		assert.Check(t, is.Equal(serves(root, "containerd", "containerd"), step.containerd), "%v", step.args)
		d := dropIn(root)
		assert.Check(t, is.Equal(strings.Contains(d, "ExecStart="+RuntimeCurrent+"/containerd/bin/containerd\n"), step.execStart), "%v: drop-in %q", step.args, d)
		assert.Check(t, is.Equal(strings.Contains(d, "Environment=\"PATH="+RuntimeCurrent+"/containerd/bin:"+RuntimeCurrent+"/runc/bin:"), step.path), "%v: drop-in %q", step.args, d)
		after, err := os.ReadFile(filepath.Join(root, "usr/bin/containerd"))
		assert.NilError(t, err)
		assert.Check(t, is.Equal(string(after), string(debian)), "Debian's containerd changed")
	}
	// /usr/bin/crictl of runtime-unversioned follows current/crictl.
	assert.Check(t, is.Equal(serves(root, "crictl", "crictl"), "fake crictl 1.34.0"))
	r := selectRuntime(t, nil, root, "status")
	assert.Check(t, is.Equal(r.Stdout, "containerd: system\nrunc: system\ncrictl: 1.34.0\ncni: system\n"))
	r = selectRuntime(t, nil, root, "list")
	assert.Check(t, is.Equal(r.Stdout, "containerd 1.7.35\ncontainerd 1.7.36+compat.1\ncontainerd 2.4.2\nrunc 1.5.3\ncrictl 1.34.0\ncrictl 1.37.0\ncni 1.10.0\n"))
	link, err := os.Readlink(filepath.Join(root, RuntimeCurrent, "crictl"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(link, "../crictl/1.34.0"), "relative, so it resolves the same under --root")
}

func TestRuntimeSelectRefuses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		prepare  func(t *testing.T, root string)
		noRoot   bool
		wantCode int
		wantErr  string
	}{
		{name: "not installed", args: []string{"containerd", "1.6.20"}, wantCode: 1, wantErr: "containerd 1.6.20 is not installed (no /usr/local/runtime/containerd/1.6.20/bin/containerd; install runtime-containerd-1.6.20)"},
		{name: "being removed", args: []string{"runc", "1.5.3"}, wantCode: 1, wantErr: "runc 1.5.3 is not installed",
			prepare: func(t *testing.T, root string) {
				assert.NilError(t, os.Chmod(filepath.Join(root, RuntimeRoot, "runc/1.5.3/bin/runc"), 0o644))
			}},
		{name: "a directory in the way", args: []string{"crictl", "1.34.0"}, wantCode: 1, wantErr: "is not a symlink",
			prepare: func(t *testing.T, root string) {
				assert.NilError(t, os.MkdirAll(filepath.Join(root, RuntimeCurrent, "crictl/bin"), 0o755))
			}},
		{name: "no current", args: []string{"status"}, wantCode: 1, wantErr: "is runtime-unversioned installed?",
			prepare: func(t *testing.T, root string) {
				assert.NilError(t, os.Remove(filepath.Join(root, RuntimeCurrent)))
			}},
		{name: "unknown component", args: []string{"docker", "1.0.0"}, wantCode: 2, wantErr: "unknown command docker"},
		{name: "bad version", args: []string{"runc", "v1.5.3"}, wantCode: 2, wantErr: "VERSION must look like 1.7.35 or 1.7.36+compat.1, or be system"},
		{name: "bad build metadata", args: []string{"containerd", "1.7.36+compat..1"}, wantCode: 2, wantErr: "VERSION must look like 1.7.35 or 1.7.36+compat.1, or be system, not 1.7.36+compat..1"},
		{name: "patched build not installed", args: []string{"containerd", "1.7.36+compat.2"}, wantCode: 1, wantErr: "containerd 1.7.36+compat.2 is not installed (no /usr/local/runtime/containerd/1.7.36+compat.2/bin/containerd; install runtime-containerd-1.7.36+compat.2)"},
		{name: "down from 2.x to 1.x while a task runs on a shim 2.x started", args: []string{"containerd", "1.7.36+compat.1"}, wantCode: 1,
			wantErr: "containerd 1.7.36+compat.1 cannot reach the task(s) containerd 2.4.2 started (their shims serve the task API v3 only; containerd/containerd#11720: their containers would be orphaned): k8s.io/c-new; restart those pods first",
			prepare: func(t *testing.T, root string) {
				assert.NilError(t, os.Symlink("../containerd/2.4.2", filepath.Join(root, RuntimeCurrent, "containerd")))
				tasks := filepath.Join(root, "run/containerd/io.containerd.runtime.v2.task/k8s.io")
				assert.NilError(t, os.MkdirAll(filepath.Join(tasks, "c-old"), 0o755))
				assert.NilError(t, os.WriteFile(filepath.Join(tasks, "c-old", "address"), []byte("unix:///run/containerd/s/old"), 0o644))
				assert.NilError(t, os.MkdirAll(filepath.Join(tasks, "c-new"), 0o755))
				assert.NilError(t, os.WriteFile(filepath.Join(tasks, "c-new", "bootstrap.json"), []byte(`{"version":3,"address":"unix:///run/containerd/s/new","protocol":"ttrpc"}`), 0o644))
			}},
		{name: "restart under --root", args: []string{"--restart-containerd", "runc", "1.5.3"}, wantCode: 2, wantErr: "use one or the other"},
		{name: "empty --root", noRoot: true, args: []string{"--root", "", "status"}, wantCode: 2, wantErr: "--root needs a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := runtimeTree(t)
			if tc.prepare != nil {
				tc.prepare(t, root)
			}
			selRoot := root
			if tc.noRoot {
				selRoot = ""
			}
			r := selectRuntime(t, nil, selRoot, tc.args...)
			assert.Check(t, is.Equal(r.Code, tc.wantCode), r.Stderr)
			assert.Check(t, is.Contains(r.Stderr, tc.wantErr))
			assert.Check(t, is.Equal(strings.Count(strings.TrimSpace(r.Stderr), "\n"), 0), "one line: %q", r.Stderr)
			assert.Check(t, is.Equal(dropIn(root), ""), "nothing written")
		})
	}
}

// fakeSystemctl logs its calls to <dir>/calls; "is-active" answers as
// active says, "restart" fails while <dir>/fail-restart holds a number
// above 0 (decremented on each failure).
func fakeSystemctl(t *testing.T, active bool, failRestarts int) (dir string) {
	t.Helper()
	dir = t.TempDir()
	state := "1"
	if active {
		state = "0"
	}
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "fail-restart"), []byte(strings.Repeat("x", failRestarts)), 0o644))
	packagingtest.WriteExecutable(t, filepath.Join(dir, "systemctl"), `#!/bin/sh
echo "$*" >>`+dir+`/calls
case "$1" in
is-active) exit `+state+` ;;
restart)
  f=`+dir+`/fail-restart
  n=$(cat "$f")
  if [ -n "$n" ]; then printf %s "${n#x}" >"$f"; exit 1; fi
  echo "restarted on $(cat `+dir+`/serving 2>/dev/null)" >>`+dir+`/calls ;;
esac
exit 0
`)
	return dir
}

// TestRuntimeSelectRestartsContainerd: --restart-containerd restarts an
// active containerd after a containerd or runc switch, never another
// one's; a restart that fails undoes the switch (link and drop-in) and
// restarts containerd on the previous selection, exiting 1. The script
// runs as on a node (no --root, which the option refuses), from a copy
// whose paths are under the test's root (onRoot), with a fake systemctl.
func TestRuntimeSelectRestartsContainerd(t *testing.T) {
	for _, tc := range []struct {
		name         string
		active       bool
		failRestarts int
		args         []string
		wantCode     int
		wantCalls    string
		wantServe    string
	}{
		{name: "active containerd is restarted", active: true, args: []string{"containerd", "2.4.2"},
			wantCalls: "is-active --quiet containerd|daemon-reload|restart containerd|", wantServe: "fake containerd 2.4.2"},
		{name: "runc restarts it too", active: true, args: []string{"runc", "1.5.3"},
			wantCalls: "is-active --quiet containerd|daemon-reload|restart containerd|", wantServe: "fake containerd 1.7.35"},
		{name: "inactive containerd stays stopped; systemd reloads the drop-in", active: false, args: []string{"containerd", "2.4.2"},
			wantCalls: "is-active --quiet containerd|daemon-reload|", wantServe: "fake containerd 2.4.2"},
		{name: "crictl leaves containerd alone", active: true, args: []string{"crictl", "1.37.0"}, wantServe: "fake containerd 1.7.35"},
		{name: "failed restart rolls back and restarts on the old one", active: true, failRestarts: 1, args: []string{"containerd", "2.4.2"}, wantCode: 1,
			wantCalls: "is-active --quiet containerd|daemon-reload|restart containerd|daemon-reload|restart containerd|", wantServe: "fake containerd 1.7.35"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := runtimeTree(t)
			script := onRoot(t, root)
			r := packagingtest.RunResult(t, nil, "bash", script, "containerd", "1.7.35")
			assert.Assert(t, is.Equal(r.Code, 0), r.Stderr)
			before := dropIn(root)
			sys := fakeSystemctl(t, tc.active, tc.failRestarts)
			r = packagingtest.RunResult(t, []string{"PATH=" + sys + ":" + os.Getenv("PATH")}, "bash", append([]string{script, "--restart-containerd"}, tc.args...)...)
			assert.Check(t, is.Equal(r.Code, tc.wantCode), r.Stderr)
			calls, _ := os.ReadFile(filepath.Join(sys, "calls"))
			got := strings.ReplaceAll(string(calls), "restarted on \n", "")
			assert.Check(t, is.Equal(strings.ReplaceAll(got, "\n", "|"), tc.wantCalls))
			assert.Check(t, is.Equal(serves(root, "containerd", "containerd"), tc.wantServe))
			if tc.wantCode != 0 {
				assert.Check(t, is.Contains(r.Stderr, "switch undone, it serves 1.7.35 as before"))
				assert.Check(t, is.Contains(r.Stderr, "containerd restarted on the previous selection"))
				assert.Check(t, is.Equal(dropIn(root), before), "the drop-in is rolled back")
			}
		})
	}
}

// onRoot returns a copy of runtime-select whose node paths are under root,
// so that it runs without --root (as on a node, where --restart-containerd
// is allowed) without touching the host's /usr/local or /etc.
func onRoot(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(runtimeSelect)
	assert.NilError(t, err)
	s := strings.NewReplacer(
		"readonly RUNTIME_DIR=/usr/local/runtime", "readonly RUNTIME_DIR="+root+"/usr/local/runtime",
		"readonly DROPIN_DIR=/etc/", "readonly DROPIN_DIR="+root+"/etc/",
		"readonly SYSTEMD_RUNNING=/run/systemd/system", "readonly SYSTEMD_RUNNING="+root,
	).Replace(string(b))
	assert.Check(t, s != string(b))
	p := filepath.Join(t.TempDir(), "runtime-select")
	assert.NilError(t, os.WriteFile(p, []byte(s), 0o755))
	return p
}

// TestRuntimeSelectRollsBack: a switch that fails half-way (the drop-in
// cannot be written) is undone: current/ and the drop-in are as before.
func TestRuntimeSelectRollsBack(t *testing.T) {
	root := runtimeTree(t)
	r := selectRuntime(t, nil, root, "containerd", "1.7.35")
	assert.Assert(t, is.Equal(r.Code, 0), r.Stderr)
	before := dropIn(root)
	fakes := t.TempDir()
	// mv fails for the drop-in only, after the link was switched.
	packagingtest.WriteExecutable(t, filepath.Join(fakes, "mv"), "#!/bin/sh\ncase \"$*\" in *50-runtime-select.conf) exit 1 ;; esac\nexec /bin/mv \"$@\"\n")
	r = selectRuntime(t, []string{"PATH=" + fakes + ":" + os.Getenv("PATH")}, root, "runc", "1.5.3")
	assert.Check(t, is.Equal(r.Code, 1))
	assert.Check(t, is.Contains(r.Stderr, "runc: switch undone, it serves system as before"))
	_, err := os.Lstat(filepath.Join(root, RuntimeCurrent, "runc"))
	assert.Check(t, os.IsNotExist(err), "current/runc left behind")
	assert.Check(t, is.Equal(dropIn(root), before))
	left, _ := filepath.Glob(filepath.Join(root, "etc/systemd/system/containerd.service.d/.*"))
	assert.Check(t, is.Len(left, 0), "temporaries left behind")
}

// TestRuntimeSelectLock: a run waits for the lock on current/ (taken by
// another run or a package's removal guard) and gives up after
// RUNTIME_SELECT_LOCK_TIMEOUT without changing anything.
func TestRuntimeSelectLock(t *testing.T) {
	root := runtimeTree(t)
	packagingtest.HoldLock(t, filepath.Join(root, RuntimeCurrent))
	r := selectRuntime(t, []string{"RUNTIME_SELECT_LOCK_TIMEOUT=1"}, root, "containerd", "1.7.35")
	assert.Check(t, is.Equal(r.Code, 1))
	assert.Check(t, is.Contains(r.Stderr, "still holds the lock on /usr/local/runtime/current after 1s; nothing changed"))
	assert.Check(t, is.Equal(serves(root, "containerd", "containerd"), ""))
}

// TestRuntimeSelectDownFrom2WithoutV3Shims: down from 2.x to 1.x is a
// switch like another while no task runs on a shim 2.x started (the
// tasks' bundles are 1.x's: an address file, no bootstrap.json).
func TestRuntimeSelectDownFrom2WithoutV3Shims(t *testing.T) {
	root := runtimeTree(t)
	assert.NilError(t, os.Symlink("../containerd/2.4.2", filepath.Join(root, RuntimeCurrent, "containerd")))
	tasks := filepath.Join(root, "run/containerd/io.containerd.runtime.v2.task/k8s.io/c-old")
	assert.NilError(t, os.MkdirAll(tasks, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(tasks, "address"), []byte("unix:///run/containerd/s/old"), 0o644))
	r := selectRuntime(t, nil, root, "containerd", "1.7.36+compat.1")
	assert.Equal(t, r.Code, 0, r.Stderr)
	assert.Check(t, is.Contains(r.Stdout, "containerd: selected 1.7.36+compat.1"))
}
