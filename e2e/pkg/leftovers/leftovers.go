// Package leftovers undoes what a run's journal lists, and nothing else:
// at the end of every run (in-process, after the processes were stopped
// the normal way) and from `e2e -mode cleanup` after a run was killed with
// SIGKILL. Every step checks that what it is about to touch is the run's:
// processes by PID and start time (never by name or command line alone),
// shims and containers through the run's containerd state dir, iptables
// chains the run created, cgroups that did not exist before, files under
// the run's marked root. A step's failure does not stop the others; the
// root (and its journal) is removed only when every step succeeded, so
// that a second cleanup can finish the job.
package leftovers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cgroups"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/iptables"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/mounts"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/shims"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/rootdir"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
)

// Host is the machine the undo acts on; tests use fakes in temporary
// directories.
type Host struct {
	Proc procfs.FS
	// Signal signals a process if it is still the one id names.
	Signal   func(id procfs.ID, sig syscall.Signal) error
	Iptables iptables.Runner
	// Conntrack runs conntrack(8).
	Conntrack iptables.Runner
	Cgroups   cgroups.Host
	// SysctlDir is /proc/sys.
	SysctlDir string
	// Mounts lists mount points at or under a directory; Unmount
	// unmounts one.
	Mounts  func(dir string) ([]string, error)
	Unmount func(mountPoint string) error
	// LinkExists, LinkAlias (its ifalias, "" for none) and DeleteLink
	// manage network interfaces.
	LinkExists func(name string) bool
	LinkAlias  func(name string) string
	DeleteLink func(ctx context.Context, name string) error
	// NetnsDirs are where netns may be bind-mounted outside the root;
	// ShimSocketDir is where containerd 1.6 puts shim sockets; FileDirs
	// are the directories the journal's globs may name; CNICacheDir is
	// libcni's result cache (<network>-<container ID>-<interface>).
	NetnsDirs     []string
	ShimSocketDir string
	FileDirs      []string
	CNICacheDir   string
	// Docker runs the docker CLI against the engine at host (a
	// DOCKER_HOST, "" for the default): the run's kind clusters'
	// containers and its network are removed through it (nil: no docker
	// on this host).
	Docker func(ctx context.Context, host string, args ...string) ([]byte, error)
	// Grace is how long a process gets between SIGTERM and SIGKILL.
	Grace time.Duration
	Log   io.Writer
}

// Machine is this machine.
func Machine(log io.Writer) Host {
	return Host{
		Proc:      procfs.Host,
		Signal:    procfs.Signal,
		Iptables:  iptables.Exec,
		Conntrack: iptables.Exec,
		Cgroups: cgroups.Host{Root: "/sys/fs/cgroup", Proc: procfs.Host, Kill: func(pid int) error {
			return syscall.Kill(pid, syscall.SIGKILL)
		}},
		SysctlDir:  "/proc/sys",
		Mounts:     mounts.List,
		Unmount:    mounts.Unmount,
		LinkExists: func(name string) bool { _, err := os.Stat("/sys/class/net/" + name); return err == nil },
		LinkAlias: func(name string) string {
			b, _ := os.ReadFile("/sys/class/net/" + name + "/ifalias")
			return strings.TrimRight(string(b), "\n")
		},
		DeleteLink: func(ctx context.Context, name string) error {
			return exec.Command("ip", "link", "delete", name).Run(ctx)
		},
		NetnsDirs:     []string{"/run/netns", "/var/run/netns"},
		ShimSocketDir: "/run/containerd/s",
		FileDirs:      []string{"/var/log/pods", "/var/log/containers", "/var/lib/cni/results", "/var/lib/kubelet/device-plugins"},
		CNICacheDir:   "/var/lib/cni/results",
		Docker:        dockerCLI,
		Grace:         15 * time.Second,
		Log:           log,
	}
}

// kindClusterLabel is the label kind puts on a cluster's containers.
const kindClusterLabel = "io.x-k8s.kind.cluster"

// dockerCLI runs docker against the engine at host.
func dockerCLI(ctx context.Context, host string, args ...string) ([]byte, error) {
	c := exec.Command("docker", args...)
	if host != "" {
		c.Env = []string{"DOCKER_HOST=" + host}
	}
	return c.Output(ctx)
}

// removeDocker removes, through the engine the run used, the containers
// of the recorded kind clusters that are the run's and its network. kind
// labels its containers with the cluster's name only, so a container is
// the run's when it carries that label AND is attached to the run's
// network: the recorded network ID, or the network of the recorded name
// whose label RunLabel names the run (it is created with it). A network
// (and so the containers on it) labelled for another run, or for none, is
// left. Journals without a run ID (runs from before the labels) go by the
// names alone. An engine that does not answer (a private dockerd already
// gone) is not an error: its containers die with its shims.
func removeDocker(ctx context.Context, st journal.State, h Host) error {
	d := *st.Docker
	docker := func(args ...string) ([]byte, error) { return h.Docker(ctx, d.Host, args...) }
	if _, err := docker("version", "--format", "{{.Server.Version}}"); err != nil {
		return nil
	}
	var errs []error
	ours := "" // the ID of the network of the recorded name, when it is the run's
	if d.Network != "" {
		n, found, err := inspectNetwork(docker, d.Network)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !found:
		case st.RunID == "" || n.Labels[journal.RunLabel] == st.RunID:
			ours = n.ID
		default:
			h.logf("docker network %s is not this run's (label %s=%q, this run is %s): left, with the containers on it", d.Network, journal.RunLabel, n.Labels[journal.RunLabel], st.RunID)
		}
	}
	var networks []string
	if d.NetworkID != "" {
		networks = append(networks, d.NetworkID)
	}
	if ours != "" {
		// The name too: a container created but never started may carry
		// the network's name without its ID.
		networks = append(networks, ours, d.Network)
	}
	for _, name := range d.Clusters {
		args := []string{"ps", "-aq", "--filter", "label=" + kindClusterLabel + "=" + name}
		if st.RunID != "" {
			if len(networks) == 0 {
				h.logf("kind cluster %s: no network of this run's (recorded, or labelled for it) is there, so no container of that name is provably the run's: left", name)
				continue
			}
			for _, n := range networks {
				args = append(args, "--filter", "network="+n)
			}
		}
		out, err := docker(args...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, id := range strings.Fields(string(out)) {
			if _, err := docker("rm", "-f", "-v", id); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if ours != "" {
		if _, err := docker("network", "rm", ours); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type dockerNetwork struct {
	ID     string            `json:"Id"`
	Name   string            `json:"Name"`
	Labels map[string]string `json:"Labels"`
}

// inspectNetwork reads a network by name; found is false when the engine
// has none of that name.
func inspectNetwork(docker func(args ...string) ([]byte, error), name string) (n dockerNetwork, found bool, err error) {
	out, err := docker("network", "inspect", name)
	if err != nil {
		if strings.Contains(err.Error(), "No such network") || strings.Contains(err.Error(), "not found") {
			return n, false, nil
		}
		return n, false, err
	}
	var list []dockerNetwork
	if err := json.Unmarshal(out, &list); err != nil {
		return n, false, fmt.Errorf("docker network inspect %s: %w", name, err)
	}
	for _, x := range list {
		if x.Name == name {
			return x, true, nil
		}
	}
	return n, false, nil
}

// deleteLink deletes a recorded network interface that is the run's: for
// a run that tags its links (a run ID), only when the link's ifalias is
// the run's tag. A link tagged by another run is not the run's (the run's
// is gone): left. A link without a tag may be the run's (killed between
// making and tagging it) or anyone's: left, and the undo fails so that
// the journal stays until someone looks.
func deleteLink(ctx context.Context, st journal.State, h Host, name string) error {
	if !h.LinkExists(name) {
		return nil
	}
	if tag := st.Tag(); tag != "" {
		alias := ""
		if h.LinkAlias != nil {
			alias = h.LinkAlias(name)
		}
		switch alias {
		case tag:
		case "":
			return fmt.Errorf("%s has no ifalias, so nothing shows it is this run's (a run killed between making and tagging it, or someone else's): left; `ip link delete %s` by hand if it is this run's", name, name)
		default:
			h.logf("%s is not this run's (its ifalias is %q, this run's %q): left", name, alias, tag)
			return nil
		}
	}
	return h.DeleteLink(ctx, name)
}

func (h Host) logf(format string, args ...interface{}) {
	if h.Log != nil {
		fmt.Fprintf(h.Log, "cleanup: "+format+"\n", args...)
	}
}

// Undo undoes what st lists.
func Undo(ctx context.Context, st journal.State, h Host) error {
	root, err := rootdir.Clean(st.Root)
	if err != nil {
		return fmt.Errorf("journal's root: %w", err)
	}
	st.Root = root
	var errs []error
	step := func(name string, fn func() error) {
		start := time.Now()
		err := fn()
		status := "ok"
		if err != nil {
			status = "FAILED: " + err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		h.logf("%s (%.1fs) %s", name, time.Since(start).Seconds(), status)
	}
	boot, _ := h.Proc.BootID()
	sameBoot := st.BootID != "" && st.BootID == boot
	if sameBoot {
		if st.Cgroups != nil && len(st.Cgroups.Created) > 0 {
			// A process in a frozen cgroup does not die of SIGKILL, so
			// neither docker rm -f nor the kills below would end it.
			step("thaw the run's frozen cgroups", func() error { return cgroups.Thaw(h.Cgroups, *st.Cgroups) })
		}
		if st.Docker != nil && h.Docker != nil {
			step("remove the run's kind clusters and docker network", func() error { return removeDocker(ctx, st, h) })
		}
		step("stop the processes the run started", func() error { return stopProcesses(ctx, st, h) })
		step("kill the run's containers and containerd shims", func() error { return killTasks(ctx, st, h) })
		step("remove the run's shim sockets", func() error { return removeSockets(st, h) })
		step("remove the CNI results cached for the run's sandboxes", func() error { return removeCNICache(st, h) })
		if st.Docker != nil && st.Docker.DefaultBridge != "" {
			step("delete the private dockerd's bridge "+st.Docker.DefaultBridge, func() error { return deleteLink(ctx, st, h, st.Docker.DefaultBridge) })
		}
		if st.Bridge != "" {
			step("delete the bridge "+st.Bridge, func() error { return deleteLink(ctx, st, h, st.Bridge) })
		}
		if st.Subnet != "" {
			step("delete the connection tracking entries of "+st.Subnet, func() error { return flushConntrack(ctx, st, h) })
		}
		for _, ipt := range st.Iptables {
			ipt := ipt
			step("remove the "+ipt.Binary+" chains and rules the run added", func() error {
				return iptables.Restore(ctx, h.Iptables, ipt.Binary, ipt.Before)
			})
		}
		if st.Cgroups != nil && len(st.Cgroups.Created) > 0 {
			step("remove the cgroups the run created", func() error {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				return cgroups.Remove(cctx, h.Cgroups, *st.Cgroups, st.Since)
			})
		}
		if len(st.Sysctls) > 0 {
			step("restore the sysctls", func() error { return restoreSysctls(st, h) })
		}
	} else {
		h.logf("the journal is from boot %q, this is boot %q: its processes, mounts, links, iptables rules, cgroups and sysctls went with that boot", st.BootID, boot)
	}
	// Mounts under the root are the run's, whichever boot made them.
	step("unmount everything under "+root+", the run's own mounts under a private dockerd's data root and the run's netns", func() error { return unmountAll(st, h) })
	if len(st.Files) > 0 {
		step("remove the files the run's tools wrote outside the root", func() error { return removeFiles(st, h) })
	}
	if len(st.Dirs) > 0 {
		step("remove the empty directories the run created outside the root", func() error { return removeDirs(st, h) })
	}
	if len(errs) > 0 {
		h.logf("keeping %s and its journal: run the cleanup again once the failures above are fixed", root)
		return errors.Join(errs...)
	}
	step("remove "+root, func() error { return removeRoot(root, h) })
	return errors.Join(errs...)
}

// stopProcesses stops the recorded processes, last started first:
// SIGTERM, then SIGKILL after the grace period.
func stopProcesses(ctx context.Context, st journal.State, h Host) error {
	var errs []error
	for i := len(st.Processes) - 1; i >= 0; i-- {
		p := st.Processes[i]
		if p.PID == 0 {
			continue // recorded while starting: it never got a PID
		}
		if !h.Proc.Alive(p.ID) {
			continue
		}
		h.logf("stopping %s (pid %d, started by the run)", p.Name, p.PID)
		if err := h.Signal(p.ID, syscall.SIGTERM); err != nil {
			if errors.Is(err, procfs.ErrNotSame) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		if waitGone(ctx, h, []procfs.ID{p.ID}, h.Grace) {
			continue
		}
		h.logf("%s (pid %d) still runs after %s: SIGKILL", p.Name, p.PID, h.Grace)
		if err := h.Signal(p.ID, syscall.SIGKILL); err != nil && !errors.Is(err, procfs.ErrNotSame) {
			errs = append(errs, err)
			continue
		}
		if !waitGone(ctx, h, []procfs.ID{p.ID}, 10*time.Second) {
			errs = append(errs, fmt.Errorf("%s (pid %d) still runs after SIGKILL", p.Name, p.PID))
		}
	}
	return errors.Join(errs...)
}

// killTasks SIGKILLs the run's containers, then their shims.
func killTasks(ctx context.Context, st journal.State, h Host) error {
	_, err := killRunTasks(ctx, st, h, true)
	return err
}

// killRunTasks SIGKILLs the run's shims, after their containers when
// containers is set, and returns how many shims it found.
func killRunTasks(ctx context.Context, st journal.State, h Host, containers bool) (int, error) {
	if st.Containerd == nil {
		return 0, nil
	}
	run := shims.Run{Socket: st.Containerd.Socket, StateDir: st.Containerd.State, Recorded: st.Shims, Since: st.Since}
	if !under(run.StateDir, st.Root) {
		return 0, fmt.Errorf("containerd state dir %s is not under the root %s", run.StateDir, st.Root)
	}
	found, err := shims.Find(h.Proc, run)
	if err != nil {
		return 0, err
	}
	var inits []procfs.ID
	if containers {
		var ours func(string) bool
		if st.Cgroups != nil {
			ours = st.Cgroups.Ours
		}
		if inits, err = shims.Containers(h.Proc, run, found, ours); err != nil {
			return len(found), err
		}
	}
	var errs []error
	for _, group := range []struct {
		what string
		ids  []procfs.ID
	}{{"containers", inits}, {"shims", found}} {
		if len(group.ids) == 0 {
			continue
		}
		h.logf("killing the run's %s: %v", group.what, pids(group.ids))
		for _, id := range group.ids {
			if err := h.Signal(id, syscall.SIGKILL); err != nil && !errors.Is(err, procfs.ErrNotSame) {
				errs = append(errs, err)
			}
		}
		if !waitGone(ctx, h, group.ids, 10*time.Second) {
			errs = append(errs, fmt.Errorf("%s still run after SIGKILL", group.what))
		}
	}
	return len(found), errors.Join(errs...)
}

// unmountAll unmounts everything under the root, the run's own mounts
// under a private dockerd's data root, and the run's netns that were
// bind-mounted elsewhere, and removes those netns files.
func unmountAll(st journal.State, h Host) error {
	var errs []error
	if err := unmountWhere(h, st.Root, func(string) bool { return true }); err != nil {
		errs = append(errs, err)
	}
	if st.Docker != nil && st.Docker.DataRoot != "" {
		if err := unmountDataRoot(st, h); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ns := range netns(st) {
		if under(ns, st.Root) || strings.HasPrefix(ns, "/proc/") {
			continue // went with the root's mounts; /proc/<pid>/ns/net is no mount
		}
		if !inDirs(ns, h.NetnsDirs) || !strings.HasPrefix(filepath.Base(ns), "cni-") {
			errs = append(errs, fmt.Errorf("not touching netns %s: not a CNI netns under %v", ns, h.NetnsDirs))
			continue
		}
		if mps, _ := h.Mounts(ns); len(mps) > 0 {
			if err := h.Unmount(ns); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := os.Remove(ns); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unmountWhere unmounts the mount points at or under dir that pick
// selects, deepest first, until none is left (five rounds at most).
func unmountWhere(h Host, dir string, pick func(mp string) bool) error {
	var errs []error
	for attempt := 0; attempt < 5; attempt++ {
		mps, err := h.Mounts(dir)
		if err != nil {
			return err
		}
		var todo []string
		for _, mp := range mps {
			if pick(mp) {
				todo = append(todo, mp)
			}
		}
		if len(todo) == 0 {
			break
		}
		for _, mp := range todo {
			if err := h.Unmount(mp); err != nil && attempt == 4 {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// UnmountOnShutdown is the file dockerd writes in its exec root when it
// made its data root a mount of its own (a bind mount on itself, to make
// it shared): that mount is then the dockerd's, which unmounts it when it
// stops.
const UnmountOnShutdown = "unmount-on-shutdown"

// unmountDataRoot unmounts what the run's private dockerd left mounted
// under its data root, which runs share (KC_CACHE/docker, an flock keeps
// two dockerds off it): the mounts the run's task bundles name (its
// containers' root file systems, <data root>/overlay2/<id>/merged, and
// shm) and what is mounted under them; then the data root's own mount when
// the run's dockerd made it (UnmountOnShutdown in its exec root), no other
// run holds the data root's lock and nothing else is mounted under it.
// Anyone else's mounts there are left.
func unmountDataRoot(st journal.State, h Host) error {
	dataRoot := filepath.Clean(st.Docker.DataRoot)
	if !filepath.IsAbs(dataRoot) || dataRoot == "/" {
		return fmt.Errorf("data root %q: not an absolute directory", st.Docker.DataRoot)
	}
	var own []string
	if st.Containerd != nil && under(st.Containerd.State, st.Root) {
		tasks, err := shims.Tasks(st.Containerd.State)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			for _, p := range append([]string{t.Rootfs}, t.MountSources...) {
				if p != "" && p != dataRoot && under(p, dataRoot) {
					own = append(own, p)
				}
			}
		}
	}
	var errs []error
	if err := unmountWhere(h, dataRoot, func(mp string) bool {
		for _, o := range own {
			if under(mp, o) {
				return true
			}
		}
		return false
	}); err != nil {
		errs = append(errs, err)
	}

	execRoot := st.Docker.ExecRoot
	if execRoot == "" && st.Containerd != nil && st.Containerd.Config != "" {
		// Journals from before ExecRoot was recorded: the private
		// dockerd's layout (docker.Paths: <dir>/containerd.toml, <dir>/exec).
		execRoot = filepath.Join(filepath.Dir(st.Containerd.Config), "exec")
	}
	if execRoot == "" || !under(execRoot, st.Root) {
		return errors.Join(errs...)
	}
	if _, err := os.Lstat(filepath.Join(execRoot, UnmountOnShutdown)); err != nil {
		return errors.Join(errs...) // the data root's mount, if any, is not the run's dockerd's
	}
	mps, err := h.Mounts(dataRoot)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	self, others := 0, []string(nil)
	for _, mp := range mps {
		if mp == dataRoot {
			self++
		} else {
			others = append(others, mp)
		}
	}
	switch {
	case self == 0:
	case lockHeld(st.Docker.DataRootLock()):
		errs = append(errs, fmt.Errorf("%s is mounted on itself by this run's dockerd, and another run holds %s now: left; run the cleanup again once that run ended", dataRoot, st.Docker.DataRootLock()))
	case len(others) > 0:
		errs = append(errs, fmt.Errorf("%s is mounted on itself by this run's dockerd, but still mounted under it (not this run's): %s: left", dataRoot, strings.Join(others, ", ")))
	default:
		for i := 0; i < self; i++ {
			if err := h.Unmount(dataRoot); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	return errors.Join(errs...)
}

// lockHeld reports whether another open file holds an flock on path (a
// run's lock on the data root); a missing file is no lock.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	return false // closing f releases it
}

// netns lists the recorded netns and those the run's bundles name.
func netns(st journal.State) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, filepath.Clean(p))
		}
	}
	for _, ns := range st.Netns {
		add(ns)
	}
	if st.Containerd != nil && under(st.Containerd.State, st.Root) {
		tasks, _ := shims.Tasks(st.Containerd.State)
		for _, t := range tasks {
			add(t.Netns)
		}
	}
	return out
}

// removeSockets removes the shim sockets the journal and the run's
// bundles name, once their shims are gone.
func removeSockets(st journal.State, h Host) error {
	paths := map[string]bool{}
	for _, s := range st.ShimSockets {
		paths[s] = true
	}
	if st.Containerd != nil && under(st.Containerd.State, st.Root) {
		tasks, _ := shims.Tasks(st.Containerd.State)
		for _, t := range tasks {
			if t.Address != "" {
				paths[t.Address] = true
			}
		}
	}
	var errs []error
	for _, a := range sortedKeys(paths) {
		p := filepath.Clean(strings.TrimPrefix(a, "unix://"))
		if filepath.Dir(p) != filepath.Clean(h.ShimSocketDir) {
			errs = append(errs, fmt.Errorf("not touching %s: not in %s", a, h.ShimSocketDir))
			continue
		}
		fi, err := os.Lstat(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if fi.Mode()&os.ModeSocket == 0 {
			errs = append(errs, fmt.Errorf("not removing %s: not a socket", p))
			continue
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// conntrackAttempts bounds the conntrack -D runs per direction.
const conntrackAttempts = 3

// flushConntrack deletes the connection tracking entries from or to the
// run's subnet (probes and checks against pod IPs; TIME_WAIT ones would
// expire, others linger for days).
func flushConntrack(ctx context.Context, st journal.State, h Host) error {
	_, ipnet, err := net.ParseCIDR(st.Subnet)
	if err != nil {
		return fmt.Errorf("subnet %q: %w", st.Subnet, err)
	}
	if ones, bits := ipnet.Mask.Size(); bits-ones > 16 {
		return fmt.Errorf("subnet %s: wider than the run's bridge network can be (/%d at most)", ipnet, bits-16)
	}
	subnet := ipnet.String()
	var errs []error
	for _, dir := range []string{"-s", "-d"} {
		out, err := h.Conntrack(ctx, "conntrack", "-L", dir, subnet)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.TrimSpace(string(out)) == "" {
			continue
		}
		for attempt := 1; ; attempt++ {
			_, err := h.Conntrack(ctx, "conntrack", "-D", dir, subnet)
			if err == nil {
				break
			}
			// -D exits 1 ("such conntrack doesn't exist") when an entry
			// it listed went away before its delete (expired, closed);
			// it may leave others: list again, delete again (seen once
			// in 2026-11 with entries left after the first -D).
			if out, _ := h.Conntrack(ctx, "conntrack", "-L", dir, subnet); strings.TrimSpace(string(out)) == "" {
				break
			}
			if attempt == conntrackAttempts {
				errs = append(errs, err)
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return errors.Join(errs...)
}

var containerID = regexp.MustCompile(`^[0-9a-f]{64}$`)

// removeCNICache removes libcni's cached results of the run's sandboxes
// and containers (by their 64-hex IDs, from the run's state dir): a
// teardown that never ran leaves them, the loopback's included.
func removeCNICache(st journal.State, h Host) error {
	if st.Containerd == nil || h.CNICacheDir == "" || !under(st.Containerd.State, st.Root) {
		return nil
	}
	ids := shims.SandboxIDs(st.Containerd.State)
	tasks, _ := shims.Tasks(st.Containerd.State)
	for _, t := range tasks {
		ids = append(ids, t.ID)
	}
	var errs []error
	for _, id := range ids {
		if !containerID.MatchString(id) {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(h.CNICacheDir, "*-"+id+"-*"))
		for _, m := range matches {
			if err := os.Remove(m); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

var sysctlName = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)+$`)

// restoreSysctls writes back the values that changed.
func restoreSysctls(st journal.State, h Host) error {
	var errs []error
	for _, s := range st.Sysctls {
		if !sysctlName.MatchString(s.Name) {
			errs = append(errs, fmt.Errorf("not a sysctl name: %q", s.Name))
			continue
		}
		p := filepath.Join(h.SysctlDir, strings.ReplaceAll(s.Name, ".", "/"))
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.TrimSpace(string(b)) == s.Before {
			continue
		}
		h.logf("sysctl %s: %s -> %s (its value before the run)", s.Name, strings.TrimSpace(string(b)), s.Before)
		if err := os.WriteFile(p, []byte(s.Before), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("%s=%s: %w", s.Name, s.Before, err))
		}
	}
	return errors.Join(errs...)
}

// removeFiles removes the matches of the journal's globs (or exact paths)
// that did not exist before the run, and writes back those it saved.
func removeFiles(st journal.State, h Host) error {
	var errs []error
	for _, g := range st.Files {
		// A pattern names the run's files: in one of FileDirs, with a
		// literal part of four characters at least (never a bare "*").
		if !inDirs(g.Pattern, h.FileDirs) || len(strings.Trim(filepath.Base(g.Pattern), "*?_-.")) < 4 || strings.ContainsAny(filepath.Dir(g.Pattern), "*?[") {
			errs = append(errs, fmt.Errorf("not removing %s: not a pattern of the run's files in %v", g.Pattern, h.FileDirs))
			continue
		}
		if err := g.Undo(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeDirs removes the recorded directories that are empty, deepest
// first; a directory something else now uses stays.
func removeDirs(st journal.State, h Host) error {
	dirs := append([]string(nil), st.Dirs...)
	sort.SliceStable(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	for _, d := range dirs {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d {
			return fmt.Errorf("not a clean absolute path: %q", d)
		}
		err := syscall.Rmdir(d)
		switch {
		case err == nil:
		case errors.Is(err, syscall.ENOENT):
		case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST), errors.Is(err, syscall.EBUSY):
			h.logf("%s is not empty: left", d)
		default:
			return fmt.Errorf("rmdir %s: %w", d, err)
		}
	}
	return nil
}

// removeRoot removes the marked root, once nothing is mounted under it.
func removeRoot(root string, h Host) error {
	if _, err := os.Lstat(root); os.IsNotExist(err) {
		return nil
	}
	if err := rootdir.Owned(root); err != nil {
		return err
	}
	if mps, err := h.Mounts(root); err != nil || len(mps) > 0 {
		return fmt.Errorf("still mounted under %s: %v %v", root, mps, err)
	}
	return os.RemoveAll(root)
}

func waitGone(ctx context.Context, h Host, ids []procfs.ID, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		alive := false
		for _, id := range ids {
			if h.Proc.Alive(id) {
				alive = true
				break
			}
		}
		if !alive {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func under(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return filepath.IsAbs(p) && (p == dir || strings.HasPrefix(p, dir+"/"))
}

func inDirs(p string, dirs []string) bool {
	for _, d := range dirs {
		if filepath.Dir(filepath.Clean(p)) == filepath.Clean(d) {
			return true
		}
	}
	return false
}

func pids(ids []procfs.ID) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = id.PID
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// KillTasks is the undo's "kill the run's containers and containerd shims"
// during a run: a runtime swap whose containerd cannot stop the pods an
// older one started leaves them to this (scenario, runtime steps).
func KillTasks(ctx context.Context, st journal.State, h Host) error { return killTasks(ctx, st, h) }

// KillShims SIGKILLs the run's containerd shims alone, as systemd stops a
// containerd unit without KillMode=process (the runtime swap's negative
// control), and returns how many it found; their containers are left to
// the next containerd.
func KillShims(ctx context.Context, st journal.State, h Host) (int, error) {
	return killRunTasks(ctx, st, h, false)
}
