package roll

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestNodeHostRun runs the node's programs through a fake chroot that
// says how it was called: into the node's root, with the node's PATH,
// systemctl told to talk to PID 1, without the roll's lock.
func TestNodeHostRun(t *testing.T) {
	dir := t.TempDir()
	chroot := filepath.Join(dir, "chroot")
	assert.NilError(t, os.WriteFile(chroot, []byte(`#!/bin/sh
echo "root=$1 path=$PATH systemd=${SYSTEMD_IGNORE_CHROOT:-} argv=$2 $3"
PATH=/usr/bin:/bin
for fd in /proc/$$/fd/*; do readlink "$fd"; done | grep -q 'roll/lock$' && echo "the roll's lock is open"
echo "to stderr" >&2
exit "${EXIT:-0}"
`), 0o755))
	root := t.TempDir()
	h := &NodeHost{Root: root, Chroot: chroot, Path: "/node/bin:/node/sbin"}
	ok, err := h.TryLock(LockFile)
	assert.NilError(t, err)
	assert.Assert(t, ok)

	res := h.Run(context.Background(), Cmd{Argv: []string{"kubernetes-select", "status"}})
	assert.Check(t, res.OK())
	assert.Check(t, is.Equal(string(res.Stdout), "root="+root+" path=/node/bin:/node/sbin systemd=1 argv=kubernetes-select status\n"))
	assert.Check(t, is.Equal(string(res.Stderr), "to stderr\n"))

	var out, errOut bytes.Buffer
	t.Setenv("EXIT", "3")
	res = h.Run(context.Background(), Cmd{Argv: []string{"kubeadm", "upgrade"}, Stdout: &out, Stderr: &errOut})
	assert.Check(t, is.Equal(res.Code, 3))
	assert.Check(t, res.Err == nil)
	assert.Check(t, is.Len(res.Stdout, 0))
	assert.Check(t, strings.HasPrefix(out.String(), "root="))
	assert.Check(t, is.Equal(errOut.String(), "to stderr\n"))

	h.Chroot = filepath.Join(dir, "no-chroot")
	res = h.Run(context.Background(), Cmd{Argv: []string{"true"}})
	assert.Check(t, is.Equal(res.Code, -1))
	assert.Check(t, res.Err != nil)
}

// TestNodeHostLock: the roll's lock is flock(2) on the node's file, the
// lock upgrade.sh takes with the node's flock: a Job of either waits for
// the other's.
func TestNodeHostLock(t *testing.T) {
	root := t.TempDir()
	first, second := &NodeHost{Root: root}, &NodeHost{Root: root}
	ok, err := first.TryLock(LockFile)
	assert.NilError(t, err)
	assert.Assert(t, ok)
	ok, err = second.TryLock(LockFile)
	assert.NilError(t, err)
	assert.Check(t, !ok, "a second Job took the lock the first holds")
	start := time.Now()
	ok, err = second.WaitLock(context.Background(), LockFile, 300*time.Millisecond)
	assert.NilError(t, err)
	assert.Check(t, !ok)
	assert.Check(t, time.Since(start) >= 300*time.Millisecond)
	if flock, err := exec.LookPath("flock"); err == nil {
		err := exec.Command(flock, "-n", filepath.Join(root, LockFile), "true").Run()
		assert.Check(t, err != nil, "util-linux flock (upgrade.sh's) took the lock the engine holds")
	}

	// The first Job ends (its process, and so its lock, gone).
	first.locks[LockFile].Close()
	ok, err = second.WaitLock(context.Background(), LockFile, time.Second)
	assert.NilError(t, err)
	assert.Check(t, ok)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	third := &NodeHost{Root: root}
	ok, err = third.WaitLock(ctx, LockFile, time.Minute)
	assert.Check(t, !ok)
	assert.Check(t, is.ErrorIs(err, context.Canceled))
}

func TestRootFS(t *testing.T) {
	f := RootFS{Root: t.TempDir()}
	assert.NilError(t, f.MkdirAll("/etc/kubernetes/manifests"))
	assert.NilError(t, put(f, "/etc/kubernetes/manifests/etcd.yaml", []byte("image: etcd:3.6.8-0\n")))
	entries, err := f.ReadDir("/etc/kubernetes/manifests")
	assert.NilError(t, err)
	assert.Check(t, is.Len(entries, 1), "the dot file put writes through is gone")
	assert.Check(t, is.DeepEqual(yamlFiles(f, "/etc/kubernetes/manifests"), []string{"etcd.yaml"}))
	assert.NilError(t, os.WriteFile(f.Path("/etc/kubernetes/manifests/.hidden.yaml"), nil, 0o600))
	assert.Check(t, is.DeepEqual(yamlFiles(f, "/etc/kubernetes/manifests"), []string{"etcd.yaml"}))
	assert.NilError(t, f.Remove("/no/such/file"))
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	assert.NilError(t, f.Chtimes("/etc/kubernetes/manifests/etcd.yaml", mtime))
	assert.NilError(t, copyFile(f, "/etc/kubernetes/manifests/etcd.yaml", "/etcd.yaml"))
	fi, err := f.Stat("/etcd.yaml")
	assert.NilError(t, err)
	assert.Check(t, fi.ModTime().Equal(mtime), "cp -p keeps the modification time")
	assert.Check(t, is.Equal(fi.Mode().Perm(), os.FileMode(0o644)))
	assert.Check(t, sameContent(f, "/etcd.yaml", "/etc/kubernetes/manifests/etcd.yaml"))
}
