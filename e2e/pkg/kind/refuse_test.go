package kind

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cgroups"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/docker"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/fakehost"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/leftovers"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs/fakeproc"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// firstRun is what a first kind run (or someone else) has on a fake
// machine while a second run starts.
type firstRun struct {
	m        Machine
	h        *fakehost.Host
	tmp      string
	cache    string // KC_CACHE: the data root is <cache>/docker
	engine   string // the first run's engine (DOCKER_HOST)
	tag      string
	links    map[string]string
	mounts   []string
	networks []string
	nodes    []string
	cgroup   string
	unlock   func()
	signals  []string
}

const firstPrivate = "unix:///var/lib/kubelet-compat-e2e/docker/docker.sock"

// The first run: none, with a private dockerd, on the user's engine.
const (
	none = iota
	private
	user
)

// newFirstRun: a machine where a first run (kind: none, private, user)
// made what it makes; the rows below set some of it aside.
func newFirstRun(t *testing.T, kind int) *firstRun {
	f := &firstRun{m: fakeMachine(t), h: fakehost.New(), tmp: t.TempDir()}
	f.m.LinkExists, f.m.LinkAlias, f.m.SetLinkAlias = f.h.LinkExists, f.h.LinkAlias, f.h.SetLinkAlias
	f.cache = filepath.Join(f.tmp, "cache")
	dataRoot := DataRoot(f.cache)
	first := journal.State{RunID: "1111111111111111", Root: "/var/lib/kubelet-compat-e2e"}
	f.tag = first.Tag()
	if kind == none {
		f.h.Engine("") // the user's engine answers, empty
		return f
	}
	// Its processes: containerd, dockerd, a node's systemd.
	for pid, args := range map[int]string{500: "containerd", 501: "dockerd", 502: "/sbin/init"} {
		fakeproc.Write(t, f.m.Proc.Root, fakeproc.Proc{PID: pid, PPID: 1, Start: 1000 + uint64(pid), Args: []string{args}})
	}
	f.engine = ""
	if kind == private {
		f.engine = firstPrivate
		f.links = map[string]string{docker.DefaultBridge.Name: f.tag, Network.Bridge: f.tag}
		// Its containers' cgroup parent (v1: memory and pids), with its
		// node's init in it.
		for _, h := range []string{"memory", "pids"} {
			dir := filepath.Join(f.m.CgroupRoot, h, docker.CgroupParent, "c1")
			assert.NilError(t, os.MkdirAll(dir, 0o755))
			assert.NilError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("502\n"), 0o644))
		}
		f.cgroup = filepath.Join(f.m.CgroupRoot, "memory", docker.CgroupParent, "c1")
		// Its mounts under the data root; it holds the data root.
		f.mounts = []string{dataRoot, filepath.Join(dataRoot, "overlay2", "m1", "merged")}
		unlock, err := cachelock.Lock(context.Background(), journal.Docker{DataRoot: dataRoot}.DataRootLock())
		assert.NilError(t, err)
		f.unlock = unlock
		t.Cleanup(unlock)
	} else {
		f.links = map[string]string{"br-0123456789ab": ""}
	}
	for l, a := range f.links {
		f.h.Links[l] = a
	}
	for _, m := range f.mounts {
		f.h.Mounted[m] = true
	}
	f.h.AddNetwork(f.engine, Network.Name, map[string]string{journal.RunLabel: "1111111111111111"})
	for _, n := range []string{"kc-e2e-patched-control-plane", "kc-e2e-patched-worker"} {
		f.h.AddContainer(f.engine, n, Network.Name, map[string]string{"io.x-k8s.kind.cluster": "kc-e2e-patched"})
	}
	return f
}

// lock takes the data root's lock; the first run may hold it: the second
// would wait, here 300ms.
func (f *firstRun) lock(ctx context.Context) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	return cachelock.Lock(ctx, journal.Docker{DataRoot: DataRoot(f.cache)}.DataRootLock())
}

// undoHost is the fake machine as the undo sees it.
func (f *firstRun) undoHost() leftovers.Host {
	return leftovers.Host{
		Proc: f.m.Proc,
		Signal: func(id procfs.ID, sig syscall.Signal) error {
			f.signals = append(f.signals, strconv.Itoa(id.PID))
			return nil
		},
		Cgroups: cgroups.Host{Root: f.m.CgroupRoot, Proc: f.m.Proc, Kill: func(pid int) error {
			f.signals = append(f.signals, strconv.Itoa(pid))
			return nil
		}},
		SysctlDir: f.m.SysctlDir,
		Mounts:    f.h.Mounts, Unmount: f.h.Unmount,
		LinkExists: f.h.LinkExists, LinkAlias: f.h.LinkAlias, DeleteLink: f.h.DeleteLink,
		Docker: f.h.Docker,
		Grace:  time.Second,
		Log:    io.Discard,
	}
}

// second is the second run's provider on the same machine.
func (f *firstRun) second(t *testing.T, private bool) (*Provider, docker.Paths) {
	root := filepath.Join(f.tmp, "e2e-root-2")
	dp := docker.Paths{Root: filepath.Join(root, "docker")}
	host := ""
	if private {
		host = "unix://" + dp.Socket()
	}
	p := &Provider{opts: Options{Root: root, CacheDir: f.cache, Log: io.Discard}, net: Network, machine: f.m, undoHost: f.undoHost(),
		Engine: &docker.Engine{Env: []string{"DOCKER_HOST=" + host}, Private: private}}
	p.docker = func(ctx context.Context, args ...string) ([]byte, error) { return f.h.Docker(ctx, host, args...) }
	return p, dp
}

// TestSecondRunRefusedLeavesTheFirstRunAlone: a second kind run meets
// names a first run (or someone) uses: the bridges, the containers'
// cgroup parent, the docker network, a cluster name. It is refused with
// one line naming what is in use, before it journals that name; and the
// undo of its journal (at its end, or `make e2e-cleanup`) leaves the
// first run's bridges, mounts, processes, cgroups, network and clusters
// alone.
func TestSecondRunRefusedLeavesTheFirstRunAlone(t *testing.T) {
	tests := []struct {
		name    string
		first   int
		private bool
		change  func(f *firstRun)
		// cluster: the second run gets as far as its first cluster.
		cluster string
		want    string
	}{
		{name: "private engines: the first run's bridges", first: private, private: true, want: "kce2edock0 exists already"},
		{name: "a private engine: the network's bridge in use", first: private, private: true, want: "kce2ekind0 exists already",
			change: func(f *firstRun) {
				f.h.DeleteLink(context.Background(), "kce2edock0")
				delete(f.links, "kce2edock0")
				f.unlock()
			}},
		{name: "a private engine: the containers' cgroup parent in use", first: private, private: true, want: "cgroup " + docker.CgroupParent + " exists already",
			change: func(f *firstRun) {
				for l := range f.links {
					f.h.DeleteLink(context.Background(), l)
				}
				f.links = map[string]string{}
				f.unlock()
			}},
		{name: "the user's engine: the first run's network", first: user, want: "docker network kc-e2e-kind exists already"},
		{name: "the user's engine: a cluster of the name", first: user, cluster: "kc-e2e-patched",
			want: "kind cluster kc-e2e-patched exists already",
			change: func(f *firstRun) {
				// Someone's own cluster of that name, on kind's default network.
				e := f.h.Engine(f.engine)
				delete(e.Networks, Network.Name)
				for id := range e.Containers {
					delete(e.Containers, id)
				}
				f.h.AddNetwork(f.engine, "kind", nil)
				for _, n := range []string{"kc-e2e-patched-control-plane", "kc-e2e-patched-worker"} {
					f.h.AddContainer(f.engine, n, "kind", map[string]string{"io.x-k8s.kind.cluster": "kc-e2e-patched"})
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFirstRun(t, tt.first)
			if tt.change != nil {
				tt.change(f)
			}
			f.networks, f.nodes = f.h.NetworkNames(f.engine), f.h.ContainerNames(f.engine)
			p, dp := f.second(t, tt.private)
			stack := cleanup.New(io.Discard)
			_, err := journal.TakeRoot(p.opts.Root, stack, func() bool { return p.Journal != nil })
			assert.NilError(t, err)
			ctx := context.Background()
			err = p.journalRun(ctx, tt.private, dp, f.lock, stack)
			if tt.cluster != "" {
				assert.NilError(t, err)
				assert.NilError(t, p.ensureNetwork(ctx))
				err = p.claimCluster(ctx, tt.cluster)
			}
			t.Logf("refused: %v", err)
			assert.Check(t, is.ErrorContains(err, tt.want))
			if err != nil {
				assert.Check(t, !strings.Contains(err.Error(), "\n"), "not one line: %q", err)
			}
			if p.Journal != nil {
				st := p.Journal.State()
				assert.Check(t, !strings.Contains(st.Tag(), "1111111111111111"))
				if st.Docker != nil {
					assert.Check(t, is.Len(st.Docker.Clusters, 0))
				}
			}

			// The second run's undo.
			assert.Check(t, stack.Run(ctx, 30*time.Second))
			assert.Check(t, is.DeepEqual(f.h.Links, f.links))
			mounts := []string{}
			for m := range f.h.Mounted {
				mounts = append(mounts, m)
			}
			sort.Strings(mounts)
			want := append([]string{}, f.mounts...)
			sort.Strings(want)
			assert.Check(t, is.DeepEqual(mounts, want))
			assert.Check(t, is.Len(f.signals, 0), "signalled %v", f.signals)
			for _, pid := range []int{500, 501, 502} {
				_, err := os.Stat(filepath.Join(f.m.Proc.Root, strconv.Itoa(pid)))
				assert.Check(t, err == nil, "pid %d", pid)
			}
			if f.cgroup != "" {
				_, err := os.Stat(f.cgroup)
				assert.Check(t, err == nil, "cgroup %s", f.cgroup)
			}
			assert.Check(t, is.DeepEqual(f.h.NetworkNames(f.engine), f.networks))
			assert.Check(t, is.DeepEqual(f.h.ContainerNames(f.engine), f.nodes))
			_, err = os.Stat(p.opts.Root)
			assert.Check(t, os.IsNotExist(err), "the second run's root is left: %v", err)
		})
	}
}

// TestRunTagsWhatItMakes: a run alone on the machine claims its names,
// tags what it makes (the bridges' ifalias, the network's labels, the
// network's ID in the journal), and its undo at the end of the run (the
// stack, in order: the data root's lock released first) removes all of
// it: the tags are checked, and they are the run's.
func TestRunTagsWhatItMakes(t *testing.T) {
	for _, priv := range []bool{true, false} {
		name := "the user's engine"
		if priv {
			name = "a private dockerd"
		}
		t.Run(name, func(t *testing.T) {
			f := newFirstRun(t, none)
			p, dp := f.second(t, priv)
			host := p.Engine.Host()
			f.h.Engine(host)
			ctx := context.Background()
			stack := cleanup.New(io.Discard)
			_, err := journal.TakeRoot(p.opts.Root, stack, func() bool { return p.Journal != nil })
			assert.NilError(t, err)
			assert.NilError(t, p.journalRun(ctx, priv, dp, f.lock, stack))
			tag := p.Journal.State().Tag()
			assert.Assert(t, strings.HasPrefix(tag, "kubelet-compat-e2e run "), tag)
			if priv {
				// docker.Start's makeBridge: made, then tagged.
				assert.NilError(t, f.h.AddLink(ctx, docker.DefaultBridge.Name))
				assert.NilError(t, f.h.SetLinkAlias(ctx, docker.DefaultBridge.Name, tag))
			}
			assert.NilError(t, p.ensureNetwork(ctx))
			assert.NilError(t, p.claimCluster(ctx, "kc-e2e-patched"))

			st := p.Journal.State()
			n := f.h.Engine(host).Networks[Network.Name]
			assert.Assert(t, n != nil)
			assert.DeepEqual(t, n.Labels, map[string]string{journal.RunLabel: st.RunID, journal.RootLabel: p.opts.Root})
			assert.Equal(t, st.Docker.NetworkID, n.ID)
			assert.DeepEqual(t, st.Docker.Clusters, []string{"kc-e2e-patched"})
			if priv {
				assert.DeepEqual(t, f.h.Links, map[string]string{docker.DefaultBridge.Name: tag, Network.Bridge: tag})
				assert.Equal(t, len(st.Cgroups.Created), 3)
				for _, c := range st.Cgroups.Created {
					_, err := os.Stat(c)
					assert.NilError(t, err, "the run makes its cgroup parent")
				}
				assert.Equal(t, st.Docker.ExecRoot, dp.ExecRoot())
				assert.Equal(t, st.Docker.DataRoot, DataRoot(f.cache))
			} else {
				assert.DeepEqual(t, f.h.Links, map[string]string{Network.Bridge: ""}) // the user's dockerd's: removed with the network
				assert.Assert(t, st.Cgroups == nil && st.Docker.DataRoot == "")
			}

			// What kind and the nodes make: the nodes on the network, the
			// kubelets' sysctls; a private engine's node mounts.
			for _, node := range []string{"kc-e2e-patched-control-plane", "kc-e2e-patched-worker"} {
				f.h.AddContainer(host, node, Network.Name, map[string]string{"io.x-k8s.kind.cluster": "kc-e2e-patched"})
			}
			assert.NilError(t, os.WriteFile(filepath.Join(f.m.SysctlDir, "kernel", "panic"), []byte("10\n"), 0o644))
			if priv {
				dataRoot := DataRoot(f.cache)
				cid := strings.Repeat("c", 64)
				for _, m := range []string{dataRoot, filepath.Join(dataRoot, "overlay2", "m3", "merged")} {
					f.h.Mounted[m] = true
				}
				assert.NilError(t, os.MkdirAll(dp.ExecRoot(), 0o755))
				assert.NilError(t, os.WriteFile(filepath.Join(dp.ExecRoot(), leftovers.UnmountOnShutdown), nil, 0o600))
				bundle := filepath.Join(dp.ContainerdState(), "io.containerd.runtime.v2.task", "moby", cid)
				assert.NilError(t, os.MkdirAll(bundle, 0o755))
				assert.NilError(t, os.WriteFile(filepath.Join(bundle, "config.json"), []byte(`{"root":{"path":"`+filepath.Join(dataRoot, "overlay2", "m3", "merged")+`"}}`), 0o644))
			}

			assert.NilError(t, stack.Run(ctx, 30*time.Second))
			assert.Equal(t, len(f.h.Links), 0, "%v", f.h.Links)
			assert.Equal(t, len(f.h.Mounted), 0, "%v", f.h.Mounted)
			assert.DeepEqual(t, f.h.NetworkNames(host), []string(nil))
			assert.DeepEqual(t, f.h.ContainerNames(host), []string(nil))
			b, err := os.ReadFile(filepath.Join(f.m.SysctlDir, "kernel", "panic"))
			assert.NilError(t, err)
			assert.Equal(t, string(b), "0")
			if st.Cgroups != nil {
				for _, c := range st.Cgroups.Created {
					_, err := os.Stat(c)
					assert.Assert(t, os.IsNotExist(err), c)
				}
			}
			_, err = os.Stat(p.opts.Root)
			assert.Assert(t, os.IsNotExist(err))
		})
	}
}

// TestCgroupParentAppearingAfterTheCheck: the run makes its containers'
// cgroup parent itself once journaled; one that appeared since the check
// (mkdir: exists) is someone else's: dropped from the journal, the run
// refused, and the undo leaves it.
func TestCgroupParentAppearingAfterTheCheck(t *testing.T) {
	f := newFirstRun(t, none)
	p, dp := f.second(t, true)
	ctx := context.Background()
	stack := cleanup.New(io.Discard)
	_, err := journal.TakeRoot(p.opts.Root, stack, func() bool { return p.Journal != nil })
	assert.NilError(t, err)
	assert.NilError(t, p.journalRun(ctx, true, dp, f.lock, stack))
	rec := *p.Journal.State().Cgroups
	for _, c := range rec.Created {
		assert.NilError(t, os.Remove(c))
	}
	// Someone's, made between the check and the mkdir, with a process.
	theirs := rec.Created[1]
	assert.NilError(t, os.Mkdir(theirs, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(theirs, "cgroup.procs"), []byte("502\n"), 0o644))
	fakeproc.Write(t, f.m.Proc.Root, fakeproc.Proc{PID: 502, PPID: 1, Start: 999999, Args: []string{"/sbin/init"}})

	err = p.claimCgroups(rec)
	assert.ErrorContains(t, err, "made since the check")
	assert.Assert(t, !strings.Contains(err.Error(), "\n"), "%q", err)
	for _, c := range p.Journal.State().Cgroups.Created {
		assert.Assert(t, c != theirs, "still journaled: %s", c)
	}
	assert.NilError(t, stack.Run(ctx, 30*time.Second))
	_, err = os.Stat(theirs)
	assert.NilError(t, err)
	assert.Equal(t, len(f.signals), 0, "%v", f.signals)
}

func TestClusterNamesCheckedBeforeTheFirstCluster(t *testing.T) {
	tests := []struct {
		name    string
		private bool
		want    string
	}{
		{name: "the user's engine: refused before the controls ran", want: "kind cluster kc-e2e-patched exists already"},
		{name: "a private engine: a killed run's, removed when its turn comes", private: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFirstRun(t, none)
			p, _ := f.second(t, tt.private)
			f.h.AddNetwork(p.Engine.Host(), "kind", nil)
			f.h.AddContainer(p.Engine.Host(), "kc-e2e-patched-control-plane", "kind", map[string]string{"io.x-k8s.kind.cluster": "kc-e2e-patched"})
			err := p.checkClustersFree(context.Background(), []string{"kc-e2e-control-1", "kc-e2e-patched"})
			if tt.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestDeleteClusterOnlyTheRuns: the run deletes its cluster's containers
// (kind's label AND the run's network), not a cluster of that name made
// meanwhile elsewhere on the engine.
func TestDeleteClusterOnlyTheRuns(t *testing.T) {
	f := newFirstRun(t, none)
	p, dp := f.second(t, false)
	ctx := context.Background()
	stack := cleanup.New(io.Discard)
	_, err := journal.TakeRoot(p.opts.Root, stack, func() bool { return p.Journal != nil })
	assert.NilError(t, err)
	assert.NilError(t, p.journalRun(ctx, false, dp, f.lock, stack))
	assert.NilError(t, p.ensureNetwork(ctx))
	assert.NilError(t, p.claimCluster(ctx, "kc-e2e-patched"))
	f.h.AddContainer("", "kc-e2e-patched-control-plane", Network.Name, map[string]string{"io.x-k8s.kind.cluster": "kc-e2e-patched"})
	f.h.AddNetwork("", "kind", nil)
	f.h.AddContainer("", "someones-control-plane", "kind", map[string]string{"io.x-k8s.kind.cluster": "kc-e2e-patched"})
	c := &Cluster{Name: "kc-e2e-patched", p: p}
	assert.NilError(t, c.Delete(ctx, false))
	assert.DeepEqual(t, f.h.ContainerNames(""), []string{"someones-control-plane"})
	assert.NilError(t, stack.Run(ctx, 30*time.Second))
	assert.DeepEqual(t, f.h.NetworkNames(""), []string{"kind"})
}
