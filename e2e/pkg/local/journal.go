package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cgroups"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/deviceplugin"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/iptables"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/shims"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
)

// KubeletSysctls are what the kubelet sets on start (setupKernelTunables)
// and the CNI bridge's ip_forward.
var KubeletSysctls = append(append([]string{}, journal.KubeletSysctls...), "net.ipv4.ip_forward")

// CNINetwork is the conflist's network name: libcni caches each
// attachment's result as /var/lib/cni/results/<network>-<container>-<if>.
const CNINetwork = "kc-e2e"

// OutsideDirs are directories outside the root that the run's containerd,
// CNI plugins and kubelet create when missing; the ones missing before the
// run are removed afterwards when empty.
var OutsideDirs = []string{"/run/containerd/s", "/run/containerd", "/run/netns", "/var/log/pods", "/var/log/containers",
	"/var/lib/cni/results", "/var/lib/cni", "/etc/cni/net.d", "/etc/cni", "/opt/containerd/bin", "/opt/containerd/lib", "/opt/containerd",
	"/var/lib/kubelet/device-plugins", "/var/lib/kubelet"}

// DevicePluginDir is the device manager's directory of kubelets 1.18 to
// 1.21: fixed, whatever their --root-dir.
const DevicePluginDir = "/var/lib/kubelet/device-plugins"

// DeviceCheckpoint is the device manager's checkpoint of the devices it
// allocated to pods (kubelets 1.18 to 1.21 keep it in DevicePluginDir).
const DeviceCheckpoint = DevicePluginDir + "/kubelet_internal_checkpoint"

// maxSavedCheckpoint bounds the checkpoint the journal keeps.
const maxSavedCheckpoint = 1 << 20

// DevicePluginFiles are what the run's kubelets (kubelet.sock,
// DEPRECATION, the checkpoint once a plugin registered) and the e2e's
// device plugin (its socket) write in DevicePluginDir.
var DevicePluginFiles = []string{DevicePluginDir + "/kubelet.sock", DevicePluginDir + "/DEPRECATION", DeviceCheckpoint,
	DevicePluginDir + "/" + deviceplugin.Socket}

// PodLogGlobs are the kubelet's log files of one namespace's pods.
func PodLogGlobs(namespace string) []string {
	return []string{"/var/log/pods/" + namespace + "_*", "/var/log/containers/*_" + namespace + "_*"}
}

// before records the machine as it is before the run makes anything.
func (n *Node) before(ctx context.Context) (journal.State, error) {
	self, err := procfs.Host.Self()
	if err != nil {
		return journal.State{}, err
	}
	boot, err := procfs.Host.BootID()
	if err != nil {
		return journal.State{}, err
	}
	st := journal.State{Root: n.Root, BootID: boot, Since: self.StartTicks, Started: time.Now(),
		Containerd: &journal.Containerd{Config: n.ContainerdConfig(), Root: n.ContainerdRoot(), State: n.ContainerdState(), Socket: n.ContainerdSocket()},
		Bridge:     DefaultNetwork.Bridge, Subnet: DefaultNetwork.Subnet}
	st.Sysctls = journal.ReadSysctls("/proc/sys", KubeletSysctls)
	for _, bin := range []string{hostdeps.Iptables.Name, hostdeps.Ip6tables.Name} {
		rules, err := iptables.Save(ctx, iptables.Exec, bin)
		if err != nil {
			if bin == "ip6tables" {
				continue
			}
			return journal.State{}, fmt.Errorf("reading %s rules: %w", bin, err)
		}
		st.Iptables = append(st.Iptables, journal.Iptables{Binary: bin, Before: rules})
	}
	cg, err := cgroups.Record(cgroups.Host{Root: "/sys/fs/cgroup"}, "kubepods")
	if err != nil {
		return journal.State{}, err
	}
	st.Cgroups = &cg
	patterns := append(PodLogGlobs(corpus.Namespace), "/var/lib/cni/results/"+CNINetwork+"-*")
	for _, pattern := range append(patterns, DevicePluginFiles...) {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			return journal.State{}, err
		}
		g := journal.Glob{Pattern: pattern, Before: matches}
		if pattern == DeviceCheckpoint && len(matches) == 1 {
			// Kubelets rewrite it in place: kept to be written back.
			data, err := os.ReadFile(DeviceCheckpoint)
			if err != nil || len(data) > maxSavedCheckpoint {
				return journal.State{}, fmt.Errorf("saving %s before the run: %v (%d bytes)", DeviceCheckpoint, err, len(data))
			}
			g.Saved = map[string][]byte{DeviceCheckpoint: data}
		}
		st.Files = append(st.Files, g)
	}
	for _, d := range OutsideDirs {
		if _, err := os.Lstat(d); os.IsNotExist(err) {
			st.Dirs = append(st.Dirs, d)
		}
	}
	return st, nil
}

// RemovePodLogs removes the kubelet's log directories of the corpus's
// pods that the run made: a next kubelet on the same node would otherwise
// inherit their attempt numbers.
func (n *Node) RemovePodLogs() error {
	return n.removeNew("pod logs", func(pattern string) bool { return strings.HasPrefix(pattern, "/var/log/") })
}

// RemoveDeviceCheckpoint removes the device manager's checkpoint if the
// run made it, or writes back the one that was there before: a next
// baseline would otherwise start with the devices allocated to pods that
// are gone.
func (n *Node) RemoveDeviceCheckpoint() error {
	return n.removeNew("the device checkpoint", func(pattern string) bool { return pattern == DeviceCheckpoint })
}

// ExistedBefore reports whether a file the journal records (one of
// DevicePluginFiles, say) was there before the run.
func (n *Node) ExistedBefore(path string) bool {
	for _, g := range n.Journal.State().Files {
		for _, b := range g.Before {
			if b == path {
				return true
			}
		}
	}
	return false
}

// removeNew removes the matches of the journal's globs that pick selects,
// except those that existed before the run.
func (n *Node) removeNew(what string, pick func(pattern string) bool) error {
	var errs []string
	for _, g := range n.Journal.State().Files {
		if !pick(g.Pattern) {
			continue
		}
		if err := g.Undo(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing %s: %s", what, strings.Join(errs, "; "))
	}
	return nil
}

// watch records, every second until stopped, the shims of the run's
// containerd (PID and start time, verified as shims.Find does), the netns
// and the shim sockets its task bundles name: after a SIGKILL the cleanup
// finds them in the journal, not only in the state dir.
func (n *Node) watch() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { _ = recover() }() // a panic here must not kill the run before its cleanup
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			n.recordTasks()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

func (n *Node) recordTasks() {
	st := n.Journal.State()
	found, err := shims.Find(procfs.Host, shims.Run{Socket: n.ContainerdSocket(), StateDir: n.ContainerdState(), Recorded: st.Shims, Since: st.Since})
	if err != nil {
		return
	}
	tasks, _ := shims.Tasks(n.ContainerdState())
	netns, sockets := set(st.Netns), set(st.ShimSockets)
	changed := len(found) != len(st.Shims)
	known := map[procfs.ID]bool{}
	for _, id := range st.Shims {
		known[id] = true
	}
	for _, id := range found {
		changed = changed || !known[id]
	}
	for _, t := range tasks {
		if t.Netns != "" && !netns[t.Netns] {
			netns[t.Netns], changed = true, true
		}
		if t.Address != "" && !sockets[t.Address] {
			sockets[t.Address], changed = true, true
		}
	}
	if !changed {
		return
	}
	_ = n.Journal.Update(func(s *journal.State) {
		// Shims that ended are forgotten; netns and sockets are kept
		// (removing what is already gone costs nothing).
		s.Shims = found
		s.Netns = keys(netns)
		s.ShimSockets = keys(sockets)
	})
}

func set(list []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range list {
		m[s] = true
	}
	return m
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
