package leftovers

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/fakehost"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/shims"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/rootdir"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs/fakeproc"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// twoRuns is a machine where a first kind run (private dockerd on the
// shared data root, or the user's engine) made its bridges, network,
// cluster and mounts, and a second run's journal names the same names.
type twoRuns struct {
	t                            *testing.T
	tmp, proc, dataRoot          string
	first, second                journal.State
	h                            *fakehost.Host
	signals                      []string
	firstMounts, firstContainers []string
	firstNetwork                 string
	unlock                       func()
}

// releaseLock ends the first run's hold on the data root.
func (r *twoRuns) releaseLock(string) { r.unlock() }

const (
	privateSocket1 = "unix:///first/docker.sock"
	clusterLabel   = "io.x-k8s.kind.cluster"
)

func newTwoRuns(t *testing.T, secondHost string) *twoRuns {
	tmp := t.TempDir()
	r := &twoRuns{t: t, tmp: tmp, proc: filepath.Join(tmp, "proc"), dataRoot: filepath.Join(tmp, "cache", "docker"), h: fakehost.New()}
	var roots [2]string
	for i := range roots {
		var err error
		roots[i], err = rootdir.Claim(filepath.Join(tmp, "e2e-root-"+strconv.Itoa(i+1)))
		assert.NilError(t, err)
	}
	fakeproc.BootID(t, r.proc, "boot-1")
	docker := func(root string) *journal.Docker {
		return &journal.Docker{Network: "kc-e2e-kind", Clusters: []string{"kc-e2e-patched"}, DefaultBridge: "kce2edock0",
			DataRoot: r.dataRoot, ExecRoot: filepath.Join(root, "docker", "exec")}
	}
	r.first = journal.State{Format: journal.Format, Root: roots[0], BootID: "boot-1", Since: 1000, RunID: "1111111111111111",
		Docker: docker(roots[0]), Bridge: "kce2ekind0"}
	r.first.Docker.Host = privateSocket1
	r.second = journal.State{Format: journal.Format, Root: roots[1], BootID: "boot-1", Since: 3000, RunID: "2222222222222222",
		Docker: docker(roots[1]), Bridge: "kce2ekind0",
		Containerd: &journal.Containerd{State: filepath.Join(roots[1], "docker", "containerd", "state"), Socket: filepath.Join(roots[1], "docker", "containerd", "containerd.sock")}}
	r.second.Docker.Host = secondHost

	// The first run's dockerd and containerd, its bridges with its tag.
	fakeproc.Write(t, r.proc, fakeproc.Proc{PID: 500, PPID: 1, Start: 1100, Args: []string{"containerd", "--config", filepath.Join(roots[0], "docker", "containerd.toml")}})
	fakeproc.Write(t, r.proc, fakeproc.Proc{PID: 501, PPID: 1, Start: 1200, Args: []string{"dockerd"}})
	for _, l := range []string{"kce2edock0", "kce2ekind0"} {
		r.h.Links[l] = r.first.Tag()
	}
	// Its mounts under the shared data root: the data root itself
	// (dockerd made it shared: its marker), its node's rootfs and shm,
	// named by its bundle; it holds the data root's lock.
	cid := strings.Repeat("a", 64)
	r.firstMounts = []string{r.dataRoot, filepath.Join(r.dataRoot, "overlay2", "m1", "merged"), filepath.Join(r.dataRoot, "containers", cid, "mounts", "shm")}
	for _, m := range r.firstMounts {
		r.h.Mounted[m] = true
	}
	r.marker(r.first)
	r.bundle(r.first.Root, cid, r.firstMounts[1], r.firstMounts[2])
	unlock, err := cachelock.Lock(context.Background(), r.first.Docker.DataRootLock())
	assert.NilError(t, err)
	r.unlock = unlock
	t.Cleanup(unlock)
	// Its network (labelled) and cluster on its engine.
	r.firstNetwork = r.h.AddNetwork(r.first.Docker.Host, "kc-e2e-kind", map[string]string{journal.RunLabel: r.first.RunID})
	for _, n := range []string{"kc-e2e-patched-control-plane", "kc-e2e-patched-worker", "kc-e2e-patched-worker2"} {
		r.h.AddContainer(r.first.Docker.Host, n, "kc-e2e-kind", map[string]string{clusterLabel: "kc-e2e-patched"})
	}
	r.firstContainers = r.h.ContainerNames(r.first.Docker.Host)
	return r
}

// marker is the unmount-on-shutdown file a run's dockerd writes in its
// exec root when it made the data root a mount of its own.
func (r *twoRuns) marker(st journal.State) {
	assert.NilError(r.t, os.MkdirAll(st.Docker.ExecRoot, 0o755))
	assert.NilError(r.t, os.WriteFile(filepath.Join(st.Docker.ExecRoot, "unmount-on-shutdown"), nil, 0o600))
}

// bundle is a task bundle of a run's docker containerd (moby namespace):
// its spec's root path and shm source.
func (r *twoRuns) bundle(root, id, rootfs, shm string) {
	dir := filepath.Join(root, "docker", "containerd", "state", shims.TaskDir, "moby", id)
	assert.NilError(r.t, os.MkdirAll(dir, 0o755))
	spec := `{"root":{"path":"` + rootfs + `"},"mounts":[{"destination":"/proc","source":"proc"},{"destination":"/dev/shm","source":"` + shm + `"},` +
		`{"destination":"/lib/modules","source":"/lib/modules"}]}`
	assert.NilError(r.t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(spec), 0o644))
}

func (r *twoRuns) host() Host {
	fs := procfs.FS{Root: r.proc}
	return Host{
		Proc: fs,
		Signal: func(id procfs.ID, sig syscall.Signal) error {
			r.signals = append(r.signals, strconv.Itoa(id.PID))
			return nil
		},
		Mounts:     r.h.Mounts,
		Unmount:    r.h.Unmount,
		LinkExists: r.h.LinkExists,
		LinkAlias:  r.h.LinkAlias,
		DeleteLink: r.h.DeleteLink,
		Docker:     r.h.Docker,
		Grace:      time.Second,
	}
}

func sortedMounts(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestUndoLeavesWhatAnotherRunMade: a second run's journal names the
// bridges, network, cluster and data root the first run uses; its undo
// (at its end, or `make e2e-cleanup`) removes only what carries its own
// tag (a bridge's ifalias, the network's label, containers on that
// network) and unmounts under the shared data root only the mounts its own
// task bundles name, and the data root itself only when its dockerd made
// that mount and no other run holds the data root.
func TestUndoLeavesWhatAnotherRunMade(t *testing.T) {
	tests := []struct {
		name string
		// secondHost is the second run's engine: its own private socket
		// (not answering: refused or killed) or the user's, the first's.
		secondHost string
		change     func(r *twoRuns)
		wantErr    string
		// wantLinks, wantMounts: what is left; nil for the first run's
		// untouched.
		wantLinks  map[string]string
		wantMounts []string
		// wantNetworks on the first run's engine; nil: the first's alone.
		wantNetworks []string
	}{
		{name: "two private engines: the second refused or killed while the first runs", secondHost: "unix:///second/docker.sock"},
		{name: "the user's engine: the first run's network and cluster on it", secondHost: privateSocket1},
		{
			name: "a bridge of the recorded name without an ifalias", secondHost: "unix:///second/docker.sock",
			change:    func(r *twoRuns) { r.h.Links["kce2ekind0"] = "" },
			wantErr:   "kce2ekind0 has no ifalias",
			wantLinks: map[string]string{"kce2edock0": "first", "kce2ekind0": ""},
		},
		{
			name: "what the second run made itself goes", secondHost: privateSocket1,
			change: func(r *twoRuns) {
				// The first run is gone (its lock too); the second made
				// the bridges, the data root's mount and a node.
				r.unlock()
				r.h.Links["kce2edock0"], r.h.Links["kce2ekind0"] = r.second.Tag(), r.second.Tag()
				for _, m := range r.firstMounts {
					delete(r.h.Mounted, m)
				}
				cid := strings.Repeat("b", 64)
				mine := []string{r.dataRoot, filepath.Join(r.dataRoot, "overlay2", "m2", "merged"), filepath.Join(r.dataRoot, "containers", cid, "mounts", "shm")}
				for _, m := range mine {
					r.h.Mounted[m] = true
				}
				r.marker(r.second)
				r.bundle(r.second.Root, cid, mine[1], mine[2])
				e := r.h.Engine(privateSocket1)
				delete(e.Networks, "kc-e2e-kind")
				for id := range e.Containers {
					delete(e.Containers, id)
				}
				r.h.AddNetwork(privateSocket1, "kc-e2e-kind", map[string]string{journal.RunLabel: r.second.RunID})
				r.h.AddNetwork(privateSocket1, "kind", nil)
				r.h.AddContainer(privateSocket1, "kc-e2e-patched-control-plane", "kc-e2e-kind", map[string]string{clusterLabel: "kc-e2e-patched"})
				// Someone's own kind cluster of the same name on another network.
				r.h.AddContainer(privateSocket1, "someones-control-plane", "kind", map[string]string{clusterLabel: "kc-e2e-patched"})
				r.firstContainers = []string{"someones-control-plane"}
			},
			wantLinks:    map[string]string{},
			wantMounts:   []string{},
			wantNetworks: []string{"kind"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTwoRuns(t, tt.secondHost)
			if tt.change != nil {
				tt.change(r)
			}
			var log strings.Builder
			h := r.host()
			h.Log = &log
			err := Undo(context.Background(), r.second, h)
			t.Log(log.String())
			if tt.wantErr == "" {
				assert.NilError(t, err)
			} else {
				assert.Check(t, is.ErrorContains(err, tt.wantErr))
				assert.Check(t, exists(r.second.Root), "the second run's journal is gone: a retry cannot finish")
			}
			wantLinks := tt.wantLinks
			if wantLinks == nil {
				wantLinks = map[string]string{"kce2edock0": "first", "kce2ekind0": "first"}
			}
			for l, a := range wantLinks {
				if a == "first" {
					wantLinks[l] = r.first.Tag()
				}
			}
			assert.Check(t, is.DeepEqual(r.h.Links, wantLinks))
			wantMounts := tt.wantMounts
			if wantMounts == nil {
				wantMounts = append([]string{}, r.firstMounts...)
				sort.Strings(wantMounts)
			}
			assert.Check(t, is.DeepEqual(sortedMounts(r.h.Mounted), wantMounts))
			assert.Check(t, is.Len(r.signals, 0), "signalled %v", r.signals)
			for _, pid := range []int{500, 501} {
				assert.Check(t, exists(filepath.Join(r.proc, strconv.Itoa(pid))), "pid %d", pid)
			}
			assert.Check(t, is.DeepEqual(r.h.ContainerNames(privateSocket1), r.firstContainers))
			if tt.wantNetworks != nil {
				assert.Check(t, is.DeepEqual(r.h.NetworkNames(privateSocket1), tt.wantNetworks))
			} else {
				assert.Check(t, is.DeepEqual(r.h.NetworkNames(privateSocket1), []string{"kc-e2e-kind"}))
				if n := r.h.Engine(privateSocket1).Networks["kc-e2e-kind"]; n != nil {
					assert.Check(t, is.Equal(n.ID, r.firstNetwork))
				}
			}
		})
	}
}

// TestUndoLeavesTheDataRootToTheRunUsingIt: the data root's own mount,
// made by this run's dockerd (its marker), stays while another run holds
// the data root's lock or has mounts under it; the undo fails so that the
// journal stays for a retry.
func TestUndoLeavesTheDataRootToTheRunUsingIt(t *testing.T) {
	tests := []struct {
		name    string
		held    bool
		others  bool
		legacy  bool
		wantErr string
	}{
		{name: "free: unmounted"},
		{name: "another run holds the lock", held: true, wantErr: "lock"},
		{name: "another run's mounts under it", others: true, wantErr: "still mounted under"},
		{name: "a journal from before the exec root was recorded: free, unmounted", legacy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTwoRuns(t, "unix:///second/docker.sock")
			for _, m := range r.firstMounts[1:] {
				if !tt.others {
					delete(r.h.Mounted, m)
				}
			}
			r.marker(r.second)
			assert.NilError(t, os.Remove(filepath.Join(r.first.Docker.ExecRoot, "unmount-on-shutdown")))
			r.second.Bridge, r.second.Docker.DefaultBridge = "", ""
			if tt.legacy {
				r.second.Docker.ExecRoot = ""
				r.second.Containerd.Config = filepath.Join(r.second.Root, "docker", "containerd.toml")
			}
			// newTwoRuns took the lock for the first run: drop it here
			// unless the test holds it.
			lockPath := r.first.Docker.DataRootLock()
			if !tt.held {
				r.releaseLock(lockPath)
			}
			err := Undo(context.Background(), r.second, r.host())
			if tt.wantErr == "" {
				assert.NilError(t, err)
				assert.Assert(t, !r.h.Mounted[r.dataRoot])
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
			assert.Assert(t, r.h.Mounted[r.dataRoot])
			assert.Assert(t, exists(r.second.Root))
		})
	}
}
