package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/capfilter"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/leftovers"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/images"
	"github.com/kubelet-compat/kubelet-compat/pkg/proc"
)

// Options configure the provider.
type Options struct {
	// Root is the private state directory (containerd, CNI, kubelet).
	Root string
	// LogDir receives containerd's log.
	LogDir string
	// RepoRoot is the repository (to build the pause binary).
	RepoRoot string
	// ExtraPaths' programs are installed too (hostdeps.LocalAPI: etcd).
	ExtraPaths []hostdeps.Path
	Log        io.Writer
}

// Node is a running local node: containerd with the e2e's images.
type Node struct {
	Paths
	// Journal records what the run makes (proc.Recorder for its
	// processes).
	Journal    *journal.Journal
	opts       Options
	containerd *proc.Process
	stack      *cleanup.Stack
	// spec is the run's containerd configuration, dist the containerd
	// running it (Debian's, until a runtime swap: runtimeswap.go).
	spec ContainerdSpec
	dist RuntimeDist
	// layout is the e2e's images, imported again by ResetRuntime.
	layout []byte
}

const (
	cniBinDir   = "/usr/lib/cni"
	snapshotter = "overlayfs"
	busyboxPath = "/bin/busybox" // hostdeps.Busybox
)

// Up brings a node up. Before it makes anything it writes the run's
// journal (<root>/journal.json: what exists now, and what the run is about
// to make) and pushes one undo for all of it on stack, so the caller's
// stack.Run undoes it, also after a failure here; after a SIGKILL,
// `e2e -mode cleanup` undoes the same journal.
func Up(ctx context.Context, opts Options, stack *cleanup.Stack) (*Node, error) {
	logf := func(format string, args ...interface{}) { fmt.Fprintf(opts.Log, "local: "+format+"\n", args...) }
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the local provider runs containerd and kubelets: run as root")
	}
	logf("checking the host's programs")
	if err := hostdeps.Ensure(ctx, opts.Log, append([]hostdeps.Path{hostdeps.Local}, opts.ExtraPaths...)...); err != nil {
		return nil, err
	}
	if LinkExists(DefaultNetwork.Bridge) {
		return nil, fmt.Errorf("network interface %s exists already: another e2e runs, or a previous one was killed (make e2e-cleanup)", DefaultNetwork.Bridge)
	}
	var n *Node
	root, err := journal.TakeRoot(opts.Root, stack, func() bool { return n != nil && n.Journal != nil })
	if err != nil {
		return nil, err
	}
	opts.Root = root
	n = &Node{Paths: Paths{Root: root}, opts: opts, stack: stack}
	if p, _ := filepath.Glob("/run/containerd/containerd.sock"); len(p) > 0 {
		logf("note: a system containerd socket exists; the e2e runs its own containerd at %s", n.ContainerdSocket())
	}

	st, err := n.before(ctx)
	if err != nil {
		return nil, err
	}
	j, err := journal.Create(st)
	if err != nil {
		return nil, err
	}
	n.Journal = j
	logf("journal %s: %d sysctls, %d iptables binaries, cgroups %s (%d to be created), %d directories to be created",
		journal.Path(root), len(st.Sysctls), len(st.Iptables), st.Cgroups.Mode, len(st.Cgroups.Created), len(st.Dirs))
	stack.Push("undo what the journal lists", func(ctx context.Context) error {
		return leftovers.Undo(ctx, j.State(), leftovers.Machine(opts.Log))
	})

	for _, d := range []string{n.ContainerdRoot(), n.ContainerdState(), n.CNIConfDir(), n.CNIDataDir(), opts.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}

	eff, err := capfilter.Read("/proc/self/status", "CapEff")
	if err != nil {
		return nil, err
	}
	hasRes := eff.Has("CAP_SYS_RESOURCE")
	n.spec = ContainerdSpec{Paths: n.Paths, SandboxImage: corpus.PauseImage, CNIBinDir: cniBinDir, RestrictOOMScoreAdj: !hasRes}
	if n.dist, err = DebianRuntime(ctx); err != nil {
		return nil, err
	}
	if err := n.writeConfig(n.dist); err != nil {
		return nil, err
	}
	conf, err := CNIConfList(DefaultNetwork, n.CNIDataDir())
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(n.CNIConfDir(), "10-kc-e2e.conflist"), []byte(conf), 0o644); err != nil {
		return nil, err
	}

	if err := n.StartContainerd(ctx); err != nil {
		return nil, err
	}
	stack.Push("stop containerd", func(ctx context.Context) error { return n.StopContainerd(ctx) })
	stopWatch := n.watch()
	stack.Push("stop recording shims", func(context.Context) error { stopWatch(); return nil })

	logf("building the pause and busybox images")
	if err := n.buildImages(ctx); err != nil {
		return nil, err
	}
	if err := n.importImages(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// buildImages builds the e2e's images as an OCI layout (n.layout).
func (n *Node) buildImages(ctx context.Context) error {
	pause, err := images.BuildPause(ctx, n.opts.RepoRoot, n.opts.Root)
	if err != nil {
		return err
	}
	pauseImg, err := images.Pause(corpus.PauseImage, pause)
	if err != nil {
		return err
	}
	bb1, err := images.Busybox(corpus.BusyboxImage, busyboxPath, 1)
	if err != nil {
		return err
	}
	bb2, err := images.Busybox(corpus.BusyboxVariantImage, busyboxPath, 2)
	if err != nil {
		return err
	}
	n.layout, _, err = images.Layout(pauseImg, bb1, bb2)
	return err
}

// importImages imports n.layout into the running containerd.
func (n *Node) importImages(ctx context.Context) error {
	names, err := images.Import(ctx, n.ContainerdSocket(), n.layout, snapshotter)
	if err != nil {
		return err
	}
	fmt.Fprintf(n.opts.Log, "local: imported %v through the containerd client\n", names)
	return nil
}

// StartContainerd starts containerd and waits until its CRI answers.
func (n *Node) StartContainerd(ctx context.Context) error {
	binary := n.dist.Containerd
	if binary == "" {
		binary = "containerd"
	}
	p, err := proc.Start(n.Journal, "containerd", binary, []string{"--config", n.ContainerdConfig()}, n.dist.env(), filepath.Join(n.opts.LogDir, "containerd.log"))
	if err != nil {
		return err
	}
	n.containerd = p
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ended, err := p.Exited(); ended {
			return fmt.Errorf("containerd exited: %v (see %s)", err, filepath.Join(n.opts.LogDir, "containerd.log"))
		}
		if _, err := os.Stat(n.ContainerdSocket()); err == nil {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := cri.Dial(dctx, n.RuntimeEndpoint(), cri.Options{Timeout: 5 * time.Second})
			cancel()
			if err == nil {
				fmt.Fprintf(n.opts.Log, "local: containerd pid %d ready (%s, CRI %s)\n", p.PID, c.Runtime().RuntimeVersion, c.APIVersion())
				c.Close()
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("containerd CRI not ready after 60s: %w", err)
			}
		} else if time.Now().After(deadline) {
			return fmt.Errorf("containerd socket %s missing after 60s", n.ContainerdSocket())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// StopContainerd stops containerd (its shims, and so the containers, keep
// running, as on a real node).
func (n *Node) StopContainerd(ctx context.Context) error {
	if n.containerd == nil {
		return nil
	}
	return n.containerd.Stop(ctx, 20*time.Second)
}

// RestartContainerd is the fault "containerd restarts during the upgrade".
func (n *Node) RestartContainerd(ctx context.Context) error {
	if err := n.StopContainerd(ctx); err != nil {
		return err
	}
	return n.StartContainerd(ctx)
}
