package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// Config says where to look for the kubelet.
type Config struct {
	// ProcRoot is /proc outside tests.
	ProcRoot string
	// PID is the kubelet's PID when the operator gives it (--kubelet-pid).
	PID int
	// PIDFile holds the kubelet's PID when the operator names one
	// (--kubelet-pidfile).
	PIDFile string
	// Binary is the configured kubelet binary (--kubelet-binary, default
	// DefaultBinary); symlinks are resolved.
	Binary string
	// Systemd is asked for the kubelet unit's main PID when it runs.
	Systemd Systemd
	// RootUID must own the binary and the pidfile and run the kubelet (0).
	RootUID int
	// Clocks gives the boot time; nil: SystemClocks.
	Clocks Clocks
}

// Process is the running kubelet.
type Process struct {
	PID       int
	StartTime time.Time
	// Binary is the configured binary the process runs: the only file ever
	// executed to learn the kubelet's version.
	Binary Binary
	// FoundBy says how the process was identified.
	FoundBy string
}

// Find identifies the running kubelet: the PID or pidfile given, else the
// main PID of systemd's kubelet unit, else the only root process of the host
// PID namespace that runs the configured binary. The process must run the
// configured binary: when the binary was replaced but the kubelet not
// restarted, Find fails rather than report the new binary's version.
func Find(ctx context.Context, c Config) (*Process, error) {
	if c.Binary == "" {
		c.Binary = DefaultBinary
	}
	bin, err := TrustedBinary(c.Binary, c.RootUID)
	if err != nil {
		return nil, err
	}
	pid, foundBy, err := c.identify(ctx, bin)
	if err != nil {
		return nil, err
	}
	if err := c.checkRuns(pid, foundBy, bin); err != nil {
		return nil, err
	}
	start, err := StartTime(c.ProcRoot, pid, c.Clocks)
	if err != nil {
		return nil, err
	}
	return &Process{PID: pid, StartTime: start, Binary: bin, FoundBy: foundBy}, nil
}

func (c Config) identify(ctx context.Context, bin Binary) (int, string, error) {
	switch {
	case c.PID != 0:
		return c.PID, "--kubelet-pid", nil
	case c.PIDFile != "":
		pid, err := readPIDFile(c.PIDFile, c.RootUID)
		return pid, "pidfile " + c.PIDFile, err
	}
	pid, err := c.Systemd.mainPID(ctx)
	if err != nil {
		return 0, "", err
	}
	if pid != 0 {
		return pid, "systemd " + c.Systemd.unit(), nil
	}
	// No systemd, or its kubelet unit runs no process (the kubelet may run
	// by hand or under another unit): look for the kubelet.
	pid, err = c.scan(bin)
	return pid, "process scan", err
}

// checkRuns makes sure the process runs the configured binary: same device
// and inode as /proc/<pid>/exe, which names the file the process was started
// from even after that file was replaced or deleted.
func (c Config) checkRuns(pid int, foundBy string, bin Binary) error {
	exe := filepath.Join(c.ProcRoot, strconv.Itoa(pid), "exe")
	fi, err := os.Stat(exe)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("kubelet pid %d (%s): no such process", pid, foundBy)
		}
		return fmt.Errorf("kubelet pid %d (%s): %w", pid, foundBy, err)
	}
	if os.SameFile(fi, bin.Info) {
		return nil
	}
	runs, _ := os.Readlink(exe) // for the message only; never executed
	return fmt.Errorf("kubelet pid %d (%s) runs %q, which is not the kubelet binary %s (replaced without restarting the kubelet?): restart the kubelet, or give the binary it runs with --kubelet-binary",
		pid, foundBy, runs, bin.Path)
}

// scan returns the only process of the host PID namespace whose real and
// effective uid are root and whose executable is the configured binary.
func (c Config) scan(bin Binary) (int, error) {
	hostNS, err := os.Readlink(filepath.Join(c.ProcRoot, "1", "ns", "pid"))
	if err != nil {
		return 0, fmt.Errorf("reading the host PID namespace: %w (give --kubelet-pid)", err)
	}
	entries, err := os.ReadDir(c.ProcRoot)
	if err != nil {
		return 0, fmt.Errorf("listing processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if c.isKubelet(pid, hostNS, bin) {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	switch len(pids) {
	case 0:
		return 0, fmt.Errorf("no running kubelet: no process of the host PID namespace runs %s as root (give --kubelet-pid or --kubelet-pidfile, or --kubelet-binary when the kubelet runs another binary)", bin.Path)
	case 1:
		return pids[0], nil
	}
	return 0, fmt.Errorf("%d processes run %s as root (pids %v): choose the kubelet with --kubelet-pid", len(pids), bin.Path, pids)
}

// isKubelet applies the scan's checks to one process; a process that exits
// meanwhile is not the kubelet.
func (c Config) isKubelet(pid int, hostNS string, bin Binary) bool {
	dir := filepath.Join(c.ProcRoot, strconv.Itoa(pid))
	if real, effective, err := processUIDs(dir); err != nil || real != c.RootUID || effective != c.RootUID {
		return false
	}
	if ns, err := os.Readlink(filepath.Join(dir, "ns", "pid")); err != nil || ns != hostNS {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, "exe"))
	return err == nil && os.SameFile(fi, bin.Info)
}
