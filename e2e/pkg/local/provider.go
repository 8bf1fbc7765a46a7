package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cgroups"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/images"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/iptables"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/proc"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/rootdir"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/shims"
)

// Options configure the provider.
type Options struct {
	// Root is the private state directory (containerd, CNI, kubelet).
	Root string
	// LogDir receives containerd's log.
	LogDir string
	// RepoRoot is the repository (to build the pause binary).
	RepoRoot string
	// ExtraPackages are installed too (etcd-server in API mode).
	ExtraPackages []string
	Log           io.Writer
}

// Node is a running local node: containerd with the e2e's images.
type Node struct {
	Paths
	opts       Options
	containerd *proc.Process
	stack      *cleanup.Stack
}

const (
	cniBinDir   = "/usr/lib/cni"
	snapshotter = "overlayfs"
	busyboxPath = "/bin/busybox"
)

// Up brings a node up; every change it makes pushes its undo on stack,
// so the caller's stack.Run undoes it all, also after a failure here.
func Up(ctx context.Context, opts Options, stack *cleanup.Stack) (*Node, error) {
	logf := func(format string, args ...interface{}) { fmt.Fprintf(opts.Log, "local: "+format+"\n", args...) }
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the local provider runs containerd and kubelets: run as root")
	}
	root, err := rootdir.Claim(opts.Root)
	if err != nil {
		return nil, err
	}
	opts.Root = root
	n := &Node{Paths: Paths{Root: root}, opts: opts, stack: stack}
	logf("checking Debian packages")
	if err := EnsurePackages(ctx, opts.Log, append(append([]string{}, Packages...), opts.ExtraPackages...)); err != nil {
		return nil, err
	}
	if p, _ := filepath.Glob("/run/containerd/containerd.sock"); len(p) > 0 {
		logf("note: a system containerd socket exists; the e2e runs its own containerd at %s", n.ContainerdSocket())
	}
	if LinkExists(DefaultNetwork.Bridge) {
		return nil, fmt.Errorf("network interface %s exists already: another e2e runs, or a previous one was killed (ip link delete %s)", DefaultNetwork.Bridge, DefaultNetwork.Bridge)
	}

	restoreSysctls, err := SaveSysctls(KubeletSysctls)
	if err != nil {
		return nil, err
	}
	stack.Push("restore sysctls "+fmt.Sprint(KubeletSysctls), restoreSysctls)
	for _, bin := range []string{"iptables", "ip6tables"} {
		bin := bin
		before, err := iptables.Save(ctx, iptables.Exec, bin)
		if err != nil {
			if bin == "ip6tables" {
				continue
			}
			return nil, fmt.Errorf("reading %s rules: %w", bin, err)
		}
		stack.Push("remove the "+bin+" chains and rules added by the kubelet", func(ctx context.Context) error {
			return iptables.Restore(ctx, iptables.Exec, bin, before)
		})
	}
	cgHost := cgroups.Host{Root: "/sys/fs/cgroup", Proc: procfs.Host, Kill: func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }}
	cgs, err := cgroups.Record(cgHost, "kubepods")
	if err != nil {
		return nil, err
	}
	stack.Push("remove the kubepods cgroups", func(ctx context.Context) error { return cgroups.Remove(ctx, cgHost, cgs, 0) })
	stack.Push("remove pod logs of namespace "+corpus.Namespace, func(context.Context) error { return RemovePodLogs(corpus.Namespace) })

	for _, d := range []string{n.ContainerdRoot(), n.ContainerdState(), n.CNIConfDir(), n.CNIDataDir(), opts.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	stack.Push("remove "+root, func(context.Context) error {
		if err := rootdir.Owned(root); err != nil {
			return err
		}
		if err := UnmountUnder(root); err != nil {
			return err
		}
		return os.RemoveAll(root)
	})
	stack.Push("delete the CNI bridge "+DefaultNetwork.Bridge, func(ctx context.Context) error { return DeleteLink(ctx, DefaultNetwork.Bridge) })
	stack.Push("unmount everything under "+opts.Root, func(context.Context) error { return UnmountUnder(opts.Root) })
	self, err := procfs.Host.Self()
	if err != nil {
		return nil, err
	}
	stack.Push("kill leftover containerd shims", func(context.Context) error {
		// Only shims our state dir names, started after this run, serving
		// our socket: never a process because of its command line alone.
		found, err := shims.Find(procfs.Host, shims.Run{Socket: n.ContainerdSocket(), StateDir: n.ContainerdState(), Since: self.StartTicks})
		var pids []int
		for _, id := range found {
			if procfs.Signal(id, syscall.SIGKILL) == nil {
				pids = append(pids, id.PID)
			}
		}
		if len(pids) > 0 {
			fmt.Fprintf(opts.Log, "cleanup: killed leftover shims %v\n", pids)
			time.Sleep(time.Second)
		}
		return err
	})

	hasRes, err := HasCapability(CapSysResource)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(n.ContainerdConfig(), []byte(ContainerdConfig(n.Paths, corpus.PauseImage, cniBinDir, !hasRes)), 0o644); err != nil {
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

	logf("building the pause and busybox images")
	pause, err := images.BuildPause(ctx, opts.RepoRoot, opts.Root)
	if err != nil {
		return nil, err
	}
	pauseImg, err := images.Pause(corpus.PauseImage, pause)
	if err != nil {
		return nil, err
	}
	bb1, err := images.Busybox(corpus.BusyboxImage, busyboxPath, 1)
	if err != nil {
		return nil, err
	}
	bb2, err := images.Busybox(corpus.BusyboxVariantImage, busyboxPath, 2)
	if err != nil {
		return nil, err
	}
	layout, _, err := images.Layout(pauseImg, bb1, bb2)
	if err != nil {
		return nil, err
	}
	names, err := images.Import(ctx, n.ContainerdSocket(), layout, snapshotter)
	if err != nil {
		return nil, err
	}
	logf("imported %v through the containerd client", names)
	return n, nil
}

// StartContainerd starts containerd and waits until its CRI answers.
func (n *Node) StartContainerd(ctx context.Context) error {
	p, err := proc.Start("containerd", "containerd", []string{"--config", n.ContainerdConfig()}, nil, filepath.Join(n.opts.LogDir, "containerd.log"))
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
