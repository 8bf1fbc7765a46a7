// Package binversion asks a Kubernetes binary which version it is. The
// harness, the RPM build and the CLI all ask; only the arguments differ
// from binary to binary.
package binversion

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// Args returns the arguments that make a Kubernetes binary, named by its
// path or base name, print its version: `--version` for the daemons,
// subcommands for kubeadm and kubectl (without --client kubectl would ask a
// cluster too).
func Args(binary string) []string {
	switch filepath.Base(binary) {
	case "kubeadm":
		return []string{"version", "-o", "short"}
	case "kubectl":
		return []string{"version", "--client"}
	}
	return []string{"--version"}
}

// Ask runs the binary at path with args and returns what it printed,
// trimmed. Errors name the command and carry the end of its stderr.
func Ask(ctx context.Context, path string, args ...string) (string, error) {
	out, err := exec.Command(path, args...).Output(ctx)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
