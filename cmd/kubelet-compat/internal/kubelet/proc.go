package kubelet

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/procstat"
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

// StartTime is when process pid started, never earlier than it did: field
// 22 of /proc/<pid>/stat (clock ticks since boot, truncated by the kernel)
// rounded up to the next tick, plus the boot time CLOCK_REALTIME -
// CLOCK_BOOTTIME (btime in /proc/stat is whole seconds: up to a second
// early). nil clocks are SystemClocks.
func StartTime(procRoot string, pid int, clocks Clocks) (time.Time, error) {
	ticks, err := startTicks(procRoot, pid)
	if err != nil {
		return time.Time{}, err
	}
	boot, err := bootTime(clocks)
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(ticks+1) * time.Second / clockTicks), nil
}

func startTicks(procRoot string, pid int) (uint64, error) {
	stat, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("kubelet process %d: %w", pid, err)
	}
	st, err := procstat.Parse(stat)
	if err != nil {
		return 0, fmt.Errorf("kubelet process %d: %w", pid, err)
	}
	if st.StartTicks > maxStartTicks {
		return 0, fmt.Errorf("kubelet process %d: bad starttime %d", pid, st.StartTicks)
	}
	return st.StartTicks, nil
}

// maxStartTicks keeps the conversion to a time.Duration from overflowing
// (about 290 years of uptime).
const maxStartTicks = uint64(1<<63-1) / uint64(time.Second/clockTicks)

// bootTime is CLOCK_REALTIME - CLOCK_BOOTTIME: to the nanosecond, and late
// rather than early by the time between the two reads.
func bootTime(clocks Clocks) (time.Time, error) {
	if clocks == nil {
		clocks = SystemClocks
	}
	sinceBoot, now, err := clocks()
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time: %w", err)
	}
	return now.Add(-sinceBoot), nil
}
