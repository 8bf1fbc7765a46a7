package local

import (
	"context"
	"fmt"
	"io"
	"os"
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

// LinkExists reports whether a network interface exists.
func LinkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}
