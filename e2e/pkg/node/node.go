// Package node is what the e2e's scenarios need of a Kubernetes node,
// whichever provider made it: the local provider's host node or a kind
// node container.
package node

import (
	"context"
	"io"
	"os"

	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// Kubelet names a kubelet build: a version, patched or as released.
type Kubelet struct {
	Version string
	Patched bool
	// SkipLevel: the swap goes up more than one minor (the skip-level
	// flow); kubernetes-select refuses that without --force.
	SkipLevel bool
}

func (k Kubelet) String() string {
	if k.Patched {
		return k.Version + " (patched)"
	}
	return k.Version + " (unpatched)"
}

// Node is one node of a run.
type Node interface {
	// Name is the node's name in the API (--hostname-override).
	Name() string
	// Exec runs a command on the node and returns its stdout; stdin may
	// be nil.
	Exec(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error)
	// ReadFile and WriteFile work on the node's file system;
	// WriteFile replaces the file atomically.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error
	// Runtime dials the node's container runtime (CRI) for snapshots.
	Runtime(ctx context.Context) (*snapshot.Runtime, error)
	// SwapKubelet stops the running kubelet and starts k in its place.
	SwapKubelet(ctx context.Context, k Kubelet) error
}
