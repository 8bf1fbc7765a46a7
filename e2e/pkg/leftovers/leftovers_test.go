package leftovers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cgroups"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/fakehost"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/iptables"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/rootdir"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs/fakeproc"
	"gotest.tools/v3/assert"
)

const since = 1000

// world is a fake machine in temporary directories, with what a killed
// run left and what belongs to others.
type world struct {
	t                                          *testing.T
	tmp, root, proc, cg, sysctl, sockDir, logs string
	mounted                                    map[string]bool
	links                                      map[string]bool
	signals                                    []string
	ipt                                        map[string]map[string][]string // bin -> table -> rules now
	iptCmds                                    []string
	conntrack                                  []string // entries now
	ctCmds                                     []string
	st                                         journal.State
}

func newWorld(t *testing.T) *world {
	tmp := t.TempDir()
	w := &world{t: t, tmp: tmp, proc: filepath.Join(tmp, "proc"), cg: filepath.Join(tmp, "cgroup"), sysctl: filepath.Join(tmp, "sys"),
		sockDir: filepath.Join(tmp, "run-containerd-s"), logs: filepath.Join(tmp, "log-pods"), mounted: map[string]bool{}, links: map[string]bool{}}
	var err error
	w.root, err = rootdir.Claim(filepath.Join(tmp, "e2e-root"))
	assert.NilError(t, err)
	for _, d := range []string{w.proc, w.sockDir, w.logs, filepath.Join(w.sysctl, "kernel"), filepath.Join(w.sysctl, "vm")} {
		assert.NilError(t, os.MkdirAll(d, 0o755))
	}
	fakeproc.BootID(t, w.proc, "boot-1")
	state := filepath.Join(w.root, "containerd", "state")
	sock := filepath.Join(w.root, "containerd", "containerd.sock")
	w.st = journal.State{Format: journal.Format, Root: w.root, BootID: "boot-1", Since: since,
		Containerd: &journal.Containerd{State: state, Socket: sock}}

	// Processes: the run's kubelet (recorded), a recycled PID, strangers.
	fakeproc.Write(t, w.proc, fakeproc.Proc{PID: 100, PPID: 1, Start: 1100, Args: []string{"kubelet"}})
	fakeproc.Write(t, w.proc, fakeproc.Proc{PID: 101, PPID: 1, Start: 5000, Args: []string{"containerd"}}) // recorded with start 1050
	fakeproc.Write(t, w.proc, fakeproc.Proc{PID: 102, PPID: 1, Start: 1200, Args: []string{"tail", "-f", sock}})
	w.st.Processes = []journal.Process{{Seq: 1, Name: "containerd", Binary: "containerd", ID: procfs.ID{PID: 101, StartTicks: 1050}},
		{Seq: 2, Name: "kubelet", Binary: "kubelet", ID: procfs.ID{PID: 100, StartTicks: 1100}}}

	// A shim of ours with two containers; the system containerd's shim.
	shim := func(pid int, address, id string) {
		fakeproc.Write(t, w.proc, fakeproc.Proc{PID: pid, PPID: 1, Start: 1300, Args: []string{"containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", id, "-address", address}})
	}
	shim(200, sock, "sb1")
	shim(201, "/run/containerd/containerd.sock", "sb1")
	for id, init := range map[string]int{"sb1": 300, "c1": 301} {
		fakeproc.Write(t, w.proc, fakeproc.Proc{PID: init, PPID: 200, Start: 1400, Args: []string{"pause"}, Cgroups: []string{"/kubepods/besteffort/pod1/" + id}})
		dir := filepath.Join(state, "io.containerd.runtime.v2.task", "k8s.io", id)
		assert.NilError(t, os.MkdirAll(dir, 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "shim.pid"), []byte("200"), 0o644))
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "init.pid"), []byte(strconv.Itoa(init)), 0o644))
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "address"), []byte("unix://"+filepath.Join(w.sockDir, "s-"+id)), 0o644))
	}
	for _, s := range []string{"s-sb1", "s-c1", "s-others"} {
		w.socket(filepath.Join(w.sockDir, s))
	}
	w.st.ShimSockets = []string{"unix://" + filepath.Join(w.sockDir, "s-sb1")}

	// Mounts: under the root (ours), elsewhere (not).
	for _, m := range []string{filepath.Join(state, "t", "sb1", "rootfs"), filepath.Join(w.root, "kubelet", "pods", "x", "volumes", "tmpfs"), "/var/lib/docker/overlay"} {
		w.mounted[m] = true
	}

	w.links["kce2e0"], w.links["docker0"] = true, true
	w.st.Bridge = "kce2e0"
	w.st.Subnet = "10.217.77.0/24"
	w.conntrack = []string{"tcp 6 91 TIME_WAIT src=10.217.77.1 dst=10.217.77.7", "tcp 6 91 ESTABLISHED src=192.0.2.1 dst=192.0.2.2"}

	before := []string{"-P INPUT ACCEPT", "-N DOCKER", "-A INPUT -j DOCKER"}
	w.ipt = map[string]map[string][]string{"iptables": {
		"filter": append(append([]string{}, before...), "-N KUBE-FIREWALL", "-N OTHER", "-A INPUT -j KUBE-FIREWALL", "-A INPUT -j OTHER", "-A KUBE-FIREWALL -j DROP"),
		"nat":    {"-P PREROUTING ACCEPT"}, "mangle": {"-P PREROUTING ACCEPT"}}}
	w.st.Iptables = []journal.Iptables{{Binary: "iptables", Before: iptables.Rules{"filter": before, "nat": {"-P PREROUTING ACCEPT"}, "mangle": {"-P PREROUTING ACCEPT"}}}}

	// cgroups: v1, kubepods created by the run in memory, existed in pids.
	for _, d := range []string{"memory/kubepods/besteffort/pod1/sb1", "pids/kubepods"} {
		assert.NilError(t, os.MkdirAll(filepath.Join(w.cg, d), 0o755))
	}
	w.st.Cgroups = &cgroups.Recorded{Mode: cgroups.V1, Name: "kubepods", Created: []string{filepath.Join(w.cg, "memory", "kubepods")}}

	for name, v := range map[string]string{"kernel/panic": "10", "vm/overcommit_memory": "1", "kernel/panic_on_oops": "0"} {
		assert.NilError(t, os.WriteFile(filepath.Join(w.sysctl, name), []byte(v+"\n"), 0o644))
	}
	w.st.Sysctls = []journal.Sysctl{{Name: "kernel.panic", Before: "0"}, {Name: "vm.overcommit_memory", Before: "0"}, {Name: "kernel.panic_on_oops", Before: "0"}}

	for _, d := range []string{"kc-e2e_old_1", "kc-e2e_web-0_2", "other_web_3"} {
		assert.NilError(t, os.MkdirAll(filepath.Join(w.logs, d), 0o755))
	}
	for _, f := range []string{"kubelet.sock", "DEPRECATION"} {
		assert.NilError(t, os.WriteFile(filepath.Join(w.logs, f), nil, 0o644))
	}
	w.st.Files = []journal.Glob{{Pattern: filepath.Join(w.logs, "kc-e2e_*"), Before: []string{filepath.Join(w.logs, "kc-e2e_old_1")}},
		{Pattern: filepath.Join(w.logs, "kubelet.sock")}, {Pattern: filepath.Join(w.logs, "DEPRECATION"), Before: []string{filepath.Join(w.logs, "DEPRECATION")}}}

	made, used := filepath.Join(tmp, "made", "sub"), filepath.Join(tmp, "used")
	assert.NilError(t, os.MkdirAll(made, 0o755))
	assert.NilError(t, os.MkdirAll(used, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(used, "someone"), nil, 0o644))
	w.st.Dirs = []string{filepath.Dir(made), made, used}
	return w
}

func (w *world) socket(p string) {
	assert.NilError(w.t, syscall.Mknod(p, syscall.S_IFSOCK|0o600, 0))
}

func (w *world) host() Host {
	return Host{
		Proc: procfs.FS{Root: w.proc},
		Signal: func(id procfs.ID, sig syscall.Signal) error {
			if !(procfs.FS{Root: w.proc}).Alive(id) {
				return procfs.ErrNotSame
			}
			w.signals = append(w.signals, fmt.Sprintf("%d:%d", id.PID, sig))
			fakeproc.Remove(w.t, w.proc, id.PID)
			return nil
		},
		Iptables: func(_ context.Context, bin string, args ...string) ([]byte, error) {
			if args[len(args)-1] == "-S" {
				return []byte(strings.Join(w.ipt[bin][args[3]], "\n")), nil
			}
			w.iptCmds = append(w.iptCmds, bin+" "+strings.Join(args[2:], " "))
			return nil, nil
		},
		Conntrack: func(_ context.Context, bin string, args ...string) ([]byte, error) {
			w.ctCmds = append(w.ctCmds, strings.Join(args, " "))
			var match, keep []string
			for _, e := range w.conntrack {
				if (args[1] == "-s" && strings.Contains(e, "src=10.217.77.")) || (args[1] == "-d" && strings.Contains(e, "dst=10.217.77.")) {
					match = append(match, e)
				} else {
					keep = append(keep, e)
				}
			}
			if args[0] == "-D" {
				w.conntrack = keep
			}
			return []byte(strings.Join(match, "\n")), nil
		},
		Cgroups: cgroups.Host{Root: w.cg, Proc: procfs.FS{Root: w.proc}, Kill: func(pid int) error { return errors.New("unexpected kill") },
			Rmdir: os.Remove},
		SysctlDir: w.sysctl,
		Mounts: func(dir string) ([]string, error) {
			var out []string
			for m := range w.mounted {
				if m == dir || strings.HasPrefix(m, dir+"/") {
					out = append(out, m)
				}
			}
			sort.Strings(out)
			return out, nil
		},
		Unmount:       func(mp string) error { delete(w.mounted, mp); return nil },
		LinkExists:    func(name string) bool { return w.links[name] },
		DeleteLink:    func(_ context.Context, name string) error { delete(w.links, name); return nil },
		NetnsDirs:     []string{filepath.Join(w.tmp, "netns")},
		ShimSocketDir: w.sockDir,
		FileDirs:      []string{w.logs},
		Grace:         time.Second,
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestUndoExactlyWhatTheJournalLists(t *testing.T) {
	w := newWorld(t)
	var log strings.Builder
	h := w.host()
	h.Log = &log
	err := Undo(context.Background(), w.st, h)
	t.Log(log.String())
	assert.NilError(t, err)

	// The kubelet by PID and start time (SIGTERM is enough); the recycled
	// PID 101 and the stranger 102 untouched; the containers, then our
	// shim; not the system containerd's shim 201.
	assert.DeepEqual(t, w.signals, []string{"100:15", "300:9", "301:9", "200:9"})
	for _, pid := range []int{101, 102, 201} {
		assert.Assert(t, exists(filepath.Join(w.proc, strconv.Itoa(pid))), "pid %d", pid)
	}
	assert.DeepEqual(t, w.mounted, map[string]bool{"/var/lib/docker/overlay": true})
	assert.Assert(t, !exists(filepath.Join(w.sockDir, "s-sb1")) && !exists(filepath.Join(w.sockDir, "s-c1")))
	assert.Assert(t, exists(filepath.Join(w.sockDir, "s-others")))
	assert.DeepEqual(t, w.links, map[string]bool{"docker0": true})
	assert.DeepEqual(t, w.ctCmds, []string{"-L -s 10.217.77.0/24", "-D -s 10.217.77.0/24", "-L -d 10.217.77.0/24"})
	assert.DeepEqual(t, w.conntrack, []string{"tcp 6 91 ESTABLISHED src=192.0.2.1 dst=192.0.2.2"})
	assert.DeepEqual(t, w.iptCmds, []string{"iptables -t filter -D KUBE-FIREWALL -j DROP", "iptables -t filter -D INPUT -j KUBE-FIREWALL", "iptables -t filter -X KUBE-FIREWALL"})
	assert.Assert(t, !exists(filepath.Join(w.cg, "memory", "kubepods")))
	assert.Assert(t, exists(filepath.Join(w.cg, "pids", "kubepods")))
	for name, want := range map[string]string{"kernel/panic": "0", "vm/overcommit_memory": "0", "kernel/panic_on_oops": "0\n"} {
		b, err := os.ReadFile(filepath.Join(w.sysctl, name))
		assert.NilError(t, err)
		assert.Equal(t, string(b), want, name)
	}
	assert.Assert(t, !exists(filepath.Join(w.logs, "kc-e2e_web-0_2")))
	assert.Assert(t, exists(filepath.Join(w.logs, "kc-e2e_old_1")), "a pod log that existed before the run")
	assert.Assert(t, exists(filepath.Join(w.logs, "other_web_3")))
	assert.Assert(t, !exists(filepath.Join(w.logs, "kubelet.sock")), "an exact path the run made")
	assert.Assert(t, exists(filepath.Join(w.logs, "DEPRECATION")), "an exact path that existed before")
	assert.Assert(t, !exists(filepath.Join(w.tmp, "made")))
	assert.Assert(t, exists(filepath.Join(w.tmp, "used", "someone")))
	assert.Assert(t, !exists(w.root), "the root is still there")

	// Undoing twice is harmless: the root (and journal) are gone.
	w.signals, w.iptCmds = nil, nil
	assert.NilError(t, Undo(context.Background(), w.st, h))
	assert.Equal(t, len(w.signals), 0)
}

func TestUndoKeepsTheRootWhenAStepFails(t *testing.T) {
	w := newWorld(t)
	h := w.host()
	h.DeleteLink = func(context.Context, string) error { return errors.New("device busy") }
	err := Undo(context.Background(), w.st, h)
	assert.Assert(t, err != nil && strings.Contains(err.Error(), "device busy"), "%v", err)
	assert.Assert(t, exists(w.root), "the root (and the journal a retry needs) was removed")
	// The other steps ran anyway.
	assert.Assert(t, !exists(filepath.Join(w.cg, "memory", "kubepods")))
	assert.Equal(t, len(w.iptCmds), 3)
}

func TestUndoAfterAReboot(t *testing.T) {
	w := newWorld(t)
	fakeproc.BootID(t, w.proc, "boot-2")
	// After a reboot the PIDs are someone else's.
	h := w.host()
	assert.NilError(t, Undo(context.Background(), w.st, h))
	assert.Equal(t, len(w.signals), 0)
	assert.Equal(t, len(w.iptCmds), 0)
	assert.Assert(t, exists(filepath.Join(w.cg, "memory", "kubepods")))
	assert.Assert(t, !exists(filepath.Join(w.logs, "kc-e2e_web-0_2")))
	assert.Assert(t, !exists(w.root))
}

func TestUndoRefusesWhatIsNotTheRuns(t *testing.T) {
	tests := []struct {
		name   string
		change func(w *world)
		want   string
	}{
		{"a root without the marker", func(w *world) { assert.NilError(w.t, os.Remove(filepath.Join(w.root, rootdir.Marker))) }, "not an e2e root"},
		{"a system root", func(w *world) { w.st.Root = "/var/lib" }, "system directory"},
		{"a state dir outside the root", func(w *world) { w.st.Containerd.State = "/var/lib/containerd" }, "not under the root"},
		{"a file glob elsewhere", func(w *world) { w.st.Files = []journal.Glob{{Pattern: "/etc/*"}} }, "not removing /etc/*"},
		{"a bare wildcard", func(w *world) { w.st.Files = []journal.Glob{{Pattern: filepath.Join(w.logs, "*")}} }, "not removing"},
		{"a wildcard directory", func(w *world) { w.st.Files = []journal.Glob{{Pattern: filepath.Join(w.logs, "*", "kc-e2e_x")}} }, "not removing"},
		{"a sysctl path", func(w *world) { w.st.Sysctls = []journal.Sysctl{{Name: "../../etc/passwd", Before: "x"}} }, "not a sysctl name"},
		{"a netns elsewhere", func(w *world) { w.st.Netns = []string{"/etc/passwd"} }, "not touching netns /etc/passwd"},
		{"a subnet that is none", func(w *world) { w.st.Subnet = "0.0.0.0/0 -D" }, "subnet"},
		{"a subnet that is everything", func(w *world) { w.st.Subnet = "0.0.0.0/0" }, "wider than"},
		{"a socket elsewhere", func(w *world) { w.st.ShimSockets = []string{"unix:///etc/passwd"} }, "not touching unix:///etc/passwd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			tt.change(w)
			err := Undo(context.Background(), w.st, w.host())
			assert.Assert(t, err != nil && strings.Contains(err.Error(), tt.want), "%v", err)
			assert.Assert(t, exists("/etc/passwd"))
		})
	}
}

func TestUndoRemovesTheCNICacheOfTheRunsSandboxes(t *testing.T) {
	w := newWorld(t)
	ours, others := strings.Repeat("a1", 32), strings.Repeat("b2", 32)
	assert.NilError(t, os.MkdirAll(filepath.Join(w.st.Containerd.State, "io.containerd.grpc.v1.cri", "sandboxes", ours), 0o755))
	cache := filepath.Join(w.tmp, "cni-results")
	assert.NilError(t, os.MkdirAll(cache, 0o755))
	for _, f := range []string{"cni-loopback-" + ours + "-lo", "kc-e2e-" + ours + "-eth0", "cni-loopback-" + others + "-lo", "kc-e2e-" + others + "-eth0"} {
		assert.NilError(t, os.WriteFile(filepath.Join(cache, f), nil, 0o644))
	}
	h := w.host()
	h.CNICacheDir = cache
	assert.NilError(t, Undo(context.Background(), w.st, h))
	entries, err := os.ReadDir(cache)
	assert.NilError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.DeepEqual(t, left, []string{"cni-loopback-" + others + "-lo", "kc-e2e-" + others + "-eth0"})
}

// TestFlushConntrackRetries: conntrack -D exits 1 when an entry it listed
// went away before its delete, and may leave others behind; the flush
// deletes again, and fails only when entries stay after every attempt.
func TestFlushConntrackRetries(t *testing.T) {
	tests := []struct {
		name     string
		failures int // -D runs that fail and leave the entries
		wantErr  bool
		wantDs   int
	}{
		{name: "first delete works", failures: 0, wantDs: 1},
		{name: "a racing entry: the second delete works", failures: 1, wantDs: 2},
		{name: "entries that never go", failures: 99, wantErr: true, wantDs: conntrackAttempts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries := []string{"tcp 6 91 TIME_WAIT src=10.217.77.1 dst=192.0.2.7"}
			deletes, failures := 0, tt.failures
			h := Host{Conntrack: func(_ context.Context, bin string, args ...string) ([]byte, error) {
				if args[1] != "-s" {
					return nil, nil
				}
				if args[0] == "-D" {
					deletes++
					if failures > 0 {
						failures--
						return nil, errors.New("exit status 1: such conntrack doesn't exist")
					}
					entries = nil
				}
				return []byte(strings.Join(entries, "\n")), nil
			}}
			err := flushConntrack(context.Background(), journal.State{Subnet: "10.217.77.0/24"}, h)
			assert.Equal(t, err != nil, tt.wantErr, "%v", err)
			assert.Equal(t, deletes, tt.wantDs)
		})
	}
}

// TestUndoRestoresAKindRunsSysctls: a kind run's journal (its nodes'
// kubelets wrote the host's sysctls) gets them written back, whether the
// engine still answers or went with the run.
func TestUndoRestoresAKindRunsSysctls(t *testing.T) {
	tests := []struct {
		name    string
		answers bool
	}{
		{"after SIGKILL: the private dockerd is gone", false},
		{"at the end of the run: the engine answers", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			assert.NilError(t, os.MkdirAll(filepath.Join(w.sysctl, "kernel", "keys"), 0o755))
			for name, v := range map[string]string{"kernel/panic": "10", "kernel/panic_on_oops": "1", "vm/overcommit_memory": "1", "vm/panic_on_oom": "0",
				"kernel/keys/root_maxkeys": "1000000", "kernel/keys/root_maxbytes": "25000000"} {
				assert.NilError(t, os.WriteFile(filepath.Join(w.sysctl, name), []byte(v+"\n"), 0o644))
			}
			st := journal.State{Format: journal.Format, Root: w.root, BootID: "boot-1", Since: since,
				Docker: &journal.Docker{Host: "unix://" + filepath.Join(w.root, "docker", "docker.sock"), Network: "kc-e2e-kind", Clusters: []string{"kc-e2e-patched"}},
				Sysctls: []journal.Sysctl{{Name: "vm.overcommit_memory", Before: "0"}, {Name: "vm.panic_on_oom", Before: "0"}, {Name: "kernel.panic", Before: "0"},
					{Name: "kernel.panic_on_oops", Before: "0"}, {Name: "kernel.keys.root_maxkeys", Before: "200"}, {Name: "kernel.keys.root_maxbytes", Before: "20000"}}}
			h := w.host()
			fh := fakehost.New()
			if tt.answers {
				fh.Engine(st.Docker.Host)
			}
			h.Docker = fh.Docker
			assert.NilError(t, Undo(context.Background(), st, h))
			for name, want := range map[string]string{"kernel/panic": "0", "kernel/panic_on_oops": "0", "vm/overcommit_memory": "0", "vm/panic_on_oom": "0\n",
				"kernel/keys/root_maxkeys": "200", "kernel/keys/root_maxbytes": "20000"} {
				b, err := os.ReadFile(filepath.Join(w.sysctl, name))
				assert.NilError(t, err)
				assert.Equal(t, string(b), want, name)
			}
		})
	}
}

// TestKillShimsLeavesTheContainers: the runtime swap's negative control
// kills the run's shim alone (as systemd stops a containerd unit without
// KillMode=process), never the system containerd's shim 201 nor the
// containers 300 and 301.
func TestKillShimsLeavesTheContainers(t *testing.T) {
	w := newWorld(t)
	found, err := KillShims(context.Background(), w.st, w.host())
	assert.NilError(t, err)
	assert.Equal(t, found, 1)
	assert.DeepEqual(t, w.signals, []string{"200:9"})
	for _, pid := range []int{201, 300, 301} {
		assert.Assert(t, exists(filepath.Join(w.proc, strconv.Itoa(pid))), "pid %d", pid)
	}
}
