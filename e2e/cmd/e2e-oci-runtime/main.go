// Command e2e-oci-runtime is the OCI runtime the e2e registers with the
// dockerd it starts, only on machines whose capability bounding set lacks
// capabilities (see package capfilter): it drops those from the bundle's
// config.json (create, run) and from the process file (exec), then execs
// runc with the same arguments. On a machine with every capability the e2e
// does not register it and Docker runs runc itself.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/capfilter"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "e2e-oci-runtime: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	runc, err := findRunc()
	if err != nil {
		return err
	}
	allowed, err := capfilter.Bounding("/proc/self/status")
	if err != nil {
		return err
	}
	switch cmd, _ := capfilter.Command(args, "", ""); cmd {
	case "create", "run":
		_, bundle := capfilter.Command(args, "--bundle", "-b")
		if bundle == "" {
			bundle = "."
		}
		if err := capfilter.FilterSpecFile(filepath.Join(bundle, "config.json"), allowed); err != nil {
			return err
		}
	case "exec":
		if _, process := capfilter.Command(args, "--process", "-p"); process != "" {
			if err := capfilter.FilterProcessFile(process, allowed); err != nil {
				return err
			}
		}
	}
	return syscall.Exec(runc, append([]string{"runc"}, args...), os.Environ())
}

// findRunc is the runc next to Debian's (the shim's PATH may be minimal).
func findRunc() (string, error) {
	if p, err := exec.LookPath("runc"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("runc not found on PATH nor in /usr/sbin, /usr/bin, /usr/local/sbin, /usr/local/bin")
}
