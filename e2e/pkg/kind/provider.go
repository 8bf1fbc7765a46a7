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
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cgroups"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/docker"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/gotool"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/leftovers"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
)

// Tools the provider builds from the Go module proxy.
var (
	KindTool = gotool.Tool{Name: "kind", Package: "sigs.k8s.io/kind", Version: "v0.33.0"}
)

// Network is the docker network the run's clusters share (kind uses an
// existing network named by KIND_EXPERIMENTAL_DOCKER_NETWORK).
var Network = struct{ Name, Bridge, Subnet string }{"kc-e2e-kind", "kce2ekind0", "10.217.78.0/24"}

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
}

// Provider is an engine ready for the run's clusters.
type Provider struct {
	Engine  *docker.Engine
	Journal *journal.Journal
	Kind    string // the kind binary
	opts    Options
	daemon  *docker.Daemon
	machine Machine
}

// Machine is the host as the provider reads it before it makes anything;
// tests use fakes in temporary directories.
type Machine struct {
	// SysctlDir is /proc/sys; CgroupRoot /sys/fs/cgroup.
	SysctlDir, CgroupRoot string
	Proc                  procfs.FS
}

// HostMachine is this machine.
func HostMachine() Machine {
	return Machine{SysctlDir: "/proc/sys", CgroupRoot: "/sys/fs/cgroup", Proc: procfs.Host}
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
	// CLI, debootstrap, rpmbuild for the node RPMs, ...), before anything.
	if err := hostdeps.Ensure(ctx, opts.Log, hostdeps.Kind); err != nil {
		return nil, err
	}
	p := &Provider{opts: opts, machine: HostMachine()}
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

	st, err := p.before(private, dp)
	if err != nil {
		return nil, err
	}
	j, err := journal.Create(st)
	if err != nil {
		return nil, err
	}
	p.Journal = j
	stack.Push("undo what the journal lists", func(ctx context.Context) error {
		return leftovers.Undo(ctx, j.State(), leftovers.Machine(opts.Log))
	})

	if !private {
		p.Engine = user
		p.logf("using the Docker engine that answers here: %s", info)
	} else {
		p.logf("no Docker engine answers (%v): starting a private dockerd", firstLine(userErr))
		if err := hostdeps.Ensure(ctx, opts.Log, hostdeps.KindPrivateEngine); err != nil {
			return nil, err
		}
		unlock, err := cachelock.Lock(ctx, journal.Docker{DataRoot: DataRoot(opts.CacheDir)}.DataRootLock())
		if err != nil {
			return nil, err
		}
		stack.Push("release the lock on "+DataRoot(opts.CacheDir), func(context.Context) error { unlock(); return nil })
		runtime := filepath.Join(root, "bin", "e2e-oci-runtime")
		build := exec.Command("go", "build", "-trimpath", "-o", runtime, "./e2e/cmd/e2e-oci-runtime")
		build.Dir, build.Env = opts.RepoRoot, []string{"CGO_ENABLED=0"}
		if err := build.Run(ctx); err != nil {
			return nil, fmt.Errorf("building e2e-oci-runtime: %w", err)
		}
		d, err := docker.Start(ctx, docker.DaemonOptions{Paths: dp, DataRoot: DataRoot(opts.CacheDir), Runtime: runtime,
			Recorder: j, LogDir: opts.LogDir, Log: opts.Log})
		if d != nil || err == nil {
			stack.Push("stop the private dockerd", func(ctx context.Context) error { return d.Stop(ctx) })
		}
		if err != nil {
			return nil, err
		}
		p.daemon, p.Engine = d, &d.Engine
	}

	if p.Kind, err = gotool.Ensure(ctx, opts.CacheDir, KindTool, opts.Log); err != nil {
		return nil, err
	}
	if err := p.ensureNetwork(ctx); err != nil {
		return nil, err
	}
	stack.Push("remove the docker network "+Network.Name, func(ctx context.Context) error {
		return p.Engine.Command("network", "rm", Network.Name).Run(ctx)
	})
	return p, nil
}

// before records the machine before the run makes anything.
func (p *Provider) before(private bool, dp docker.Paths) (journal.State, error) {
	m := p.machine
	self, err := m.Proc.Self()
	if err != nil {
		return journal.State{}, err
	}
	boot, err := m.Proc.BootID()
	if err != nil {
		return journal.State{}, err
	}
	st := journal.State{Root: p.opts.Root, BootID: boot, Since: self.StartTicks, Started: time.Now(),
		Docker: &journal.Docker{Host: os.Getenv("DOCKER_HOST"), Network: Network.Name},
		// The nodes' kubelets write these on the host (privileged nodes see
		// its /proc/sys): recorded before any cluster starts, written back
		// by the undo.
		Sysctls: journal.ReadSysctls(m.SysctlDir, journal.KubeletSysctls)}
	if private {
		st.Docker.Host = "unix://" + dp.Socket()
		st.Docker.DataRoot = DataRoot(p.opts.CacheDir)
		st.Docker.DefaultBridge = docker.DefaultBridge.Name
		st.Containerd = &journal.Containerd{Config: dp.ContainerdConfig(), Root: dp.ContainerdRoot(), State: dp.ContainerdState(), Socket: dp.ContainerdSocket()}
		// The network's bridge exists only while a dockerd has it up: a
		// private one's is removed with it.
		st.Bridge = Network.Bridge
		cg, err := cgroups.Record(cgroups.Host{Root: m.CgroupRoot}, docker.CgroupParent)
		if err != nil {
			return journal.State{}, err
		}
		st.Cgroups = &cg
		for _, d := range []string{"/run/containerd/s", "/run/containerd"} {
			if _, err := os.Lstat(d); os.IsNotExist(err) {
				st.Dirs = append(st.Dirs, d)
			}
		}
	}
	return st, nil
}

// ensureNetwork creates the run's network. A private engine's leftover
// network (a killed run's) is the project's own and is replaced; on the
// user's engine an existing one is refused.
func (p *Provider) ensureNetwork(ctx context.Context) error {
	if _, err := p.Engine.Command("network", "inspect", Network.Name).Output(ctx); err == nil {
		if !p.Engine.Private {
			return fmt.Errorf("docker network %s exists already: another e2e runs, or a killed one left it (make e2e-cleanup, or docker network rm %s)", Network.Name, Network.Name)
		}
		if err := p.Engine.Command("network", "rm", Network.Name).Run(ctx); err != nil {
			return fmt.Errorf("removing a killed run's network %s: %w", Network.Name, err)
		}
	}
	if local.LinkExists(Network.Bridge) {
		return fmt.Errorf("network interface %s exists already: another e2e runs, or a killed one left it (make e2e-cleanup)", Network.Bridge)
	}
	return p.Engine.Command("network", "create", "--driver", "bridge", "--subnet", Network.Subnet,
		"--opt", "com.docker.network.bridge.name="+Network.Bridge, "--label", "kubelet-compat-e2e=true", Network.Name).Run(ctx)
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
