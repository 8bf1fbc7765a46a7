// Package kubelet finds the running kubelet process, when it started and
// which version it is.
package kubelet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/build/exec"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's starttime: 100 on
// every Linux architecture Kubernetes supports.
const clockTicks = 100

// Process is a running kubelet.
type Process struct {
	PID       int
	StartTime time.Time
	// Exe is the path to read the binary through (/proc/<pid>/exe): it works
	// even after the binary on disk was replaced.
	Exe string
}

// Find returns the kubelet process: pid when non-zero, else the only
// process whose comm is "kubelet". procRoot is /proc outside tests.
func Find(procRoot string, pid int) (*Process, error) {
	if pid == 0 {
		pids, err := findByComm(procRoot, "kubelet")
		if err != nil {
			return nil, err
		}
		switch len(pids) {
		case 0:
			return nil, fmt.Errorf("no running kubelet process found in %s (use --kubelet-pid)", procRoot)
		case 1:
			pid = pids[0]
		default:
			return nil, fmt.Errorf("%d kubelet processes running (pids %v): choose one with --kubelet-pid", len(pids), pids)
		}
	}
	start, err := StartTime(procRoot, pid)
	if err != nil {
		return nil, err
	}
	return &Process{PID: pid, StartTime: start, Exe: filepath.Join(procRoot, strconv.Itoa(pid), "exe")}, nil
}

func findByComm(procRoot, comm string) ([]int, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "comm"))
		if err != nil {
			continue // the process exited meanwhile
		}
		if strings.TrimSpace(string(data)) == comm {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// StartTime is when process pid started: field 22 of /proc/<pid>/stat
// (clock ticks since boot) plus the boot time (btime in /proc/stat).
func StartTime(procRoot string, pid int) (time.Time, error) {
	stat, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return time.Time{}, fmt.Errorf("kubelet process %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces and parentheses: fields
	// after it start behind the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return time.Time{}, fmt.Errorf("kubelet process %d: malformed stat", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return time.Time{}, fmt.Errorf("kubelet process %d: stat has %d fields", pid, len(fields)+2)
	}
	ticks, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("kubelet process %d: bad starttime %q", pid, fields[19])
	}
	boot, err := bootTime(procRoot)
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(ticks) * time.Second / clockTicks), nil
}

func bootTime(procRoot string) (time.Time, error) {
	data, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "btime" {
			s, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("boot time: bad btime %q", f[1])
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("boot time: no btime in %s", filepath.Join(procRoot, "stat"))
}

// Version runs `binary --version` and parses "Kubernetes v1.18.19".
func Version(ctx context.Context, binary string) (kubeletcompat.Version, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.Command(binary, "--version").Output(ctx)
	if err != nil {
		return kubeletcompat.Version{}, fmt.Errorf("kubelet version: %w", err)
	}
	return ParseVersionOutput(string(out))
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
