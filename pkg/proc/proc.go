// Package proc starts long-running processes (the e2e's containerd,
// kubelet, etcd and kube-apiserver; deploy/system-upgrade/sim's control
// plane, kwok and controller) in their own process group with output to a
// log file, records each in the run's journal when it has one (name
// before it starts; PID and start time right after, while it cannot have
// been reaped), and stops them by PID.
package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"syscall"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
)

// Recorder records the processes a run starts (the journal).
type Recorder interface {
	// Starting is called before the process starts.
	Starting(name, binary string) (seq int, err error)
	// Started records its PID and start time.
	Started(seq int, id procfs.ID) error
	// Ended is called once it has exited and was reaped.
	Ended(seq int)
}

// Process is one started process.
type Process struct {
	Name    string
	PID     int
	ID      procfs.ID
	Started time.Time
	cmd     *osexec.Cmd
	done    chan struct{}
	err     error
	logFile *os.File
}

// Start runs binary with args, appending stdout and stderr to logPath,
// recorded in rec (may be nil). The process gets its own process group (a
// Ctrl-C on the terminal reaches the e2e, which stops things in order)
// and SIGKILL if the e2e dies.
func Start(rec Recorder, name, binary string, args []string, env []string, logPath string) (*Process, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	seq := 0
	if rec != nil {
		if seq, err = rec.Starting(name, binary); err != nil {
			lf.Close()
			return nil, fmt.Errorf("recording %s in the journal: %w", name, err)
		}
	}
	fmt.Fprintf(lf, "\n===== %s: %s %v\n", time.Now().Format(time.RFC3339Nano), binary, args)
	cmd := osexec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		lf.Close()
		if rec != nil {
			rec.Ended(seq)
		}
		return nil, fmt.Errorf("starting %s (%s): %w", name, binary, err)
	}
	p := &Process{Name: name, PID: cmd.Process.Pid, Started: started, cmd: cmd, done: make(chan struct{}), logFile: lf}
	// Not reaped yet (nobody waits): the PID is still this process's.
	id, err := procfs.Host.Identify(p.PID)
	if err == nil && rec != nil {
		err = rec.Started(seq, id)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		lf.Close()
		if rec != nil {
			rec.Ended(seq)
		}
		return nil, fmt.Errorf("recording %s (pid %d): %w", name, p.PID, err)
	}
	p.ID = id
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		if rec != nil {
			rec.Ended(seq)
		}
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop sends SIGTERM and waits up to grace, then SIGKILL. Stopping an
// ended process is not an error.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	if ended, _ := p.Exited(); ended {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM %s (pid %d): %w", p.Name, p.PID, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	return p.Kill(ctx)
}

// Kill sends SIGKILL and waits for the process to end.
func (p *Process) Kill(ctx context.Context) error {
	if ended, _ := p.Exited(); ended {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL %s (pid %d): %w", p.Name, p.PID, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s (pid %d) did not end 30s after SIGKILL", p.Name, p.PID)
	case <-ctx.Done():
		return ctx.Err()
	}
}
