package procfs

import (
	"errors"
	osexec "os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/procfs/fakeproc"
	"gotest.tools/v3/assert"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Stat
		wantErr bool
	}{
		{name: "plain", in: "42 (containerd) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 12 0 987654 1000 10 100",
			want: Stat{PID: 42, Comm: "containerd", State: 'S', PPID: 1, StartTicks: 987654}},
		{name: "comm with spaces and parens", in: "7 (a) b (c)) Z 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0",
			want: Stat{PID: 7, Comm: "a) b (c)", State: 'Z', PPID: 3, StartTicks: 55}},
		{name: "truncated", in: "7 (x) S 1 2 3", wantErr: true},
		{name: "no comm", in: "7 x S 1", wantErr: true},
		{name: "bad start", in: "7 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 nope", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tt.in))
			if tt.wantErr {
				assert.Assert(t, err != nil, "got %+v", got)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got, tt.want)
		})
	}
}

func TestFS(t *testing.T) {
	root := t.TempDir()
	fakeproc.Write(t, root, fakeproc.Proc{PID: 10, PPID: 1, Start: 500, Args: []string{"containerd-shim-runc-v2", "-namespace", "k8s.io", "-address", "/x/c.sock"},
		Cgroups: []string{"/kubepods/pod1/c1", "/"}})
	fs := FS{Root: root}
	assert.Assert(t, fs.Alive(ID{PID: 10, StartTicks: 500}))
	assert.Assert(t, !fs.Alive(ID{PID: 10, StartTicks: 499}), "a recycled PID is another process")
	assert.Assert(t, !fs.Alive(ID{PID: 11, StartTicks: 500}))
	args, err := fs.Cmdline(10)
	assert.NilError(t, err)
	v, ok := Flag(args, "address")
	assert.Assert(t, ok)
	assert.Equal(t, v, "/x/c.sock")
	_, ok = Flag(args, "id")
	assert.Assert(t, !ok)
	cg, err := fs.CgroupPaths(10)
	assert.NilError(t, err)
	assert.DeepEqual(t, cg, []string{"/kubepods/pod1/c1", "/"})
	pids, err := fs.PIDs()
	assert.NilError(t, err)
	assert.DeepEqual(t, pids, []int{10})
}

func TestHostSelf(t *testing.T) {
	id, err := Host.Self()
	assert.NilError(t, err)
	assert.Assert(t, Host.Alive(id))
	_, err = Host.BootID()
	assert.NilError(t, err)
}

func TestFlag(t *testing.T) {
	tests := []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"-address", "/a"}, "/a", true},
		{[]string{"--address=/b"}, "/b", true},
		{[]string{"-address=/c", "-address", "/d"}, "/c", true},
		{[]string{"-address"}, "", false},
		{[]string{"x/-address"}, "", false},
	}
	for _, tt := range tests {
		got, ok := Flag(tt.args, "address")
		assert.Equal(t, got, tt.want, "%v", tt.args)
		assert.Equal(t, ok, tt.ok, "%v", tt.args)
	}
}

func TestSignalOnlyTheRecordedProcess(t *testing.T) {
	cmd := osexec.Command("sleep", "300")
	assert.NilError(t, cmd.Start())
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	id, err := Host.Identify(cmd.Process.Pid)
	assert.NilError(t, err)
	err = Signal(ID{PID: id.PID, StartTicks: id.StartTicks + 1}, syscall.SIGKILL)
	assert.Assert(t, errors.Is(err, ErrNotSame), "%v", err)
	select {
	case <-done:
		t.Fatal("a PID with another start time was signalled")
	case <-time.After(200 * time.Millisecond):
	}
	assert.NilError(t, Signal(id, syscall.SIGKILL))
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the recorded process was not signalled")
	}
	assert.Assert(t, errors.Is(Signal(id, syscall.SIGKILL), ErrNotSame))
}
