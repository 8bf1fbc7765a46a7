package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// Systemd asks systemd for the main PID of the kubelet's unit.
type Systemd struct {
	// RunDir exists when systemd is the init system (sd_booted(3)).
	RunDir string
	// Systemctl is systemctl's absolute path; empty: the first of
	// systemctlPaths that exists.
	Systemctl string
	// Unit is the kubelet's unit; empty: kubelet.service.
	Unit string
}

// DefaultSystemd is the host's systemd.
var DefaultSystemd = Systemd{RunDir: "/run/systemd/system"}

var systemctlPaths = []string{"/usr/bin/systemctl", "/bin/systemctl"}

func (s Systemd) unit() string {
	if s.Unit == "" {
		return "kubelet.service"
	}
	return s.Unit
}

// mainPID returns the unit's main PID: 0 when systemd does not run or the
// unit runs no process.
func (s Systemd) mainPID(ctx context.Context) (int, error) {
	if s.RunDir == "" {
		return 0, nil
	}
	if fi, err := os.Stat(s.RunDir); err != nil || !fi.IsDir() {
		return 0, nil
	}
	systemctl, err := s.systemctl()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.Command(systemctl, "show", "--property", "MainPID", "--value", s.unit()).Output(ctx)
	if err != nil {
		return 0, fmt.Errorf("asking systemd for the main PID of %s: %w (give --kubelet-pid)", s.unit(), err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid < 0 {
		return 0, fmt.Errorf("systemd's main PID of %s: unexpected %q (give --kubelet-pid)", s.unit(), strings.TrimSpace(string(out)))
	}
	return pid, nil
}

func (s Systemd) systemctl() (string, error) {
	if s.Systemctl != "" {
		if !filepath.IsAbs(s.Systemctl) {
			return "", fmt.Errorf("systemctl %q: want an absolute path", s.Systemctl)
		}
		return s.Systemctl, nil
	}
	for _, p := range systemctlPaths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("systemd runs but systemctl is not in %s (give --kubelet-pid)", strings.Join(systemctlPaths, " or "))
}
