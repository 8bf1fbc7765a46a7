package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/node"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// HostNode is the local node as the scenarios see every node: the host
// itself, its containerd, and the kubelet the scenario runs (Swap).
type HostNode struct {
	*Node
	NodeName string
	// Swap stops the running kubelet and starts k: the scenario's, which
	// owns the kubelet process and its flags.
	Swap func(ctx context.Context, k node.Kubelet) error
}

var _ node.Node = (*HostNode)(nil)

func (h *HostNode) Name() string { return h.NodeName }

// Exec runs a command on the host.
func (h *HostNode) Exec(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no command")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin = stdin
	return cmd.Output(ctx)
}

func (h *HostNode) ReadFile(_ context.Context, path string) ([]byte, error) { return os.ReadFile(path) }

// WriteFile replaces path through a dot-file in its directory (the
// kubelet ignores dot-files in its manifest directory).
func (h *HostNode) WriteFile(_ context.Context, path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".kc-tmp")
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// Runtime dials the run's containerd.
func (h *HostNode) Runtime(ctx context.Context) (*snapshot.Runtime, error) {
	return snapshot.Dial(ctx, h.RuntimeEndpoint())
}

func (h *HostNode) SwapKubelet(ctx context.Context, k node.Kubelet) error {
	if h.Swap == nil {
		return fmt.Errorf("no kubelet to swap on %s", h.NodeName)
	}
	return h.Swap(ctx, k)
}
