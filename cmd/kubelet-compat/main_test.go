package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/filelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri/fake"
)

// TestMain runs the command itself when asked: the tests below start this
// binary as kubelet-compat and signal it.
func TestMain(m *testing.M) {
	if os.Getenv("KUBELET_COMPAT_TEST_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestSignalsStopTheCommand: record --file <fifo> blocked for ever and
// ignored SIGTERM; a command waiting for the lock must stop on SIGTERM and
// SIGINT.
func TestSignalsStopTheCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the command trusts only root-owned kubelet binaries: run as root")
	}
	for _, tc := range []struct {
		name    string
		signal  syscall.Signal
		setup   func(t *testing.T, dir string) string // returns the compat file
		wantErr string
	}{
		{name: "record --file <fifo>, SIGTERM", signal: syscall.SIGTERM, wantErr: "is a named pipe, not a regular file", setup: func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(path, 0644); err != nil {
				t.Fatal(err)
			}
			return path
		}},
		{name: "waiting for the lock, SIGTERM", signal: syscall.SIGTERM, wantErr: "interrupted: waiting for lock", setup: holdLock},
		{name: "waiting for the lock, SIGINT", signal: syscall.SIGINT, wantErr: "interrupted: waiting for lock", setup: holdLock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			srv := fake.Start(t, cri.APIv1)
			bin := filepath.Join(dir, "kubelet")
			os.WriteFile(bin, []byte("#!/bin/sh\necho Kubernetes v1.18.19\n"), 0755)
			os.Mkdir(filepath.Join(dir, "manifests"), 0755)
			file := tc.setup(t, dir)
			var stderr bytes.Buffer
			cmd := exec.Command(os.Args[0], "record", "--file", file, "--kubelet-binary", bin, "--runtime-endpoint", srv.Endpoint,
				"--manifest-dir", filepath.Join(dir, "manifests"), "--node-name", "node-1")
			cmd.Env = append(os.Environ(), "KUBELET_COMPAT_TEST_RUN_MAIN=1")
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			time.Sleep(500 * time.Millisecond)
			cmd.Process.Signal(tc.signal)
			sent := time.Now()
			select {
			case err := <-done:
				if err == nil {
					t.Fatalf("exit 0, want an error; stderr %q", stderr.String())
				}
				if took := time.Since(sent); took > 3*time.Second {
					t.Errorf("stopped %s after the signal", took)
				}
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still running 5s after %s; stderr %q", tc.signal, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "kubelet-compat: ") || !strings.Contains(lines[0], tc.wantErr) {
				t.Errorf("stderr %q, want one line with %q", stderr.String(), tc.wantErr)
			}
		})
	}
}

func holdLock(t *testing.T, dir string) string {
	path := filepath.Join(dir, "upgrade-compat.json")
	l, err := filelock.Acquire(context.Background(), filelock.PathFor(path), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release() })
	return path
}
