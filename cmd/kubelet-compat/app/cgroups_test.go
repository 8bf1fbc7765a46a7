package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/shimgroups"
	"github.com/kubelet-compat/kubelet-compat/pkg/taskcgroups"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// runcTask writes, under the fixture's host root, runc's state of a
// running container id (init process pid) and its devices and memory
// cgroups; out: its process is missing from the devices one.
func (f *fixture) runcTask(id string, pid int, out bool) string {
	f.t.Helper()
	root := f.hostRoot()
	devices := "/sys/fs/cgroup/devices/kubelet.slice/cri-containerd-" + id + ".scope"
	memory := "/sys/fs/cgroup/memory/kubelet.slice/cri-containerd-" + id + ".scope"
	held := strconv.Itoa(pid) + "\n"
	devProcs := held
	if out {
		devProcs = ""
	}
	f.write(filepath.Join(root, devices, "cgroup.procs"), devProcs)
	f.write(filepath.Join(root, memory, "cgroup.procs"), held)
	f.write(filepath.Join(root, "proc", strconv.Itoa(pid), "stat"), strconv.Itoa(pid)+" (pause) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 1 1\n")
	st, err := json.Marshal(map[string]interface{}{"id": id, "init_process_pid": pid, "init_process_start": 4242,
		"cgroup_paths": map[string]string{"devices": devices, "memory": memory}})
	assert.NilError(f.t, err)
	f.write(filepath.Join(root, taskcgroups.DefaultRuncRoot, id, "state.json"), string(st))
	return filepath.Join(root, devices, "cgroup.procs")
}

func (f *fixture) kubeProxyPod() {
	f.srv.Set([]cri.Sandbox{{ID: "sb-proxy", Name: "kube-proxy-7sh5b", Namespace: "kube-system", UID: "u1", Ready: true},
		{ID: "sb-web", Name: "web-0", Namespace: "default", UID: "u2", Ready: true}},
		[]cri.Container{{ID: "c-proxy", SandboxID: "sb-proxy", Name: "kube-proxy", State: cri.ContainerRunning}})
}

func TestCgroups(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.kubeProxyPod()
	assert.Equal(t, f.run("cgroups"), ExitOK, f.stderr.String())
	assert.Check(t, is.Equal(f.stdout.String(), "no running container is out of the cgroups runc gave it\n"))

	procs := f.runcTask("sb-proxy", 331, true)
	f.runcTask("sb-web", 585, false)
	f.runcTask("c-proxy", 700, false)
	assert.Equal(t, f.run("cgroups"), ExitKept)
	assert.Check(t, is.Equal(f.stdout.String(), "out: kube-system/kube-proxy-7sh5b sandbox sb-proxy: process 331 out of its devices cgroup\n"))
	assertOneErrorLine(t, f.stderr.String(), "1 container(s) out of their cgroups: containerd 1.7 or later would kill their pods at its start (kubelet-compat cgroups --repair puts them back)")

	assert.Equal(t, f.run("cgroups", "--repair"), ExitOK, f.stderr.String())
	assert.Check(t, is.Equal(f.stdout.String(), "put back: kube-system/kube-proxy-7sh5b sandbox sb-proxy: process 331 out of its devices cgroup\n"))
	data, err := os.ReadFile(procs)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(data), "331"))
	assert.Equal(t, f.run("cgroups"), ExitOK)
}

// TestPreflightRuntimeRefusesContainersOutOfTheirCgroups: containerd 1.7
// or later would kill these pods at its start; preflight names them.
func TestPreflightRuntimeRefusesContainersOutOfTheirCgroups(t *testing.T) {
	f := newFixture(t, cri.APIv1, cri.APIv1alpha2)
	f.srv.SetVersion("containerd", "1.6.20~ds1")
	f.kubeProxyPod()
	f.runcTask("sb-proxy", 331, true)
	f.runcTask("c-proxy", 700, true)
	args := []string{"preflight", "--node", "--from", "v1.30.14", "--to", "v1.31.14"}
	// On the node's own runtime (no containerd restart), nothing to say.
	assert.Equal(t, f.run(args...), ExitOK, f.stderr.String())
	// Containerd 1.6 kills no shim as leaked.
	assert.Equal(t, f.run(append(args, "--runtime", "containerd@1.6.36")...), ExitOK, f.stderr.String())
	assert.Equal(t, f.run(append(args, "--runtime", "containerd@1.7.35")...), ExitError)
	assertOneErrorLine(t, f.stderr.String(), "runtime: containerd@1.7.35 would kill 1 pod(s) at its start, whose shim reports no process (a container out of its cgroups; kubelet-compat cgroups): kube-system/kube-proxy-7sh5b; put them back first: kubelet-compat cgroups --repair")
	assert.Check(t, is.Equal(f.stdout.String(), ""))

	assert.Equal(t, f.run("cgroups", "--repair"), ExitOK, f.stderr.String())
	assert.Equal(t, f.run(append(args, "--runtime", "containerd@1.7.35")...), ExitOK, f.stderr.String())
	assert.Check(t, is.Contains(f.stdout.String(), "note: runtime: no running container is out of its cgroups or away from its shim's address: containerd@1.7.35 kills no shim as leaked at its start"))
}

// shimTask gives the runc task id (init pid) a shim process holding a
// listening socket named sock and a bundle naming that address; bound:
// the file at sock is that socket's (one shim per pod), else the file was
// removed and no socket took its place.
func (f *fixture) shimTask(id string, pid, shim int, sock string, bound bool) {
	f.t.Helper()
	root := f.hostRoot()
	f.write(filepath.Join(root, "proc", strconv.Itoa(pid), "stat"), strconv.Itoa(pid)+" (pause) S "+strconv.Itoa(shim)+" 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 1 1\n")
	inode := strconv.Itoa(shim)
	fd := filepath.Join(root, "proc", strconv.Itoa(shim), "fd")
	assert.NilError(f.t, os.MkdirAll(fd, 0o755))
	assert.NilError(f.t, os.Symlink("socket:["+inode+"]", filepath.Join(fd, "3")))
	l := shimgroups.Listener{Inode: inode, Name: sock}
	if bound {
		f.write(filepath.Join(root, sock), "")
		fi, err := os.Stat(filepath.Join(root, sock))
		assert.NilError(f.t, err)
		l.VFSInode = fi.Sys().(*syscall.Stat_t).Ino
	}
	f.listeners = append(f.listeners, l)
	f.write(filepath.Join(root, shimgroups.DefaultTaskState, id, "address"), "unix://"+sock)
}

// TestPreflightRuntimeRefusesSplitShimGroups: a pod whose sandbox's shim
// lost the pod's socket to another shim; containerd 1.7 or later would
// kill it at its start, preflight names it.
func TestPreflightRuntimeRefusesSplitShimGroups(t *testing.T) {
	f := newFixture(t, cri.APIv1, cri.APIv1alpha2)
	f.srv.SetVersion("containerd", "1.7.35")
	f.kubeProxyPod()
	f.runcTask("sb-web", 585, false)
	f.shimTask("sb-web", 585, 580, "/run/containerd/s/web", true)
	f.srv.SetConfig(runcV2Config)
	args := []string{"preflight", "--node", "--from", "v1.30.14", "--to", "v1.31.14", "--runtime", "containerd@2.0.14"}
	assert.Equal(t, f.run(args...), ExitOK, f.stderr.String())

	f.runcTask("sb-proxy", 331, false)
	f.shimTask("sb-proxy", 331, 330, "/run/containerd/s/proxy", false)
	assert.Equal(t, f.run(args...), ExitError)
	assertOneErrorLine(t, f.stderr.String(), "runtime: containerd@2.0.14 would kill 1 pod(s) at its start, whose shim no longer answers at its bundle's address (the pod's shim split in two): kube-system/kube-proxy-7sh5b (sandbox sb-proxy of kube-system/kube-proxy-7sh5b: its shim (pid 330) does not listen at unix:///run/containerd/s/proxy, nothing does); restart them first: nothing joins their shims again")
	// cgroups (which the fleet's Job runs with --repair right before containerd
	// restarts) names it too, and cannot repair it.
	for _, repair := range [][]string{{"cgroups"}, {"cgroups", "--repair"}} {
		assert.Equal(t, f.run(repair...), ExitKept)
		assert.Check(t, is.Equal(f.stdout.String(), "no running container is out of the cgroups runc gave it\n"+
			"away from its shim's address: sandbox sb-proxy of kube-system/kube-proxy-7sh5b: its shim (pid 330) does not listen at unix:///run/containerd/s/proxy, nothing does\n"))
		assertOneErrorLine(t, f.stderr.String(), "1 pod(s) whose shim no longer answers at its bundle's address (its shim group split in two): containerd 1.7 or later would kill them at its start; restart them first, nothing joins their shims again: kube-system/kube-proxy-7sh5b")
	}
	// Containerd 1.6 kills no shim as leaked (a node on 1.6 going to a
	// later 1.6).
	f.srv.SetVersion("containerd", "1.6.20~ds1")
	assert.Equal(t, f.run(append(args[:len(args)-1], "containerd@1.6.36")...), ExitOK, f.stderr.String())
}

// TestCgroupsTakesAnInitBelowItsCgroupForIn: a container whose first
// process moved into a cgroup below its own (systemd as PID 1 or
// Docker-in-Docker in a privileged CI pod) is not out: runc ps, which
// containerd asks, walks the cgroups below. Neither cgroups nor preflight
// --runtime names it, and --repair does not write the tenant's PID 1 back.
func TestCgroupsTakesAnInitBelowItsCgroupForIn(t *testing.T) {
	f := newFixture(t, cri.APIv1, cri.APIv1alpha2)
	f.srv.SetVersion("containerd", "1.6.20~ds1")
	f.kubeProxyPod()
	procs := f.runcTask("sb-web", 585, true)
	f.write(filepath.Join(filepath.Dir(procs), "init.scope", "cgroup.procs"), "585\n")

	assert.Equal(t, f.run("cgroups"), ExitOK, f.stderr.String())
	assert.Check(t, is.Equal(f.stdout.String(), "no running container is out of the cgroups runc gave it\n"))
	assert.Equal(t, f.run("preflight", "--node", "--from", "v1.30.14", "--to", "v1.31.14", "--runtime", "containerd@1.7.35"), ExitOK, f.stderr.String())
	assert.Equal(t, f.run("cgroups", "--repair"), ExitOK, f.stderr.String())
	data, err := os.ReadFile(procs)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(data), ""))
}
