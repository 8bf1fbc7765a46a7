// Package exec runs external commands for the harness, the e2e and the
// hack tools: one place that captures output, adds context to errors and
// optionally tees output into a log file.
package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"strings"
	"time"
)

// Cmd describes one external command.
type Cmd struct {
	Name string
	Args []string
	Dir  string
	// Env is appended to the current process environment (later entries
	// win), or replaces it when ReplaceEnv is set.
	Env []string
	// ReplaceEnv runs the command with Env alone: nothing of this process's
	// environment reaches it.
	ReplaceEnv bool
	// Stdin, when set, is fed to the command.
	Stdin io.Reader
	// Log, when set, receives the command line and its combined output.
	Log io.Writer
	// InterruptGrace, when set, makes a cancelled context interrupt the
	// command (SIGINT) and kill it only if it is still running this long
	// after: for a command that stops its own children on an interrupt,
	// which a SIGKILL would leave running.
	InterruptGrace time.Duration
}

// Command returns a Cmd for name and args.
func Command(name string, args ...string) *Cmd {
	return &Cmd{Name: name, Args: args}
}

// environ is the environment the command runs with.
func (c *Cmd) environ() []string {
	if c.ReplaceEnv {
		return append([]string{}, c.Env...)
	}
	return append(os.Environ(), c.Env...)
}

// String renders the command line for logs and errors.
func (c *Cmd) String() string {
	return strings.TrimSpace(c.Name + " " + strings.Join(c.Args, " "))
}

// Output runs the command and returns its stdout. On failure the error
// names the command and carries the tail of its stderr.
func (c *Cmd) Output(ctx context.Context) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := osexec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.environ()
	if c.InterruptGrace > 0 {
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = c.InterruptGrace
	}
	cmd.Stdin = c.Stdin
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if c.Log != nil {
		fmt.Fprintf(c.Log, "+ %s\n", c)
		cmd.Stdout = io.MultiWriter(&stdout, c.Log)
		cmd.Stderr = io.MultiWriter(&stderr, c.Log)
	}
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &Error{Cmd: c.String(), Err: err, Stderr: tail(stderr.String(), 2048)}
	}
	return stdout.Bytes(), nil
}

// Run runs the command, discarding stdout unless Log is set.
func (c *Cmd) Run(ctx context.Context) error {
	_, err := c.Output(ctx)
	return err
}

// Error is a failed command.
type Error struct {
	Cmd    string
	Err    error
	Stderr string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %v", e.Cmd, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		lines := strings.Split(s, "\n")
		msg += ": " + lines[len(lines)-1]
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// ExitCode is how a command ended: 0, the process's exit status, or -1
// when it did not run or was killed by a signal.
func ExitCode(err error) int {
	var ee *osexec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
