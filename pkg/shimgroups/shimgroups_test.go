package shimgroups

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// fakeHost is a file system root with runc's state, containerd's bundles
// and /proc, and the kernel's listening sockets.
type fakeHost struct {
	t         *testing.T
	root      string
	listeners []Listener
	Host
}

func newFakeHost(t *testing.T) *fakeHost {
	root := t.TempDir()
	f := &fakeHost{t: t, root: root, Host: Host{RuncRoot: DefaultRuncRoot, TaskState: DefaultTaskState, FSRoot: root}}
	f.Listeners = func() ([]Listener, error) { return f.listeners, nil }
	return f
}

func (f *fakeHost) write(p, data string) {
	f.t.Helper()
	full := filepath.Join(f.root, p)
	assert.NilError(f.t, os.MkdirAll(filepath.Dir(full), 0o755))
	assert.NilError(f.t, os.WriteFile(full, []byte(data), 0o644))
}

func (f *fakeHost) process(pid, ppid int, start uint64) {
	f.write("/proc/"+strconv.Itoa(pid)+"/stat", fmt.Sprintf("%d (x) S %d 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 %d 1 1 18446744073709551615\n", pid, ppid, start))
}

// shim is a shim process holding the listening socket inode on fd 3,
// bound to path: bound makes path's file (a new one) that socket's, as a
// bind does; otherwise the socket keeps the name of a removed file.
func (f *fakeHost) shim(pid int, inode, path string, bound bool) {
	f.process(pid, 1, 100)
	fd := filepath.Join(f.root, "/proc", strconv.Itoa(pid), "fd")
	assert.NilError(f.t, os.MkdirAll(fd, 0o755))
	assert.NilError(f.t, os.Symlink("socket:["+inode+"]", filepath.Join(fd, "3")))
	assert.NilError(f.t, os.Symlink("/dev/null", filepath.Join(fd, "0")))
	l := Listener{Inode: inode, Name: path, VFSInode: 1} // inode 1: no file of the test's
	if bound {
		// A new file in the old one's place (made while the old one still
		// exists: another inode).
		full := filepath.Join(f.root, path)
		f.write(path+".new", "")
		assert.NilError(f.t, os.Rename(full+".new", full))
		fi, err := os.Stat(full)
		assert.NilError(f.t, err)
		l.VFSInode = fi.Sys().(*syscall.Stat_t).Ino
	}
	f.listeners = append(f.listeners, l)
}

// container runs id's init (pid, start) under shim, its bundle naming
// address.
func (f *fakeHost) container(id string, pid, shim int, start uint64, address string) {
	f.process(pid, shim, start)
	data, err := json.Marshal(map[string]interface{}{"id": id, "init_process_pid": pid, "init_process_start": start})
	assert.NilError(f.t, err)
	f.write(filepath.Join(DefaultRuncRoot, id, "state.json"), string(data))
	f.write(filepath.Join(DefaultTaskState, id, "address"), address+"\n")
}

const (
	sockA = "/run/containerd/s/aaa"
	sockB = "/run/containerd/s/bbb"
)

func TestStranded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(f *fakeHost)
		want    []Task
		checked int
	}{
		{name: "one shim per pod, each at its address", setup: func(f *fakeHost) {
			f.shim(10, "501", sockA, true)
			f.shim(20, "502", sockB, true)
			f.container("sandboxa", 11, 10, 7, "unix://"+sockA)
			f.container("appa", 12, 10, 8, "unix://"+sockA)
			f.container("sandboxb", 21, 20, 9, "unix://"+sockB)
		}, checked: 3},
		{name: "the pod's group split: the sandbox's shim lost its address to the app's", setup: func(f *fakeHost) {
			// Both listen with the name; the file at the name is the second's.
			f.shim(10, "501", sockA, true)
			f.shim(30, "503", sockA, true)
			f.container("sandboxa", 11, 10, 7, "unix://"+sockA)
			f.container("appa", 12, 30, 8, "unix://"+sockA)
		}, want: []Task{{ID: "sandboxa", Shim: 10, Address: "unix://" + sockA, Listener: 30}}, checked: 2},
		{name: "nothing listens at the address", setup: func(f *fakeHost) {
			f.shim(10, "501", sockA, false) // its file removed, none made since
			f.container("sandboxa", 11, 10, 7, "unix://"+sockA)
		}, want: []Task{{ID: "sandboxa", Shim: 10, Address: "unix://" + sockA}}, checked: 1},
		{name: "containerd 2.x's bundles: the address in bootstrap.json, no address file", setup: func(f *fakeHost) {
			f.shim(10, "501", sockA, true)
			f.shim(20, "502", sockB, false) // its file removed, none made since
			f.container("sandboxa", 11, 10, 7, "unix://"+sockA)
			f.container("sandboxb", 21, 20, 9, "unix://"+sockB)
			for id, sock := range map[string]string{"sandboxa": sockA, "sandboxb": sockB} {
				assert.NilError(t, os.Remove(filepath.Join(f.root, DefaultTaskState, id, "address")))
				f.write(filepath.Join(DefaultTaskState, id, "bootstrap.json"), `{"version":3,"address":"unix://`+sock+`","protocol":"ttrpc"}`)
			}
		}, want: []Task{{ID: "sandboxb", Shim: 20, Address: "unix://" + sockB}}, checked: 2},
		{name: "a container that does not run is left out", setup: func(f *fakeHost) {
			f.shim(10, "501", sockA, false)
			f.container("gone", 11, 10, 7, "unix://"+sockA)
			f.process(11, 10, 70) // PID 11 reused by another process
		}},
		{name: "a container without a bundle (being created or deleted) is left out", setup: func(f *fakeHost) {
			f.shim(10, "501", sockA, false)
			f.container("sandboxa", 11, 10, 7, "unix://"+sockA)
			assert.NilError(t, os.RemoveAll(filepath.Join(f.root, DefaultTaskState, "sandboxa")))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHost(t)
			tc.setup(f)
			got, checked, err := f.Stranded()
			assert.NilError(t, err)
			assert.Check(t, is.DeepEqual(got, tc.want))
			assert.Check(t, is.Equal(checked, tc.checked))
		})
	}
}

func TestStrandedNoRuncRoot(t *testing.T) {
	got, checked, err := Host{RuncRoot: "/nope", TaskState: DefaultTaskState, FSRoot: t.TempDir(),
		Listeners: func() ([]Listener, error) { return nil, nil }}.Stranded()
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 0))
	assert.Check(t, is.Equal(checked, 0))
}

func TestStrandedBadAddress(t *testing.T) {
	f := newFakeHost(t)
	f.shim(10, "501", sockA, true)
	f.container("sandboxa", 11, 10, 7, "ttrpc+vsock://3:1024")
	_, _, err := f.Stranded()
	assert.Error(t, err, `task sandboxa: address "ttrpc+vsock://3:1024" is not a unix socket`)
}

func TestTaskString(t *testing.T) {
	assert.Check(t, is.Equal(Task{ID: "fb1b77b8f6862ac0cd93", Shim: 10, Address: "unix://" + sockA, Listener: 30}.String(),
		"fb1b77b8f6862: its shim is pid 10, but unix:///run/containerd/s/aaa reaches pid 30"))
	assert.Check(t, is.Equal(Task{ID: "x", Shim: 10, Address: "unix://" + sockA}.String(),
		"x: its shim (pid 10) does not listen at unix:///run/containerd/s/aaa, nothing does"))
}

// diagMsg is a unix_diag_msg of socket inode 362762 with attrs.
func diagMsg(attrs ...[]byte) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint32(b[4:], 362762)
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

// diagAttr is a netlink attribute, padded to 4 bytes.
func diagAttr(typ uint16, data []byte) []byte {
	a := unpadded(typ, data)
	for len(a)%4 != 0 {
		a = append(a, 0)
	}
	return a
}

// unpadded is an attribute without its padding, as a message's last may
// end.
func unpadded(typ uint16, data []byte) []byte {
	return rawAttr(uint16(4+len(data)), typ, data)
}

// rawAttr is an attribute header claiming length n, then data.
func rawAttr(n, typ uint16, data []byte) []byte {
	a := make([]byte, 4, 4+len(data)+3)
	binary.NativeEndian.PutUint16(a[0:], n)
	binary.NativeEndian.PutUint16(a[2:], typ)
	return append(a, data...)
}

func TestParseUnixDiag(t *testing.T) {
	msg, attr := diagMsg, diagAttr
	vfs := make([]byte, 8)
	binary.NativeEndian.PutUint32(vfs, 860673)
	for _, tc := range []struct {
		name string
		in   []byte
		want Listener
		err  string
	}{
		// The kernel sends a path's name with its NUL.
		{name: "path", in: msg(attr(unixDiagName, []byte("/run/containerd/s/0c9e\x00")), attr(unixDiagVFS, vfs)),
			want: Listener{Inode: "362762", Name: "/run/containerd/s/0c9e", VFSInode: 860673}},
		{name: "abstract", in: msg(attr(unixDiagName, []byte("\x00containerd-shim"))),
			want: Listener{Inode: "362762", Name: "\x00containerd-shim"}},
		{name: "no attributes", in: msg(), want: Listener{Inode: "362762"}},
		{name: "an attribute of another type is passed over", in: msg(attr(7, []byte{1, 2, 3, 4, 5}), attr(unixDiagVFS, vfs)),
			want: Listener{Inode: "362762", VFSInode: 860673}},
		// The last attribute of a message may end without its padding.
		{name: "an unpadded last attribute", in: msg(attr(unixDiagVFS, vfs), unpadded(unixDiagName, []byte("/run/s\x00"))),
			want: Listener{Inode: "362762", Name: "/run/s", VFSInode: 860673}},
		{name: "an unpadded last attribute of one byte", in: msg(unpadded(unixDiagName, []byte("/"))),
			want: Listener{Inode: "362762", Name: "/"}},
		{name: "short", in: []byte{1, 2, 3}, err: "a unix_diag_msg of 3 bytes, below 16"},
		{name: "a length past the message's end", in: msg(attr(unixDiagVFS, vfs), rawAttr(40, unixDiagName, []byte("/run/s\x00"))),
			err: "socket 362762: attribute 1 (type 0) of 40 bytes, 11 left: truncated"},
		{name: "a length past the message's end by its padding only", in: msg(rawAttr(12, unixDiagName, []byte("/run/s\x00"))),
			err: "socket 362762: attribute 0 (type 0) of 12 bytes, 11 left: truncated"},
		{name: "a length below the header's", in: msg(rawAttr(2, unixDiagName, []byte("/run/s\x00"))),
			err: "socket 362762: attribute 0 (type 0) of 2 bytes, below its header's 4"},
		{name: "a truncated header", in: append(msg(attr(unixDiagName, []byte("/run/s\x00"))), 8, 0),
			err: "socket 362762: 2 bytes after attribute 0: a truncated attribute header"},
		{name: "a truncated header right after the unix_diag_msg", in: append(msg(), 8),
			err: "socket 362762: 1 bytes after the unix_diag_msg: a truncated attribute header"},
		{name: "a VFS attribute too short", in: msg(attr(unixDiagVFS, vfs[:4])),
			err: "socket 362762: a UNIX_DIAG_VFS of 4 bytes, below 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseUnixDiag(tc.in)
			if tc.err != "" {
				assert.Error(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.Check(t, is.DeepEqual(got, tc.want))
		})
	}
}

// FuzzParseUnixDiag: no message, however cut or forged, panics the
// parser, and one it rejects yields no listener.
func FuzzParseUnixDiag(f *testing.F) {
	vfs := make([]byte, 8)
	binary.NativeEndian.PutUint32(vfs, 860673)
	f.Add(diagMsg(diagAttr(unixDiagName, []byte("/run/containerd/s/0c9e\x00")), diagAttr(unixDiagVFS, vfs)))
	f.Add(diagMsg(diagAttr(unixDiagVFS, vfs), unpadded(unixDiagName, []byte("/run/s\x00"))))
	f.Add(diagMsg(unpadded(unixDiagName, []byte("/"))))
	f.Add(diagMsg(rawAttr(0xffff, unixDiagName, []byte("/run/s"))))
	f.Add(diagMsg(rawAttr(0, unixDiagName, nil)))
	f.Add(append(diagMsg(), 5, 0))
	f.Add(diagMsg())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseUnixDiag(b)
		if err != nil {
			if l != (Listener{}) {
				t.Fatalf("a listener %+v with the error %v", l, err)
			}
			return
		}
		if len(b) < 16 {
			t.Fatalf("no error for %d bytes", len(b))
		}
		if len(l.Name) > len(b) {
			t.Fatalf("a name of %d bytes from %d", len(l.Name), len(b))
		}
	})
}

// ourPort is the port ID of the tests' netlink socket: the kernel's
// replies to it carry it.
const ourPort = 4711

// nlMsg is one netlink message of type typ and sequence seq around data,
// to ourPort.
func nlMsg(typ uint16, seq uint32, data []byte) []byte {
	return nlMsgTo(typ, seq, ourPort, data)
}

// nlMsgTo is one netlink message of type typ, sequence seq and port ID
// port around data.
func nlMsgTo(typ uint16, seq, port uint32, data []byte) []byte {
	b := make([]byte, 16, 16+len(data)+3)
	binary.NativeEndian.PutUint32(b[0:], uint32(16+len(data)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint32(b[8:], seq)
	binary.NativeEndian.PutUint32(b[12:], port)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// TestReadDumpTakesOnlyTheKernelsReplies: a datagram another process
// sent to the socket (sender port ID not 0), or one answering another
// request (another sequence number), is not read.
func TestReadDumpTakesOnlyTheKernelsReplies(t *testing.T) {
	listener := func(name string) []byte {
		vfs := make([]byte, 8)
		binary.NativeEndian.PutUint32(vfs, 860673)
		return diagMsg(diagAttr(unixDiagName, []byte(name+"\x00")), diagAttr(unixDiagVFS, vfs))
	}
	done := func(seq uint32) []byte { return nlMsg(unix.NLMSG_DONE, seq, make([]byte, 4)) }
	kernel := &unix.SockaddrNetlink{Family: unix.AF_NETLINK}
	forger := &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Pid: 4242}
	type datagram struct {
		b    []byte
		from unix.Sockaddr
	}
	dgrams := []datagram{
		{append(nlMsg(unix.SOCK_DIAG_BY_FAMILY, dumpSeq, listener("/run/forged")), done(dumpSeq)...), forger},
		{nlMsg(unix.NLMSG_ERROR, dumpSeq, []byte{0xf3, 0xff, 0xff, 0xff}), forger},
		{[]byte{1, 2, 3}, forger},
		{nlMsg(unix.SOCK_DIAG_BY_FAMILY, dumpSeq, listener("/run/no-sender")), nil},
		{append(nlMsg(unix.SOCK_DIAG_BY_FAMILY, dumpSeq+1, listener("/run/stale")), done(dumpSeq+1)...), kernel},
		{nlMsg(unix.SOCK_DIAG_BY_FAMILY, dumpSeq, listener("/run/containerd/s/aaa")), kernel},
		{done(dumpSeq), kernel},
	}
	got, err := readDump(func() ([]byte, unix.Sockaddr, error) {
		if len(dgrams) == 0 {
			return nil, nil, syscall.EAGAIN
		}
		d := dgrams[0]
		dgrams = dgrams[1:]
		return d.b, d.from, nil
	}, dumpSeq, ourPort)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, []Listener{{Inode: "362762", Name: "/run/containerd/s/aaa", VFSInode: 860673}}))
}

// kernelReplies is a recv that hands out dgrams, each from the kernel
// (sender port ID 0), then fails.
func kernelReplies(dgrams ...[]byte) func() ([]byte, unix.Sockaddr, error) {
	return func() ([]byte, unix.Sockaddr, error) {
		if len(dgrams) == 0 {
			return nil, nil, syscall.EAGAIN
		}
		d := dgrams[0]
		dgrams = dgrams[1:]
		return d, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}, nil
	}
}

// TestReadDumpRejectsTruncatedMessages: a reply whose unix_diag_msg or
// attributes are cut short is an error, not a listener read in part (a
// listener without its name or bound file would make its shim's tasks
// look stranded, or hide the one bound at an address).
func TestReadDumpRejectsTruncatedMessages(t *testing.T) {
	vfs := make([]byte, 8)
	binary.NativeEndian.PutUint32(vfs, 860673)
	for _, tc := range []struct {
		name string
		msg  []byte // the SOCK_DIAG_BY_FAMILY message's payload
		err  string
	}{
		{name: "an attribute's length past the message's end", msg: diagMsg(diagAttr(unixDiagVFS, vfs), rawAttr(40, unixDiagName, []byte("/run/s\x00"))),
			err: "sock_diag: socket 362762: attribute 1 (type 0) of 40 bytes, 11 left: truncated"},
		{name: "an attribute's length below its header's", msg: diagMsg(rawAttr(2, unixDiagName, []byte("/run/s\x00"))),
			err: "sock_diag: socket 362762: attribute 0 (type 0) of 2 bytes, below its header's 4"},
		{name: "a truncated attribute header", msg: append(diagMsg(diagAttr(unixDiagName, []byte("/run/s\x00"))), 8, 0, 0, 0)[:16+12+2],
			err: "sock_diag: socket 362762: 2 bytes after attribute 0: a truncated attribute header"},
		{name: "a unix_diag_msg cut short", msg: diagMsg()[:12],
			err: "sock_diag: a unix_diag_msg of 12 bytes, below 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readDump(kernelReplies(nlMsg(unix.SOCK_DIAG_BY_FAMILY, dumpSeq, tc.msg), nlMsg(unix.NLMSG_DONE, dumpSeq, make([]byte, 4))), dumpSeq, ourPort)
			assert.Error(t, err, tc.err)
			assert.Check(t, is.Len(got, 0))
		})
	}
}

// TestReadDumpTakesOnlyRepliesToItsPort: the kernel's replies to this
// socket's request carry its port ID; a message for another port ID (or
// one naming none) is not a reply to it, whoever sent it.
func TestReadDumpTakesOnlyRepliesToItsPort(t *testing.T) {
	listener := func(name string) []byte {
		vfs := make([]byte, 8)
		binary.NativeEndian.PutUint32(vfs, 860673)
		return diagMsg(diagAttr(unixDiagName, []byte(name+"\x00")), diagAttr(unixDiagVFS, vfs))
	}
	for _, tc := range []struct {
		name  string
		other uint32 // the port ID of the messages not ours
	}{
		{name: "another socket's port ID", other: ourPort + 1},
		{name: "no port ID", other: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readDump(kernelReplies(
				nlMsgTo(unix.SOCK_DIAG_BY_FAMILY, dumpSeq, tc.other, listener("/run/not-ours")),
				// An error or an end for another port ID ends nothing.
				nlMsgTo(unix.NLMSG_ERROR, dumpSeq, tc.other, []byte{0xf3, 0xff, 0xff, 0xff}),
				nlMsgTo(unix.NLMSG_DONE, dumpSeq, tc.other, make([]byte, 4)),
				nlMsg(unix.SOCK_DIAG_BY_FAMILY, dumpSeq, listener("/run/containerd/s/aaa")),
				nlMsg(unix.NLMSG_DONE, dumpSeq, make([]byte, 4)),
			), dumpSeq, ourPort)
			assert.NilError(t, err)
			assert.Check(t, is.DeepEqual(got, []Listener{{Inode: "362762", Name: "/run/containerd/s/aaa", VFSInode: 860673}}))
		})
	}
}

// TestUnixListenersFindsARealListener: the kernel's own dump, through the
// code path production uses (its socket, port ID and sequence checks),
// lists a socket this test binds, with its bound file.
func TestUnixListenersFindsARealListener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shim.sock")
	ln, err := net.Listen("unix", path)
	assert.NilError(t, err)
	defer ln.Close()
	fi, err := os.Stat(path)
	assert.NilError(t, err)
	got, err := UnixListeners()
	if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		t.Skipf("no sock_diag here: %v", err)
	}
	assert.NilError(t, err)
	var found []Listener
	for _, l := range got {
		if l.Name == path {
			found = append(found, l)
		}
	}
	assert.Assert(t, is.Len(found, 1), "listeners: %d", len(got))
	assert.Check(t, is.Equal(found[0].VFSInode, fi.Sys().(*syscall.Stat_t).Ino))
}
