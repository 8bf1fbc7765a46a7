package kubelet

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Clocks reads CLOCK_BOOTTIME (time since boot, suspend included, the clock
// of /proc/<pid>/stat's starttime) and then CLOCK_REALTIME.
type Clocks func() (sinceBoot time.Duration, now time.Time, err error)

// SystemClocks reads the machine's clocks, CLOCK_BOOTTIME first: the
// realtime read a moment later makes now - sinceBoot, the boot time, late
// by that moment rather than early.
func SystemClocks() (time.Duration, time.Time, error) {
	var boot, real unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return 0, time.Time{}, fmt.Errorf("CLOCK_BOOTTIME: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &real); err != nil {
		return 0, time.Time{}, fmt.Errorf("CLOCK_REALTIME: %w", err)
	}
	return time.Duration(boot.Nano()), time.Unix(real.Unix()), nil
}
