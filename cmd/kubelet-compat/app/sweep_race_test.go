package app

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/filelock"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
)

// background is a command run next to the one under test.
type background struct {
	done           chan int
	stdout, stderr bytes.Buffer
}

func (f *fixture) start(args ...string) *background {
	b := &background{done: make(chan int, 1)}
	go func() { b.done <- f.runTo(context.Background(), &b.stdout, &b.stderr, args...) }()
	return b
}

// wait returns the exit code, or -1 when the command is still running after d.
func (b *background) wait(d time.Duration) int {
	select {
	case code := <-b.done:
		b.done <- code
		return code
	case <-time.After(d):
		return -1
	}
}

// whileSweepListsContainers runs action once, while sweep waits for the
// runtime's answer: after it checked the file, before it decides.
func (f *fixture) whileSweepListsContainers(action func()) {
	var once sync.Once
	f.srv.OnCall("ListContainers", func() { once.Do(action) })
}

// TestSweepKeepsWhatRecordWritesMeanwhile: sweep checked the file, spent a
// while with the CRI and the API server, then removed whatever was at the
// path, including the file a record wrote in between.
func TestSweepKeepsWhatRecordWritesMeanwhile(t *testing.T) {
	f := upgraded(t, []string{cri.APIv1}, pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true})
	var record *background
	f.whileSweepListsContainers(func() {
		// The operator prepares the next upgrade while the timer's sweep runs.
		record = f.start("record", "--kubelet-binary", f.kubeletBinary("v1.19.16"))
		record.wait(time.Second) // done before the fix; waiting for the lock after
	})
	code := f.run("sweep")
	if record == nil {
		t.Fatal("the hook did not run")
	}
	if rc := record.wait(30 * time.Second); rc != 0 {
		t.Fatalf("record exit %d: %s", rc, record.stderr.String())
	}
	if code != ExitOK || !strings.Contains(f.stdout.String(), "deleted ") {
		t.Errorf("sweep exit %d, stdout %q, stderr %q; want the file it checked deleted", code, f.stdout.String(), f.stderr.String())
	}
	got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
	if err != nil {
		t.Fatalf("sweep deleted the file record wrote while sweep was checking: %v", err)
	}
	if got.PreviousVersion != "v1.19.16" {
		t.Errorf("the file records %s, want record's v1.19.16", got.PreviousVersion)
	}
}

// TestSweepDeletesOnlyTheFileItChecked: something that does not take the
// lock (a hand edit, an older kubelet-compat) replaces the file while sweep
// checks it: sweep must not delete the new file, and says so.
func TestSweepDeletesOnlyTheFileItChecked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(f *fixture)
	}{
		{name: "replaced by a rename", change: func(f *fixture) {
			f.write(f.compatPath()+".new", `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.19.16","recordedAt":"2026-01-02T03:04:06Z"}`+"\n")
			if err := os.Rename(f.compatPath()+".new", f.compatPath()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "rewritten in place", change: func(f *fixture) {
			f.write(f.compatPath(), `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.19.16","recordedAt":"2026-01-02T03:04:06Z"}`+"\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := upgraded(t, []string{cri.APIv1}, pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true})
			f.whileSweepListsContainers(func() { tc.change(f) })
			code := f.run("sweep")
			if _, err := os.Stat(f.compatPath()); err != nil {
				t.Fatalf("sweep deleted a file it never checked (exit %d, stdout %q)", code, f.stdout.String())
			}
			if code != ExitError {
				t.Errorf("exit %d, want 1", code)
			}
			assertOneErrorLine(t, f.stderr.String(), "/upgrade-compat.json: it changed while sweep checked it (the file changed since it was checked: checked inode ")
		})
	}
}

// TestLockWaits: record and sweep wait for the lock a bounded time, and stop
// waiting when interrupted.
func TestLockWaits(t *testing.T) {
	for _, command := range []string{"record", "sweep"} {
		t.Run(command, func(t *testing.T) {
			f := upgraded(t, []string{cri.APIv1}, pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true})
			before, _ := os.ReadFile(f.compatPath())
			held, err := filelock.Acquire(context.Background(), filelock.PathFor(f.compatPath()), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Release()
			args := []string{command, "--kubelet-binary", f.kubeletBinary("v1.19.16")}
			start := time.Now()
			if code := f.run(append(args, "--lock-timeout", "300ms")...); code != ExitError {
				t.Errorf("exit %d, want 1", code)
			}
			if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
				t.Errorf("gave up after %s, want 300ms", took)
			}
			assertOneErrorLine(t, f.stderr.String(), "is still held after 300ms by pid")

			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			var stdout, stderr bytes.Buffer
			start = time.Now()
			if code := f.runTo(ctx, &stdout, &stderr, args...); code != ExitError {
				t.Errorf("interrupted: exit %d, want 1", code)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("interrupted: stopped after %s", took)
			}
			assertOneErrorLine(t, stderr.String(), "interrupted")
			if after, _ := os.ReadFile(f.compatPath()); !bytes.Equal(before, after) {
				t.Errorf("the file changed: %q, was %q", after, before)
			}
			for _, bad := range []string{"0s", "-1s"} {
				if code := f.run(append(args, "--lock-timeout", bad)...); code != ExitError {
					t.Errorf("--lock-timeout %s: exit %d", bad, code)
				}
				assertOneErrorLine(t, f.stderr.String(), "--lock-timeout: must be positive")
			}
		})
	}
}
