package local

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/kubelet-compat/kubelet-compat/build/exec"
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

// KubeletSysctls are what the kubelet sets on start (and the CNI bridge's
// ip_forward).
var KubeletSysctls = []string{"vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops", "net.ipv4.ip_forward"}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

// SaveSysctls reads the current values and returns a func that restores
// the ones that changed since.
func SaveSysctls(names []string) (func(context.Context) error, error) {
	saved := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(sysctlPath(n))
		if err != nil {
			return nil, fmt.Errorf("sysctl %s: %w", n, err)
		}
		saved[n] = strings.TrimSpace(string(b))
	}
	return func(context.Context) error {
		var failed []string
		for _, n := range names {
			b, err := os.ReadFile(sysctlPath(n))
			if err == nil && strings.TrimSpace(string(b)) == saved[n] {
				continue
			}
			if err := os.WriteFile(sysctlPath(n), []byte(saved[n]), 0o644); err != nil {
				failed = append(failed, fmt.Sprintf("%s=%s: %v", n, saved[n], err))
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("restoring sysctls: %s", strings.Join(failed, "; "))
		}
		return nil
	}, nil
}

// MountsUnder lists the mount points at or under dir, deepest first.
func MountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mountsUnder(f, dir)
}

// mountsUnder reads a mountinfo file; dir is compared cleaned.
func mountsUnder(r io.Reader, dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	// Deepest (and, for the same path, latest mounted) first.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	sort.SliceStable(out, func(i, j int) bool { return strings.Count(out[i], "/") > strings.Count(out[j], "/") })
	return out, sc.Err()
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// UnmountUnder unmounts everything at or under dir (lazily if busy).
func UnmountUnder(dir string) error {
	for attempt := 0; attempt < 5; attempt++ {
		mps, err := MountsUnder(dir)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		for _, mp := range mps {
			if err := syscall.Unmount(mp, 0); err != nil {
				_ = syscall.Unmount(mp, syscall.MNT_DETACH)
			}
		}
	}
	mps, _ := MountsUnder(dir)
	if len(mps) > 0 {
		return fmt.Errorf("still mounted under %s: %s", dir, strings.Join(mps, ", "))
	}
	return nil
}

// DeleteLink deletes a network interface (the CNI bridge); a missing one
// is fine.
func DeleteLink(ctx context.Context, name string) error {
	if _, err := os.Stat("/sys/class/net/" + name); os.IsNotExist(err) {
		return nil
	}
	return exec.Command("ip", "link", "delete", name).Run(ctx)
}

// LinkExists reports whether a network interface exists.
func LinkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}

// RemovePodLogs removes the kubelet's log directories of one namespace's
// pods (/var/log/pods/<ns>_*, /var/log/containers/*_<ns>_*): a next kubelet
// on the same node would otherwise inherit their attempt numbers.
func RemovePodLogs(namespace string) error {
	var errs []string
	for _, pattern := range []string{"/var/log/pods/" + namespace + "_*", "/var/log/containers/*_" + namespace + "_*"} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing pod logs: %s", strings.Join(errs, "; "))
	}
	return nil
}
