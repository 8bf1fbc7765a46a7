package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// Packages are the Debian packages a local node needs; etcd-server only in
// API mode.
var Packages = []string{"containerd", "runc", "containernetworking-plugins", "iptables", "conntrack", "busybox-static", "iproute2", "mount"}

// EnsurePackages installs the Debian packages that are missing, running
// apt-get update only when the install fails without it.
func EnsurePackages(ctx context.Context, log io.Writer, pkgs []string) error {
	var missing []string
	for _, p := range pkgs {
		out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).Output(ctx)
		if err != nil || !strings.Contains(string(out), "install ok installed") {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(log, "installing Debian packages: %s\n", strings.Join(missing, " "))
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	install := &exec.Cmd{Name: "apt-get", Args: append([]string{"install", "-y", "--no-install-recommends"}, missing...), Env: env}
	if err := install.Run(ctx); err == nil {
		return nil
	}
	if err := (&exec.Cmd{Name: "apt-get", Args: []string{"update"}, Env: env}).Run(ctx); err != nil {
		return fmt.Errorf("apt-get update: %w", err)
	}
	if err := install.Run(ctx); err != nil {
		return fmt.Errorf("installing %s: %w", strings.Join(missing, " "), err)
	}
	return nil
}

// HasCapability reports whether this process has capability bit cap in
// its effective set (CAP_SYS_RESOURCE is 24).
func HasCapability(cap uint) (bool, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "CapEff:") {
			v, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "CapEff:")), 16, 64)
			if err != nil {
				return false, err
			}
			return v&(1<<cap) != 0, nil
		}
	}
	return false, fmt.Errorf("no CapEff in /proc/self/status")
}

// CapSysResource is the capability whose absence needs
// restrict_oom_score_adj.
const CapSysResource = 24

// LinkExists reports whether a network interface exists.
func LinkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}
