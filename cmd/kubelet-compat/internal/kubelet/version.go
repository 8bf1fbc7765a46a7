package kubelet

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/binversion"
)

// Version runs `<path> --version` and parses "Kubernetes v1.18.19". path is
// checked with TrustedBinary first and run by its resolved name; it is
// checked again right before, so that what runs is what was checked.
func Version(ctx context.Context, path string, rootUID int) (kubeletcompat.Version, error) {
	bin, err := TrustedBinary(path, rootUID)
	if err != nil {
		return kubeletcompat.Version{}, err
	}
	return bin.Version(ctx, rootUID)
}

// Version runs the binary with --version, if it is still the file that was
// checked.
func (b Binary) Version(ctx context.Context, rootUID int) (kubeletcompat.Version, error) {
	fi, err := os.Lstat(b.Path)
	if err != nil {
		return kubeletcompat.Version{}, fmt.Errorf("kubelet binary: %w", err)
	}
	if !os.SameFile(fi, b.Info) {
		return kubeletcompat.Version{}, fmt.Errorf("kubelet binary %s was replaced while being checked; try again", b.Path)
	}
	if err := checkTrusted(fi, rootUID); err != nil {
		return kubeletcompat.Version{}, fmt.Errorf("kubelet binary %s: %v: refusing to run it", b.Path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := binversion.Ask(ctx, b.Path, binversion.Args("kubelet")...)
	if err != nil {
		return kubeletcompat.Version{}, fmt.Errorf("kubelet version: %w", err)
	}
	return ParseVersionOutput(out)
}

// ParseVersionOutput parses the output of `kubelet --version`.
func ParseVersionOutput(out string) (kubeletcompat.Version, error) {
	f := strings.Fields(out)
	if len(f) != 2 || f[0] != "Kubernetes" {
		return kubeletcompat.Version{}, fmt.Errorf("kubelet version: unexpected `--version` output %q", strings.TrimSpace(out))
	}
	v, err := kubeletcompat.ParseVersion(f[1])
	if err != nil {
		return kubeletcompat.Version{}, fmt.Errorf("kubelet version: %w", err)
	}
	return v, nil
}
