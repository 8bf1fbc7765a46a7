// Package kind is the e2e's kind provider: kubeadm clusters of the
// harness's kubelets in kind node containers, built locally (package
// nodeimage: no registry), upgraded the way operators upgrade, with the
// same snapshots and assertions as the local provider.
//
// It uses the user's Docker engine when one answers; otherwise it starts a
// private dockerd (Debian's docker.io) that changes nothing on the host's
// network configuration (no iptables rules, no ip_forward, no default
// bridge), records it in the run's journal like the local provider's
// processes, and stops it again.
package kind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cgroups"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/docker"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/gotool"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/leftovers"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
)

// Tools the provider builds from the Go module proxy.
var (
	KindTool = gotool.Tool{Name: "kind", Package: "sigs.k8s.io/kind", Version: "v0.33.0"}
)

// Network is the docker network the run's clusters share (kind uses an
// existing network named by KIND_EXPERIMENTAL_DOCKER_NETWORK).
var Network = DockerNetwork{"kc-e2e-kind", "kce2ekind0", "10.217.78.0/24"}

// DockerNetwork is a docker network the run makes: its name, its bridge's
// interface name and its subnet.
type DockerNetwork struct{ Name, Bridge, Subnet string }

// CAPDNetwork is the name Cluster API's Docker provider (CAPD) puts every
// container on (its DefaultNetwork): a run whose management cluster runs
// CAPD names its network so (Options.NetworkName), with Network's bridge
// and subnet.
const CAPDNetwork = "kind"

// Options configure the provider.
type Options struct {
	// Root is the run's private directory (journal, a private dockerd's
	// sockets and state, cluster configs and kubeconfigs).
	Root string
	// CacheDir is KC_CACHE: a private dockerd's image store
	// (<cache>/docker) and the kind binary.
	CacheDir string
	// RepoRoot is the repository (to build e2e-oci-runtime).
	RepoRoot string
	LogDir   string
	Log      io.Writer
	// NetworkName names the run's network (empty: Network.Name).
	NetworkName string
}

// Provider is an engine ready for the run's clusters.
type Provider struct {
	Engine  *docker.Engine
	Journal *journal.Journal
	Kind    string // the kind binary
	opts    Options
	// net is the run's network: Network, named by Options.NetworkName.
	net     DockerNetwork
	daemon  *docker.Daemon
	machine Machine
	// docker runs the docker CLI against Engine; undoHost is where the
	// journal's undo acts (tests: fakes).
	docker   func(ctx context.Context, args ...string) ([]byte, error)
	undoHost leftovers.Host
}

// Machine is the host as the provider reads it before it makes anything;
// tests use fakes in temporary directories.
type Machine struct {
	// SysctlDir is /proc/sys; CgroupRoot /sys/fs/cgroup.
	SysctlDir, CgroupRoot string
	Proc                  procfs.FS
	// OutsideDirs are directories outside the root a private engine's
	// shims create (/run/containerd/s): journaled when missing.
	OutsideDirs []string
	// LinkExists, LinkAlias (its ifalias) and SetLinkAlias: network
	// interfaces.
	LinkExists   func(name string) bool
	LinkAlias    func(name string) string
	SetLinkAlias func(ctx context.Context, name, alias string) error
}

// HostMachine is this machine.
func HostMachine() Machine {
	h := leftovers.Machine(nil)
	return Machine{SysctlDir: "/proc/sys", CgroupRoot: "/sys/fs/cgroup", Proc: procfs.Host,
		OutsideDirs: []string{"/run/containerd/s", "/run/containerd"},
		LinkExists:  h.LinkExists, LinkAlias: h.LinkAlias,
		SetLinkAlias: func(ctx context.Context, name, alias string) error {
			return exec.Command("ip", "link", "set", "dev", name, "alias", alias).Run(ctx)
		}}
}

func (p *Provider) logf(format string, args ...interface{}) {
	fmt.Fprintf(p.opts.Log, "%s kind: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// DataRoot is a private dockerd's image store.
func DataRoot(cacheDir string) string { return filepath.Join(cacheDir, "docker") }

// Up readies the engine, the kind binary and the network. Everything it
// makes is undone by stack (and, after a SIGKILL, by `e2e -mode cleanup`
// from the journal).
func Up(ctx context.Context, opts Options, stack *cleanup.Stack) (*Provider, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the kind provider reads the nodes' runtimes through /proc/<pid>/root: run as root")
	}
	// Every program the provider and its image builder run (the docker
	// CLI, debootstrap, dpkg-deb for the node packages, ...), before anything.
	if err := hostdeps.Ensure(ctx, opts.Log, hostdeps.Kind); err != nil {
		return nil, err
	}
	p := &Provider{opts: opts, net: Network, machine: HostMachine(), undoHost: leftovers.Machine(opts.Log)}
	if opts.NetworkName != "" {
		p.net.Name = opts.NetworkName
	}
	p.docker = func(ctx context.Context, args ...string) ([]byte, error) {
		return p.Engine.Command(args...).Output(ctx)
	}
	root, err := journal.TakeRoot(opts.Root, stack, func() bool { return p.Journal != nil })
	if err != nil {
		return nil, err
	}
	p.opts.Root = root
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, err
	}

	// The user's engine when one answers: the users' case.
	user := &docker.Engine{}
	info, userErr := user.Info(ctx)
	private := userErr != nil
	dp := docker.Paths{Root: filepath.Join(root, "docker")}

	if !private {
		p.Engine = user
		p.logf("using the Docker engine that answers here: %s", info)
	} else {
		p.logf("no Docker engine answers (%v): starting a private dockerd", firstLine(userErr))
		if err := hostdeps.Ensure(ctx, opts.Log, hostdeps.KindPrivateEngine); err != nil {
			return nil, err
		}
		p.Engine = &docker.Engine{Env: []string{"DOCKER_HOST=unix://" + dp.Socket()}, Private: true}
	}
	// The kind binary first (a build into the cache): the network follows
	// the private dockerd's start at once.
	if p.Kind, err = gotool.Ensure(ctx, opts.CacheDir, KindTool, opts.Log); err != nil {
		return nil, err
	}
	lock := func(ctx context.Context) (func(), error) {
		return cachelock.Lock(ctx, journal.Docker{DataRoot: DataRoot(opts.CacheDir)}.DataRootLock())
	}
	if err := p.journalRun(ctx, private, dp, lock, stack); err != nil {
		return nil, err
	}
	if private {
		runtime := filepath.Join(root, "bin", "e2e-oci-runtime")
		build := exec.Command("go", "build", "-trimpath", "-o", runtime, "./e2e/cmd/e2e-oci-runtime")
		build.Dir, build.Env = opts.RepoRoot, []string{"CGO_ENABLED=0"}
		if err := build.Run(ctx); err != nil {
			return nil, fmt.Errorf("building e2e-oci-runtime: %w", err)
		}
		d, err := docker.Start(ctx, docker.DaemonOptions{Paths: dp, DataRoot: DataRoot(opts.CacheDir), Runtime: runtime,
			Recorder: p.Journal, BridgeAlias: p.Journal.State().Tag(), LogDir: opts.LogDir, Log: opts.Log})
		if d != nil || err == nil {
			stack.Push("stop the private dockerd", func(ctx context.Context) error { return d.Stop(ctx) })
		}
		if err != nil {
			return nil, err
		}
		p.daemon, p.Engine = d, &d.Engine
	}

	if err := p.ensureNetwork(ctx); err != nil {
		return nil, err
	}
	stack.Push("remove the docker network "+p.net.Name, func(ctx context.Context) error {
		_, err := p.docker(ctx, "network", "rm", p.Journal.State().Docker.NetworkID)
		return err
	})
	return p, nil
}

// journalRun writes the run's journal and pushes its undo on stack,
// claiming what the run will make only once it is free: every name is
// checked before it is journaled, and a name in use refuses the run with
// one line (nothing of it journaled, so the undo cannot touch it). A
// private engine checks twice: before it waits for the data root's lock
// (lock), and again once it holds it (a run that held the data root may
// have made them meanwhile). The sysctls the nodes' kubelets write are
// journaled with the names, before any cluster starts.
func (p *Provider) journalRun(ctx context.Context, private bool, dp docker.Paths, lock func(context.Context) (func(), error), stack *cleanup.Stack) error {
	if err := p.checkFree(ctx, private); err != nil {
		return err
	}
	st, err := p.start(private, dp)
	if err != nil {
		return err
	}
	j, err := journal.Create(st)
	if err != nil {
		return err
	}
	p.Journal = j
	stack.Push("undo what the journal lists", func(ctx context.Context) error {
		return leftovers.Undo(ctx, j.State(), p.undoHost)
	})
	if !private {
		return j.Update(func(st *journal.State) {
			st.Docker.Network = p.net.Name
			st.Sysctls = journal.ReadSysctls(p.machine.SysctlDir, journal.KubeletSysctls)
		})
	}
	unlock, err := lock(ctx)
	if err != nil {
		return err
	}
	stack.Push("release the lock on "+DataRoot(p.opts.CacheDir), func(context.Context) error { unlock(); return nil })
	if err := p.checkFree(ctx, true); err != nil {
		return err
	}
	return p.claimPrivate(dp)
}

// checkFree refuses, in one line, a run whose names are in use: the
// network's bridge (on the user's engine too: its dockerd would take an
// existing bridge of that name as the network's), a private engine's
// default bridge and containers' cgroup parent, the user's engine's
// network.
func (p *Provider) checkFree(ctx context.Context, private bool) error {
	links := []string{p.net.Bridge}
	if private {
		links = []string{docker.DefaultBridge.Name, p.net.Bridge}
	}
	for _, l := range links {
		if p.machine.LinkExists(l) {
			return fmt.Errorf("network interface %s exists already (ifalias %q): another e2e runs, or a killed one left it (make e2e-cleanup)", l, p.machine.LinkAlias(l))
		}
	}
	if private {
		cg, err := cgroups.Record(cgroups.Host{Root: p.machine.CgroupRoot}, docker.CgroupParent)
		if err != nil {
			return err
		}
		if len(cg.Existing) > 0 {
			return fmt.Errorf("cgroup %s exists already (%s): another e2e's private dockerd runs, or a killed one left it (make e2e-cleanup)", docker.CgroupParent, strings.Join(cg.Existing, ", "))
		}
		return nil
	}
	n, found, err := p.inspectNetwork(ctx)
	if err != nil {
		return err
	}
	if found {
		return fmt.Errorf("docker network %s exists already (label %s=%q): another e2e runs, or a killed one left it (make e2e-cleanup, or docker network rm %s)", p.net.Name, journal.RunLabel, n.Labels[journal.RunLabel], p.net.Name)
	}
	return nil
}

// start is the journal before the run claims anything: its root, boot,
// start, ID and engine.
func (p *Provider) start(private bool, dp docker.Paths) (journal.State, error) {
	self, err := p.machine.Proc.Self()
	if err != nil {
		return journal.State{}, err
	}
	boot, err := p.machine.Proc.BootID()
	if err != nil {
		return journal.State{}, err
	}
	id, err := journal.NewRunID()
	if err != nil {
		return journal.State{}, err
	}
	host := os.Getenv("DOCKER_HOST")
	if private {
		host = "unix://" + dp.Socket()
	}
	return journal.State{Root: p.opts.Root, BootID: boot, Since: self.StartTicks, Started: time.Now(), RunID: id,
		Docker: &journal.Docker{Host: host}}, nil
}

// claimPrivate journals what a private engine makes, once checked free
// and while the run holds the data root: its bridges, data root and exec
// root, containerd, the containers' cgroup parent (then made here: mkdir
// fails when it appeared since the check, and that one is dropped from
// the journal), the directories its shims create, and the sysctls.
func (p *Provider) claimPrivate(dp docker.Paths) error {
	cg, err := cgroups.Record(cgroups.Host{Root: p.machine.CgroupRoot}, docker.CgroupParent)
	if err != nil {
		return err
	}
	if err := p.Journal.Update(func(st *journal.State) {
		st.Docker.Network = p.net.Name
		st.Docker.DataRoot = DataRoot(p.opts.CacheDir)
		st.Docker.ExecRoot = dp.ExecRoot()
		st.Docker.DefaultBridge = docker.DefaultBridge.Name
		st.Containerd = &journal.Containerd{Config: dp.ContainerdConfig(), Root: dp.ContainerdRoot(), State: dp.ContainerdState(), Socket: dp.ContainerdSocket()}
		// The network's bridge stays when dockerd dies: the undo deletes
		// it (with the run's tag).
		st.Bridge = p.net.Bridge
		st.Cgroups = &cg
		for _, d := range p.machine.OutsideDirs {
			if _, err := os.Lstat(d); os.IsNotExist(err) {
				st.Dirs = append(st.Dirs, d)
			}
		}
		st.Sysctls = journal.ReadSysctls(p.machine.SysctlDir, journal.KubeletSysctls)
	}); err != nil {
		return err
	}
	return p.claimCgroups(cg)
}

// claimCgroups makes the journaled cgroups (dockerd's --cgroup-parent;
// runc would make it anyway): the one whose mkdir fails because it
// exists is someone else's, dropped from the journal, and the run is
// refused.
func (p *Provider) claimCgroups(cg cgroups.Recorded) error {
	for _, c := range cg.Created {
		err := os.Mkdir(c, 0o755)
		if err == nil {
			continue
		}
		if os.IsExist(err) {
			uerr := p.Journal.Update(func(st *journal.State) {
				var keep []string
				for _, x := range st.Cgroups.Created {
					if x != c {
						keep = append(keep, x)
					}
				}
				st.Cgroups.Created = keep
			})
			return errors.Join(fmt.Errorf("cgroup %s exists already (%s, made since the check): another e2e's private dockerd runs (make e2e-cleanup)", docker.CgroupParent, c), uerr)
		}
		return fmt.Errorf("making cgroup %s: %w", c, err)
	}
	return nil
}

type dockerNetwork struct {
	ID     string            `json:"Id"`
	Name   string            `json:"Name"`
	Labels map[string]string `json:"Labels"`
}

// inspectNetwork reads the run's network by name from the engine.
func (p *Provider) inspectNetwork(ctx context.Context) (n dockerNetwork, found bool, err error) {
	out, err := p.docker(ctx, "network", "inspect", p.net.Name)
	if err != nil {
		if strings.Contains(err.Error(), "No such network") || strings.Contains(err.Error(), "not found") {
			return n, false, nil
		}
		return n, false, fmt.Errorf("checking docker network %s is free: %w", p.net.Name, err)
	}
	var list []dockerNetwork
	if err := json.Unmarshal(out, &list); err != nil {
		return n, false, fmt.Errorf("docker network inspect %s: %w", p.net.Name, err)
	}
	for _, x := range list {
		if x.Name == p.net.Name {
			return x, true, nil
		}
	}
	return n, false, nil
}

// ensureNetwork creates the run's network with the run's labels and
// journals its ID; a private engine's bridge for it gets the run's tag.
// A private engine's leftover network (a killed run's, in the data root's
// store: the run holds the data root) is replaced; on the user's engine
// the network was checked free, and one that appeared since is refused.
func (p *Provider) ensureNetwork(ctx context.Context) error {
	st := p.Journal.State()
	n, found, err := p.inspectNetwork(ctx)
	if err != nil {
		return err
	}
	if found {
		if !p.Engine.Private {
			return fmt.Errorf("docker network %s exists already (label %s=%q): another e2e runs, or a killed one left it (make e2e-cleanup, or docker network rm %s)", p.net.Name, journal.RunLabel, n.Labels[journal.RunLabel], p.net.Name)
		}
		p.logf("removing a killed run's network %s (label %s=%q) from the private engine's store", p.net.Name, journal.RunLabel, n.Labels[journal.RunLabel])
		if _, err := p.docker(ctx, "network", "rm", n.ID); err != nil {
			return fmt.Errorf("removing a killed run's network %s: %w", p.net.Name, err)
		}
	}
	if p.machine.LinkExists(p.net.Bridge) {
		return fmt.Errorf("network interface %s exists already (ifalias %q): another e2e runs, or a killed one left it (make e2e-cleanup)", p.net.Bridge, p.machine.LinkAlias(p.net.Bridge))
	}
	out, err := p.docker(ctx, "network", "create", "--driver", "bridge", "--subnet", p.net.Subnet,
		"--opt", "com.docker.network.bridge.name="+p.net.Bridge,
		"--label", journal.RunLabel+"="+st.RunID, "--label", journal.RootLabel+"="+st.Root, p.net.Name)
	if err != nil {
		return err
	}
	id := strings.TrimSpace(string(out))
	if err := p.Journal.Update(func(st *journal.State) { st.Docker.NetworkID = id }); err != nil {
		return err
	}
	if p.Engine.Private {
		if err := p.machine.SetLinkAlias(ctx, p.net.Bridge, st.Tag()); err != nil {
			return fmt.Errorf("tagging the bridge %s: %w", p.net.Bridge, err)
		}
	}
	return nil
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// EngineSocket is the Docker engine's socket on this host: what a
// management cluster's CAPD mounts to make its containers.
func (p *Provider) EngineSocket() string {
	for _, e := range append(append([]string(nil), p.Engine.Env...), "DOCKER_HOST="+os.Getenv("DOCKER_HOST")) {
		if v, ok := strings.CutPrefix(e, "DOCKER_HOST=unix://"); ok {
			return v
		}
	}
	return "/var/run/docker.sock"
}

// Private says whether the run started its own dockerd.
func (p *Provider) Private() bool { return p.Engine.Private }

// RaiseSysctl sets a host sysctl to at least min, its value before the run
// journaled first so that the undo (and make e2e-cleanup) writes it back:
// e.g. fs.inotify.max_user_instances, which a dozen node containers'
// systemd and kubelets exhaust at its default of 128 (a new node's
// systemd then exits: "Failed to create control group inotify object:
// Too many open files").
func (p *Provider) RaiseSysctl(name string, min int) error {
	path := filepath.Join(p.machine.SysctlDir, strings.ReplaceAll(name, ".", "/"))
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cur, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("sysctl %s: %q is not a number", name, strings.TrimSpace(string(b)))
	}
	if cur >= min {
		return nil
	}
	if err := p.Journal.Update(func(st *journal.State) {
		for _, s := range st.Sysctls {
			if s.Name == name {
				return
			}
		}
		st.Sysctls = append(st.Sysctls, journal.Sysctl{Name: name, Before: strconv.Itoa(cur)})
	}); err != nil {
		return err
	}
	p.logf("sysctl %s: %d -> %d (written back at the end of the run)", name, cur, min)
	return os.WriteFile(path, []byte(strconv.Itoa(min)), 0o644)
}
