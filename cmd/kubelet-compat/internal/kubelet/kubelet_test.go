package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeProc writes a minimal /proc: btime and, per pid, comm and stat.
func fakeProc(t *testing.T, btime int64, procs map[int][2]string) string {
	root := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0755)
		if err := os.WriteFile(p, []byte(s), 0644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "stat"), "cpu  1 2 3\nbtime "+itoa(btime)+"\nprocesses 9\n")
	for pid, p := range procs {
		write(filepath.Join(root, itoa(int64(pid)), "comm"), p[0]+"\n")
		write(filepath.Join(root, itoa(int64(pid)), "stat"), itoa(int64(pid))+" ("+p[0]+") S 1 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 "+p[1]+" 1 1 18446744073709551615\n")
	}
	return root
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

func TestFind(t *testing.T) {
	root := fakeProc(t, 1700000000, map[int][2]string{42: {"kubelet", "12345"}, 7: {"containerd", "100"}, 8: {"a b) (c", "1"}})
	p, err := Find(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Unix(1700000000, 0).Add(123450 * time.Millisecond)
	if p.PID != 42 || !p.StartTime.Equal(want) || p.Exe != filepath.Join(root, "42", "exe") {
		t.Errorf("Find = %+v, want pid 42 started %s", p, want)
	}
	if _, err := StartTime(root, 8); err != nil {
		t.Errorf("a comm with spaces and parentheses: %v", err)
	}
	if _, err := Find(fakeProc(t, 1, nil), 0); err == nil || !strings.Contains(err.Error(), "no running kubelet") {
		t.Errorf("no kubelet: %v", err)
	}
	two := fakeProc(t, 1, map[int][2]string{1: {"kubelet", "1"}, 2: {"kubelet", "2"}})
	if _, err := Find(two, 0); err == nil || !strings.Contains(err.Error(), "--kubelet-pid") {
		t.Errorf("two kubelets: %v", err)
	}
	if p, err := Find(two, 2); err != nil || p.PID != 2 {
		t.Errorf("Find(pid 2) = %+v, %v", p, err)
	}
}

func TestVersion(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kubelet")
	os.WriteFile(bin, []byte("#!/bin/sh\necho Kubernetes v1.18.19\n"), 0755)
	v, err := Version(context.Background(), bin)
	if err != nil || v.String() != "v1.18.19" {
		t.Errorf("Version = %s, %v", v, err)
	}
	for _, bad := range []string{"", "Kubernetes", "Kubernetes v1.x", "v1.18.19"} {
		if _, err := ParseVersionOutput(bad); err == nil {
			t.Errorf("ParseVersionOutput(%q) accepted", bad)
		}
	}
	if _, err := Version(context.Background(), filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing binary gave no error")
	}
}
