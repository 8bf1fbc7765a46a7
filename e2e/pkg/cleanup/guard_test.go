package cleanup

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary run guardHelper instead of the tests:
// signals and panics are tried on a child process, never on the test.
const helperEnv = "E2E_CLEANUP_GUARD_HELPER"

func TestMain(m *testing.M) {
	if c := os.Getenv(helperEnv); c != "" {
		os.Exit(guardHelper(c))
	}
	os.Exit(m.Run())
}

// guardHelper runs Guard with one undo action and a body that ends as the
// case says; it prints what happened.
func guardHelper(c string) int {
	s := New(os.Stdout)
	s.Push("undo", func(context.Context) error {
		fmt.Println("UNDO-STARTED")
		if c == "signal during cleanup" {
			// A second Ctrl-C (or a SIGHUP as the terminal goes) must not
			// interrupt the cleanup.
			for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM} {
				_ = syscall.Kill(os.Getpid(), sig)
			}
			time.Sleep(300 * time.Millisecond)
		}
		fmt.Println("UNDO-FINISHED")
		return nil
	})
	runErr, cleanErr := Guard(s, func(ctx context.Context) error {
		switch c {
		case "return":
			return nil
		case "error":
			return errors.New("the run failed")
		case "panic":
			panic("the run panicked")
		case "SIGINT", "SIGTERM", "SIGHUP", "signal during cleanup":
			sig := map[string]syscall.Signal{"SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM, "SIGHUP": syscall.SIGHUP}[c]
			if sig == 0 {
				sig = syscall.SIGTERM
			}
			_ = syscall.Kill(os.Getpid(), sig)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Second):
				return errors.New("the signal did not cancel the run")
			}
		}
		return fmt.Errorf("unknown case %q", c)
	})
	fmt.Printf("RUN-ERROR: %v\nCLEAN-ERROR: %v\n", runErr, cleanErr)
	return 0
}

func TestGuardUndoesOnEveryWayOut(t *testing.T) {
	tests := []struct {
		name       string
		wantRunErr string
	}{
		{name: "return", wantRunErr: "<nil>"},
		{name: "error", wantRunErr: "the run failed"},
		{name: "panic", wantRunErr: "the run panicked"},
		{name: "SIGINT", wantRunErr: "context canceled"},
		{name: "SIGTERM", wantRunErr: "context canceled"},
		{name: "SIGHUP", wantRunErr: "context canceled"},
		{name: "signal during cleanup", wantRunErr: "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := osexec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+tt.name)
			out, err := cmd.CombinedOutput()
			got := string(out)
			if err != nil {
				t.Errorf("helper: %v", err)
			}
			for _, want := range []string{"UNDO-STARTED", "UNDO-FINISHED", "cleanup: undo", "RUN-ERROR: "} {
				if !strings.Contains(got, want) {
					t.Errorf("output lacks %q:\n%s", want, got)
				}
			}
			if i := strings.LastIndex(got, "RUN-ERROR: "); i < 0 || !strings.Contains(got[i:], tt.wantRunErr) {
				t.Errorf("run error should contain %q:\n%s", tt.wantRunErr, got)
			}
		})
	}
}
