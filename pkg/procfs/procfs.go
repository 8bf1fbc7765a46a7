// Package procfs reads what the e2e and pkg/proc need from /proc: a process's parent,
// start time, command line and cgroups, and the boot ID. A PID alone names
// a process only until it exits; PID plus start time (clock ticks since
// boot, /proc/<pid>/stat field 22) within one boot names it for good, so
// a recycled PID is never taken for the process that was recorded.
// FS.Root is /proc on the host and a temporary directory in tests.
package procfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/procstat"
)

// FS is a /proc tree.
type FS struct{ Root string }

// Host is the machine's /proc.
var Host = FS{Root: "/proc"}

// ID names one process for good within one boot.
type ID struct {
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"startTicks"`
}

func (id ID) String() string { return fmt.Sprintf("%d (start %d)", id.PID, id.StartTicks) }

// Stat is the part of /proc/<pid>/stat the e2e uses (package procstat).
type Stat = procstat.Stat

// ParseStat parses /proc/<pid>/stat (package procstat).
func ParseStat(data []byte) (Stat, error) { return procstat.Parse(data) }

func (fs FS) path(pid int, name string) string {
	return filepath.Join(fs.Root, strconv.Itoa(pid), name)
}

// Stat reads /proc/<pid>/stat.
func (fs FS) Stat(pid int) (Stat, error) {
	if pid <= 0 {
		return Stat{}, fmt.Errorf("pid %d", pid)
	}
	b, err := os.ReadFile(fs.path(pid, "stat"))
	if err != nil {
		return Stat{}, err
	}
	st, err := ParseStat(b)
	if err != nil {
		return Stat{}, err
	}
	if st.PID != pid {
		return Stat{}, fmt.Errorf("/proc/%d/stat names pid %d", pid, st.PID)
	}
	return st, nil
}

// Identify returns the ID of the process that has pid now.
func (fs FS) Identify(pid int) (ID, error) {
	st, err := fs.Stat(pid)
	if err != nil {
		return ID{}, err
	}
	return ID{PID: pid, StartTicks: st.StartTicks}, nil
}

// Alive reports whether id's process still runs: the PID exists, has the
// recorded start time and is not a zombie.
func (fs FS) Alive(id ID) bool {
	st, err := fs.Stat(id.PID)
	return err == nil && st.StartTicks == id.StartTicks && st.State != 'Z' && st.State != 'X'
}

// Cmdline returns the arguments of a process.
func (fs FS) Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(fs.path(pid, "cmdline"))
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil, nil
	}
	return strings.Split(string(b), "\x00"), nil
}

// CgroupPaths returns the cgroup path of every hierarchy of a process
// (the third field of each line of /proc/<pid>/cgroup: "/kubepods/...").
func (fs FS) CgroupPaths(pid int) ([]string, error) {
	b, err := os.ReadFile(fs.path(pid, "cgroup"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			out = append(out, parts[2])
		}
	}
	return out, nil
}

// PIDs lists the processes, in order.
func (fs FS) PIDs() ([]int, error) {
	entries, err := os.ReadDir(fs.Root)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out, nil
}

// BootID is the kernel's boot ID: start times compare only within one boot.
func (fs FS) BootID() (string, error) {
	b, err := os.ReadFile(filepath.Join(fs.Root, "sys", "kernel", "random", "boot_id"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Self is the ID of this process.
func (fs FS) Self() (ID, error) { return fs.Identify(os.Getpid()) }

// Flag returns the value of a command-line flag given as "-name value",
// "-name=value", "--name value" or "--name=value", and whether it was set.
func Flag(args []string, name string) (string, bool) {
	for i, a := range args {
		for _, p := range []string{"-" + name, "--" + name} {
			if a == p && i+1 < len(args) {
				return args[i+1], true
			}
			if strings.HasPrefix(a, p+"=") {
				return strings.TrimPrefix(a, p+"="), true
			}
		}
	}
	return "", false
}
