// Package fakeproc writes fake /proc/<pid> entries into a temporary
// directory for tests that must never look at (or signal) the host's
// processes.
package fakeproc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Proc is one fake process.
type Proc struct {
	PID, PPID int
	Start     uint64
	State     byte // 'S' when zero
	Args      []string
	// Cgroups are /proc/<pid>/cgroup lines' paths (hierarchy IDs are made up).
	Cgroups []string
}

// Write creates root/<pid>/{stat,cmdline,cgroup}.
func Write(t testing.TB, root string, p Proc) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(p.PID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	state := p.State
	if state == 0 {
		state = 'S'
	}
	stat := fmt.Sprintf("%d (%s) %c %d 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", p.PID, filepath.Base(first(p.Args)), state, p.PPID, p.Start)
	var cg strings.Builder
	for i, c := range p.Cgroups {
		fmt.Fprintf(&cg, "%d:ctl%d:%s\n", i+1, i+1, c)
	}
	cmdline := ""
	if len(p.Args) > 0 {
		cmdline = strings.Join(p.Args, "\x00") + "\x00"
	}
	for name, data := range map[string]string{"stat": stat, "cmdline": cmdline, "cgroup": cg.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Remove makes a process exit.
func Remove(t testing.TB, root string, pid int) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, strconv.Itoa(pid))); err != nil {
		t.Fatal(err)
	}
}

// BootID writes root/sys/kernel/random/boot_id.
func BootID(t testing.TB, root, id string) {
	t.Helper()
	p := filepath.Join(root, "sys", "kernel", "random", "boot_id")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func first(a []string) string {
	if len(a) == 0 {
		return "x"
	}
	return a[0]
}
