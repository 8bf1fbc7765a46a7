package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultBinary is the kubelet binary when none is configured.
const DefaultBinary = "/usr/bin/kubelet"

// Binary is a kubelet binary that passed TrustedBinary's checks.
type Binary struct {
	// Path is the configured path with symlinks resolved.
	Path string
	Info os.FileInfo
}

// TrustedBinary resolves path through symlinks and checks that what it names
// may be run as root: an absolute path to a regular file owned by rootUID that
// neither group nor others may write.
func TrustedBinary(path string, rootUID int) (Binary, error) {
	if !filepath.IsAbs(path) {
		return Binary{}, fmt.Errorf("kubelet binary %q: want an absolute path", path)
	}
	resolved, err := filepath.EvalSymlinks(path)
	if os.IsNotExist(err) {
		return Binary{}, fmt.Errorf("kubelet binary %s does not exist (give --kubelet-binary)", path)
	}
	if err != nil {
		return Binary{}, fmt.Errorf("kubelet binary: %w", err)
	}
	fi, err := os.Lstat(resolved)
	if err != nil {
		return Binary{}, fmt.Errorf("kubelet binary: %w", err)
	}
	if err := checkTrusted(fi, rootUID); err != nil {
		return Binary{}, fmt.Errorf("kubelet binary %s: %v: refusing to run it", describe(path, resolved), err)
	}
	return Binary{Path: resolved, Info: fi}, nil
}

func checkTrusted(fi os.FileInfo, rootUID int) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (mode %s)", fi.Mode())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != rootUID {
		return fmt.Errorf("not owned by uid %d", rootUID)
	}
	if fi.Mode().Perm()&0022 != 0 {
		return fmt.Errorf("writable by group or others (mode %s)", fi.Mode().Perm())
	}
	return nil
}

func describe(path, resolved string) string {
	if path == resolved {
		return path
	}
	return path + " (" + resolved + ")"
}
