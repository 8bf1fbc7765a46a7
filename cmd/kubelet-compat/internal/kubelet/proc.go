package kubelet

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's starttime: 100 on
// every Linux architecture Kubernetes supports.
const clockTicks = 100

// processUIDs returns the real and effective uid from /proc/<pid>/status.
func processUIDs(dir string) (real, effective int, err error) {
	data, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "Uid:" {
			continue
		}
		if real, err = strconv.Atoi(f[1]); err == nil {
			effective, err = strconv.Atoi(f[2])
		}
		return real, effective, err
	}
	return 0, 0, fmt.Errorf("%s/status: no Uid line", dir)
}

// readPIDFile reads a pidfile that root owns and only root may write,
// without blocking on a FIFO or following a symlink.
func readPIDFile(path string, rootUID int) (int, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, fmt.Errorf("kubelet pidfile: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return 0, fmt.Errorf("kubelet pidfile: %w", err)
	}
	if err := checkTrusted(fi, rootUID); err != nil {
		return 0, fmt.Errorf("kubelet pidfile %s: %v", path, err)
	}
	line, err := bufio.NewReader(io.LimitReader(fh, 64)).ReadString('\n')
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("kubelet pidfile %s: %w", path, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("kubelet pidfile %s: no PID in %q", path, strings.TrimSpace(line))
	}
	return pid, nil
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
