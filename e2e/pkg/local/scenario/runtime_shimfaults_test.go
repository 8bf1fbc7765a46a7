package scenario

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/shimgroups"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

func TestJudgeShimFault(t *testing.T) {
	stock := plan.ShimFaultRun{Fault: plan.PidsError, Runtime: plan.Runtime{Name: "containerd", Version: "1.7.35"}}
	ours := plan.ShimFaultRun{Fault: plan.PidsError, Runtime: plan.Runtime{Name: "containerd", Version: "1.7.36+compat.1"}, Keeps: true}
	made := report.Check{Passed: true, Detail: "containerd dropped the task as leaked"}
	missed := report.Check{Detail: "containerd's log says neither"}
	lost := func() *report.Run {
		return &report.Run{Pods: 10, Restarts: 1, Diff: snapshot.Diff{Pods: 10, Restarts: 1, RestartedPods: []string{"kc-e2e/web-000"}}}
	}
	for _, tc := range []struct {
		name    string
		run     *report.Run
		r       plan.ShimFaultRun
		made    report.Check
		passed  bool
		verdict string
	}{
		{name: "ours keeps every pod", run: &report.Run{Pods: 10}, r: ours, made: made, passed: true},
		{name: "ours loses a pod", run: lost(), r: ours, made: made},
		{name: "stock loses the pod, as it must", run: lost(), r: stock, made: made, passed: true,
			verdict: "shim fault pids-error: negative control: the containerd without the fix lost the pod, as it must: 1 restarts (kc-e2e/web-000), 0 pods recreated, 0 pod UIDs changed"},
		{name: "stock loses nothing", run: &report.Run{Pods: 10}, r: stock, made: made,
			verdict: "shim fault pids-error: negative control: the containerd without the fix lost nothing, so the fault cannot tell the fix: 0 restarts (), 0 pods recreated, 0 pod UIDs changed"},
		// A pod kept because the fault missed it is no evidence.
		{name: "ours, the fault not made", run: &report.Run{Pods: 10}, r: ours, made: missed,
			verdict: "shim fault pids-error: the fault was not made, so the run shows nothing: containerd's log says neither"},
		{name: "stock, the fault not made", run: lost(), r: stock, made: missed},
		{name: "no pods", run: &report.Run{}, r: stock, made: made, verdict: "shim fault pids-error: no pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judgeShimFault(tc.run, tc.r, tc.made)
			assert.Check(t, is.Equal(tc.run.Passed, tc.passed), tc.run.Verdict)
			if tc.verdict != "" {
				assert.Check(t, is.Equal(tc.run.Verdict, tc.verdict))
			}
		})
	}
}

func TestPidsFaultMade(t *testing.T) {
	victim := snapshot.Container{Pod: "kc-e2e/web-000", Name: "httpd", ID: "0123456789abcdef"}
	for _, tc := range []struct {
		name, line, detail string
		passed             bool
	}{
		{name: "kept (the fix)", passed: true,
			line:   `time="2026-12-07T10:00:00Z" level=warning msg="failed to query shim pids, keeping shim registered" error="exit status 1: container does not exist" id=0123456789abcdef namespace=k8s.io`,
			detail: "containerd kept the task: "},
		{name: "dropped (as released)", passed: true,
			line:   `time="2026-12-07T10:00:00Z" level=info msg="cleaning leaked shim process" id=0123456789abcdef namespace=k8s.io`,
			detail: "containerd dropped the task as leaked: "},
		{name: "loaded without a word", line: `time="2026-12-07T10:00:00Z" level=info msg="loading plugin" id=0123456789abcdef`,
			detail: `containerd's log says neither "failed to query shim pids, keeping shim registered" nor "cleaning leaked shim process" for the container`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pidsFaultMade(victim, []string{tc.line})
			assert.Check(t, is.Equal(c.Passed, tc.passed))
			assert.Check(t, is.Contains(c.Detail, tc.detail))
			assert.Check(t, is.Equal(c.Name, "the fault: containerd's start could not list the processes of kc-e2e/web-000/httpd (0123456789abc)"))
		})
	}
}

// TestFillAcceptQueue: a listener that does not accept (a stopped shim)
// completes connections until its queue is full; then a connect fails at
// once with EAGAIN, which is what a shim start's connect meets.
func TestFillAcceptQueue(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	assert.NilError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	assert.NilError(t, syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}))
	assert.NilError(t, syscall.Listen(fd, 0))

	conns, err := fillAcceptQueue(sock, 16)
	assert.NilError(t, err)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	assert.Check(t, len(conns) > 0 && len(conns) < 16, "%d connections", len(conns))
	_, err = net.DialTimeout("unix", sock, 100*time.Millisecond)
	assert.Check(t, errors.Is(err, syscall.EAGAIN), "%v", err)

	// A listener that accepts never fills: the fault cannot be made.
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "a"))
	assert.NilError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, err = fillAcceptQueue(l.Addr().String(), 8)
	assert.Check(t, is.ErrorContains(err, "never filled (8 connections): does its shim still accept?"))

	_, err = fillAcceptQueue(filepath.Join(t.TempDir(), "none"), 8)
	assert.Check(t, is.ErrorContains(err, "no such file or directory (after 0 connections)"))
}

func TestHideRuncState(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "0123456789abcdef")
	assert.NilError(t, os.MkdirAll(state, 0o700))
	assert.NilError(t, os.WriteFile(filepath.Join(state, "state.json"), []byte("{}"), 0o600))

	restore, err := hideRuncState(root, "0123456789abcdef")
	assert.NilError(t, err)
	_, err = os.Stat(filepath.Join(state, "state.json"))
	assert.Check(t, os.IsNotExist(err), "runc ps must not find it")
	assert.NilError(t, restore())
	assert.NilError(t, restore(), "restoring twice is restoring once")
	_, err = os.Stat(filepath.Join(state, "state.json"))
	assert.Check(t, err)

	_, err = hideRuncState(root, "gone")
	assert.Check(t, is.ErrorContains(err, "moving the runc state of gone aside"))
}

func TestLinesSince(t *testing.T) {
	log := filepath.Join(t.TempDir(), "containerd.log")
	assert.NilError(t, os.WriteFile(log, []byte("old did not accept a connection within 5s\n"), 0o644))
	offset, err := fileSize(log)
	assert.NilError(t, err)
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	assert.NilError(t, err)
	_, err = f.WriteString("other\nnew did not accept a connection within 5s\n")
	assert.NilError(t, err)
	assert.NilError(t, f.Close())
	lines, err := kubelet.LinesSince(log, offset, logShimKept)
	assert.NilError(t, err)
	assert.DeepEqual(t, lines, []string{"new did not accept a connection within 5s"})

	size, err := fileSize(filepath.Join(t.TempDir(), "none"))
	assert.NilError(t, err, "no log yet is an empty one")
	assert.Check(t, is.Equal(size, int64(0)))
}

func TestSandboxSocket(t *testing.T) {
	h := shimgroups.Host{FSRoot: t.TempDir(), TaskState: "/run/containerd/io.containerd.runtime.v2.task/k8s.io"}
	dir := filepath.Join(h.FSRoot, h.TaskState, "sb")
	assert.NilError(t, os.MkdirAll(dir, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "address"), []byte("unix:///run/containerd/s/0abc\n"), 0o644))
	got, err := sandboxSocket(h, "sb")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got, filepath.Join(h.FSRoot, "/run/containerd/s/0abc")))

	assert.NilError(t, os.WriteFile(filepath.Join(dir, "address"), []byte("0abc"), 0o644))
	_, err = sandboxSocket(h, "sb")
	assert.Check(t, is.ErrorContains(err, `the sandbox's address "0abc" is not a unix socket`))
}
