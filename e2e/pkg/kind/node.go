package kind

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/docker"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/node"
	"github.com/kubelet-compat/kubelet-compat/pkg/images"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// Node is one kind node: a container of the engine running systemd,
// containerd and the kubelet.
type Node struct {
	name   string
	role   string // control-plane or worker
	engine *docker.Engine
}

var _ node.Node = (*Node)(nil)

// NewNode is the node container name of engine, of role control-plane or
// worker (tests: a nil engine for a node that runs nothing).
func NewNode(name, role string, engine *docker.Engine) *Node {
	return &Node{name: name, role: role, engine: engine}
}

// Name is the container's name, which kind also makes the node's name.
func (n *Node) Name() string { return n.name }

// Exec runs a command in the node.
func (n *Node) Exec(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	a := []string{"exec"}
	if stdin != nil {
		a = append(a, "-i")
	}
	a = append(append(a, n.name), args...)
	cmd := n.engine.Command(a...)
	cmd.Stdin = stdin
	return cmd.Output(ctx)
}

// ReadFile reads a file of the node.
func (n *Node) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return n.Exec(ctx, nil, "cat", "--", path)
}

// WriteFile writes a file of the node through a temporary file and a
// rename, creating its directory.
func (n *Node) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	// A dot-file: the kubelet ignores it in its manifest directory.
	script := `set -e; d=$(dirname "$1"); t="$d/.$(basename "$1").kc-tmp"; mkdir -p "$d"; cat >"$t"; chmod "$2" "$t"; mv -f "$t" "$1"`
	_, err := n.Exec(ctx, bytes.NewReader(data), "sh", "-c", script, "sh", path, fmt.Sprintf("%o", mode.Perm()))
	if err != nil {
		return fmt.Errorf("%s: writing %s: %w", n.name, path, err)
	}
	return nil
}

// PID is the host PID of the node's init (systemd).
func (n *Node) PID(ctx context.Context) (int, error) {
	out, err := n.engine.Command("inspect", "--format", "{{.State.Pid}}", n.name).Output(ctx)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s: not running (pid %q)", n.name, strings.TrimSpace(string(out)))
	}
	return pid, nil
}

// Runtime dials the node's containerd through the node's root as the host
// sees it (/proc/<pid>/root): the e2e's CRI client reads the node's
// runtime as the local provider reads the host's.
func (n *Node) Runtime(ctx context.Context) (*snapshot.Runtime, error) {
	pid, err := n.PID(ctx)
	if err != nil {
		return nil, err
	}
	return snapshot.Dial(ctx, n.containerdSocket(pid))
}

func (n *Node) containerdSocket(pid int) string {
	return fmt.Sprintf("unix:///proc/%d/root/run/containerd/containerd.sock", pid)
}

// SwapKubelet selects k's stage2 with kubernetes-select, which stops the
// kubelet, switches the links and starts it again, as an operator does.
// The build must have been staged (rpm installed): the installed binary
// must be patched or not as k says.
func (n *Node) SwapKubelet(ctx context.Context, k node.Kubelet) error {
	if err := n.CheckStaged(ctx, k); err != nil {
		return err
	}
	if _, err := n.Exec(ctx, nil, selectArgs(k.SkipLevel, "--restart-kubelet", "stage2", k.Version)...); err != nil {
		return fmt.Errorf("%s: kubernetes-select stage2 %s: %w", n.name, k.Version, err)
	}
	return n.waitKubeletActive(ctx)
}

// selectArgs is a kubernetes-select command line; skipLevel adds --force,
// which kubernetes-select asks for to move a stage up more than one minor:
// a worker's kubeadm and kubelet in the skip-level flow.
func selectArgs(skipLevel bool, args ...string) []string {
	cmd := []string{"kubernetes-select"}
	if skipLevel {
		cmd = append(cmd, "--force")
	}
	return append(cmd, args...)
}

// CheckStaged checks that k's kubelet is installed on the node and is
// patched or not as k says.
func (n *Node) CheckStaged(ctx context.Context, k node.Kubelet) error {
	bin := "/usr/local/kubernetes/" + k.Version + "/stage2/usr/bin/kubelet"
	out, err := n.Exec(ctx, nil, bin, "--version")
	if err != nil {
		return fmt.Errorf("%s: kubelet %s is not installed: %w", n.name, k.Version, err)
	}
	got := strings.TrimSpace(string(out))
	if patched := strings.Contains(got, "+compat."); patched != k.Patched {
		return fmt.Errorf("%s: %s says %q, want %s", n.name, bin, got, k)
	}
	return nil
}

// waitKubeletActive waits until systemd reports the kubelet active.
func (n *Node) waitKubeletActive(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _ := n.Exec(ctx, nil, "systemctl", "is-active", "kubelet")
		state := strings.TrimSpace(string(out))
		if state == "active" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: kubelet is %q 60s after the swap", n.name, state)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// ImportLayout loads an OCI layout tar into the node's containerd (the
// k8s.io namespace), through its socket under /proc/<pid>/root: no
// registry, as air-gapped nodes are loaded.
func (n *Node) ImportLayout(ctx context.Context, layout []byte) error {
	pid, err := n.PID(ctx)
	if err != nil {
		return err
	}
	if _, err := images.Import(ctx, fmt.Sprintf("/proc/%d/root/run/containerd/containerd.sock", pid), layout, "overlayfs"); err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	return nil
}
