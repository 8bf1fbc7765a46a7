package procfs

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotSame is returned when the PID is held by another process than the
// one recorded (or by none).
var ErrNotSame = errors.New("not the recorded process")

// Signal sends sig to the host process id names, and only to it: through a
// pidfd opened before the start time is checked, so that the PID cannot be
// recycled between the check and the signal (plain kill(2) after the
// check where pidfds are missing).
func Signal(id ID, sig syscall.Signal) error {
	if id.PID <= 1 {
		return fmt.Errorf("pid %d: %w", id.PID, ErrNotSame)
	}
	fd, err := unix.PidfdOpen(id.PID, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("pid %d: %w", id.PID, ErrNotSame)
		}
		if !errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("pidfd_open %d: %w", id.PID, err)
		}
		if !Host.Alive(id) {
			return fmt.Errorf("%v: %w", id, ErrNotSame)
		}
		return syscall.Kill(id.PID, sig)
	}
	defer unix.Close(fd)
	if !Host.Alive(id) {
		return fmt.Errorf("%v: %w", id, ErrNotSame)
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("%v: %w", id, ErrNotSame)
		}
		return fmt.Errorf("signal %v to %v: %w", sig, id, err)
	}
	return nil
}
