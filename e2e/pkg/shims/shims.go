// Package shims finds the containerd shims (and their containers) that an
// e2e run left behind.
package shims

import (
	"os"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/procfs"
)

// Run is what the journal knows about the run's containerd.
type Run struct {
	Socket   string
	StateDir string
	Recorded []procfs.ID
	Since    uint64
}

// Find returns the processes whose command line contains the socket path
// (the containerd shims of the e2e's containerd).
func Find(fs procfs.FS, r Run) ([]procfs.ID, error) {
	pids, err := fs.PIDs()
	if err != nil {
		return nil, err
	}
	var out []procfs.ID
	for _, pid := range pids {
		if pid == os.Getpid() {
			continue
		}
		args, err := fs.Cmdline(pid)
		if err != nil || !strings.Contains(strings.Join(args, "\x00"), r.Socket) {
			continue
		}
		id, err := fs.Identify(pid)
		if err != nil {
			continue
		}
		out = append(out, id)
	}
	return out, nil
}
