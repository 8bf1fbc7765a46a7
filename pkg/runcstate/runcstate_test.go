package runcstate

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestRunc(t *testing.T) {
	root := t.TempDir()
	write := func(p, data string) {
		full := filepath.Join(root, p)
		assert.NilError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		assert.NilError(t, os.WriteFile(full, []byte(data), 0o644))
	}
	const runc = "/run/containerd/runc/k8s.io"
	write(runc+"/aaa/state.json", `{"id":"aaa","init_process_pid":11,"init_process_start":7,"cgroup_paths":{"devices":"/d"}}`)
	write(runc+"/bad/state.json", "{not json")
	assert.NilError(t, os.MkdirAll(filepath.Join(root, runc, "creating"), 0o755))
	write(runc+"/not-a-dir", "")
	write("/proc/11/stat", "11 (pause) S 10 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 7 1 1 18446744073709551615\n")
	h := Host{FSRoot: root}

	ids, err := h.IDs(runc)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(ids, []string{"aaa", "bad", "creating"}))
	ids, err = h.IDs("/nope")
	assert.NilError(t, err)
	assert.Check(t, is.Len(ids, 0))

	st, ok, err := h.Read(runc, "aaa")
	assert.NilError(t, err)
	assert.Check(t, ok)
	assert.Check(t, is.DeepEqual(st, State{ID: "aaa", Pid: 11, Start: 7, Paths: map[string]string{"devices": "/d"}}))
	_, ok, err = h.Read(runc, "creating")
	assert.NilError(t, err)
	assert.Check(t, !ok, "no state.json: being created or deleted")
	_, _, err = h.Read(runc, "bad")
	assert.ErrorContains(t, err, "runc state of bad")

	for _, tc := range []struct {
		name       string
		pid        int
		start      uint64
		wantParent int
		want       bool
	}{
		{name: "the process runc started", pid: 11, start: 7, wantParent: 10, want: true},
		{name: "the PID reused by another process", pid: 11, start: 8},
		{name: "gone", pid: 12, start: 7},
		{name: "no PID", pid: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			init, ok := h.Init(tc.pid, tc.start)
			assert.Check(t, is.Equal(ok, tc.want))
			if tc.want {
				assert.Check(t, is.Equal(init.PPID, tc.wantParent))
			}
		})
	}
}
