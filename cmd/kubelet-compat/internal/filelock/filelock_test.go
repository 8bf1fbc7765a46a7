package filelock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as the helper process of TestLockAcrossProcesses.
func TestMain(m *testing.M) {
	if path := os.Getenv("FILELOCK_TEST_HOLD"); path != "" {
		holdUntilStdinCloses(path)
		return
	}
	os.Exit(m.Run())
}

// holdUntilStdinCloses takes the lock, says "locked" and keeps it until its
// stdin is closed.
func holdUntilStdinCloses(path string) {
	l, err := Acquire(context.Background(), path, 10*time.Second)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	bufio.NewReader(os.Stdin).ReadString('\n')
	l.Release()
	os.Exit(0)
}

func TestPathFor(t *testing.T) {
	if got := PathFor("/var/lib/kubelet/upgrade-compat.json"); got != "/var/lib/kubelet/.upgrade-compat.json.lock" {
		t.Errorf("PathFor = %s", got)
	}
}

func TestAcquireCreatesAPrivateLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".f.lock")
	l, err := Acquire(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0600 || int(st.Uid) != os.Geteuid() {
		t.Errorf("lock file mode %s uid %d, want a regular file 0600 owned by %d", fi.Mode(), st.Uid, os.Geteuid())
	}
	if data, _ := os.ReadFile(path); strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q, want the holder's pid", data)
	}
}

func TestAcquireRefusesABadLockFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		make    func(path string) error
		wantErr string
	}{
		{name: "symlink", wantErr: "is a symlink", make: func(path string) error {
			os.WriteFile(path+".target", nil, 0600)
			return os.Symlink(path+".target", path)
		}},
		{name: "dangling symlink", wantErr: "is a symlink", make: func(path string) error { return os.Symlink(path+".nowhere", path) }},
		{name: "FIFO", wantErr: "not a regular file", make: func(path string) error { return syscall.Mkfifo(path, 0600) }},
		{name: "directory", wantErr: "opening lock file", make: func(path string) error { return os.Mkdir(path, 0700) }},
		{name: "group-writable", wantErr: "writable by group or others", make: func(path string) error {
			if err := os.WriteFile(path, nil, 0600); err != nil {
				return err
			}
			return os.Chmod(path, 0620)
		}},
		{name: "no directory", wantErr: "no such file or directory", make: func(path string) error { return os.Remove(filepath.Dir(path)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", ".f.lock")
			os.Mkdir(filepath.Dir(path), 0700)
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				l, err := Acquire(context.Background(), path, time.Second)
				l.Release()
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Acquire = %v, want %q", err, tc.wantErr)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Acquire blocked")
			}
		})
	}
}

func TestAcquireWaits(t *testing.T) {
	for _, tc := range []struct {
		name        string
		timeout     time.Duration
		releaseIn   time.Duration // 0: never
		cancelIn    time.Duration // 0: never
		wantErr     string
		wantAtLeast time.Duration
	}{
		{name: "until released", timeout: 5 * time.Second, releaseIn: 150 * time.Millisecond, wantAtLeast: 150 * time.Millisecond},
		{name: "bounded", timeout: 300 * time.Millisecond, wantErr: fmt.Sprintf("is still held after 300ms by pid %d (another kubelet-compat record, sweep or etcd-bridge?)", os.Getpid()), wantAtLeast: 300 * time.Millisecond},
		{name: "until cancelled", timeout: time.Minute, cancelIn: 100 * time.Millisecond, wantErr: "context canceled", wantAtLeast: 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".f.lock")
			held, err := Acquire(context.Background(), path, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Release()
			start := time.Now() // before the timers: they start counting now
			if tc.releaseIn > 0 {
				time.AfterFunc(tc.releaseIn, func() { held.Release() })
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelIn > 0 {
				time.AfterFunc(tc.cancelIn, cancel)
			}
			l, err := Acquire(ctx, path, tc.timeout)
			took := time.Since(start)
			l.Release()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Acquire = %v, want error %q", err, tc.wantErr)
			}
			if took < tc.wantAtLeast || took > tc.wantAtLeast+2*time.Second {
				t.Errorf("Acquire took %s, want about %s", took, tc.wantAtLeast)
			}
		})
	}
}

// TestLockAcrossProcesses: another process holds the lock; this one waits
// for it and gets it once the other lets go.
func TestLockAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".f.lock")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "FILELOCK_TEST_HOLD="+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "locked\n" {
		t.Fatalf("helper: %q", line)
	}
	_, err := Acquire(context.Background(), path, 200*time.Millisecond)
	if want := fmt.Sprintf("by pid %d", cmd.Process.Pid); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Acquire while the helper holds the lock = %v, want %q", err, want)
	}
	time.AfterFunc(200*time.Millisecond, func() { stdin.Close() })
	l, err := Acquire(context.Background(), path, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if err := cmd.Wait(); err != nil {
		t.Errorf("helper: %v", err)
	}
}

func TestRemoveIfUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		change    func(path string) error
		wantErr   error
		wantGone  bool
		wantInErr string
	}{
		{name: "unchanged", change: func(string) error { return nil }, wantGone: true},
		{name: "replaced by a rename", wantErr: ErrChanged, wantInErr: "checked inode", change: func(path string) error {
			os.WriteFile(path+".tmp", []byte("v1\n"), 0644)
			return os.Rename(path+".tmp", path)
		}},
		{name: "rewritten in place", wantErr: ErrChanged, change: func(path string) error {
			return os.WriteFile(path, []byte("v2 longer\n"), 0644)
		}},
		{name: "touched", wantErr: ErrChanged, change: func(path string) error {
			future := time.Now().Add(time.Hour)
			return os.Chtimes(path, future, future)
		}},
		{name: "gone", wantErr: os.ErrNotExist, change: os.Remove, wantGone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "upgrade-compat.json")
			os.WriteFile(path, []byte("v1\n"), 0644)
			id, err := Identify(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.change(path); err != nil {
				t.Fatal(err)
			}
			err = RemoveIfUnchanged(path, id)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) || !strings.Contains(fmt.Sprint(err), tc.wantInErr) {
				t.Errorf("RemoveIfUnchanged = %v, want %v", err, tc.wantErr)
			}
			if _, err := os.Lstat(path); os.IsNotExist(err) != tc.wantGone {
				t.Errorf("file gone = %v, want %v", os.IsNotExist(err), tc.wantGone)
			}
		})
	}
}

// TestRecordRacesSweep: writers ("record": write a new version by rename)
// and deleters ("sweep": check the file, think a while, delete it if
// unchanged) race on one file under the lock. Each keeps a ledger of what
// the file is; if the lock let them overlap, a sweep would delete a version
// it never checked and the ledger would disagree with the disk.
func TestRecordRacesSweep(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "upgrade-compat.json")
	lockPath := PathFor(path)
	var ledger atomic.Value // the content the file should have; "" when absent
	ledger.Store("")
	var violations atomic.Int32
	var wg sync.WaitGroup
	const rounds = 40
	record := func(w int) {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			l, err := Acquire(context.Background(), lockPath, 30*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			content := fmt.Sprintf("record %d.%d\n", w, i)
			tmp := fmt.Sprintf("%s.tmp-%d", path, w)
			os.WriteFile(tmp, []byte(content), 0644)
			os.Rename(tmp, path)
			ledger.Store(content)
			l.Release()
		}
	}
	sweep := func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			l, err := Acquire(context.Background(), lockPath, 30*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			checked, _ := os.ReadFile(path)
			id, err := Identify(path)
			time.Sleep(time.Millisecond) // the CRI and the API server
			if err == nil && RemoveIfUnchanged(path, id) == nil {
				if ledger.Load().(string) != string(checked) {
					violations.Add(1)
				}
				ledger.Store("")
			}
			l.Release()
		}
	}
	for w := 0; w < 3; w++ {
		wg.Add(2)
		go record(w)
		go sweep()
	}
	wg.Wait()
	onDisk, _ := os.ReadFile(path)
	if n := violations.Load(); n > 0 || string(onDisk) != ledger.Load().(string) {
		t.Errorf("%d deletions of an unchecked version; on disk %q, ledger %q", n, onDisk, ledger.Load())
	}
}
