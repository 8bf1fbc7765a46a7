package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	hostNS    = "pid:[4026531836]"
	podNS     = "pid:[4026532999]"
	testBtime = 1700000000
)

// fakeProcess is one process of a fake /proc.
type fakeProcess struct {
	pid    int
	uid    int // real and effective
	euid   *int
	hostNS bool
	exe    string // what /proc/<pid>/exe points to
	comm   string
	ticks  string // starttime, field 22 of stat
}

// fakeProc writes a minimal /proc: PID 1's PID namespace and, per
// process, comm, stat, status, ns/pid and exe.
func fakeProc(t *testing.T, procs ...fakeProcess) string {
	t.Helper()
	root := t.TempDir()
	symlink(t, hostNS, filepath.Join(root, "1", "ns", "pid"))
	for _, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(p.pid))
		comm, ticks := p.comm, p.ticks
		if comm == "" {
			comm = "kubelet"
		}
		if ticks == "" {
			ticks = "12345"
		}
		euid := p.uid
		if p.euid != nil {
			euid = *p.euid
		}
		write(t, filepath.Join(dir, "comm"), comm+"\n", 0644)
		write(t, filepath.Join(dir, "stat"), strconv.Itoa(p.pid)+" ("+comm+") S 1 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 "+ticks+" 1 1 18446744073709551615\n", 0644)
		write(t, filepath.Join(dir, "status"), "Name:\t"+comm+"\nUid:\t"+strconv.Itoa(p.uid)+"\t"+strconv.Itoa(euid)+"\t0\t0\nGid:\t0\t0\t0\t0\n", 0644)
		ns := podNS
		if p.hostNS {
			ns = hostNS
		}
		symlink(t, ns, filepath.Join(dir, "ns", "pid"))
		if p.exe != "" {
			symlink(t, p.exe, filepath.Join(dir, "exe"))
		}
	}
	return root
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // the umask may have cut it
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// binaries is a root-owned-looking /usr/bin: kubelet scripts printing their
// version, and a script that leaves a marker when run.
type binaries struct {
	dir, kubelet, other, impostor, marker string
}

func newBinaries(t *testing.T) binaries {
	dir := t.TempDir()
	b := binaries{dir: dir, kubelet: filepath.Join(dir, "kubelet-v1.19.16"), other: filepath.Join(dir, "kubelet-v1.20.15"),
		impostor: filepath.Join(dir, "pod", "kubelet"), marker: filepath.Join(dir, "impostor-was-executed")}
	write(t, b.kubelet, "#!/bin/sh\necho Kubernetes v1.19.16\n", 0755)
	write(t, b.other, "#!/bin/sh\necho Kubernetes v1.20.15\n", 0755)
	write(t, b.impostor, "#!/bin/sh\ntouch "+b.marker+"\necho Kubernetes v1.19.16\n", 0755)
	symlink(t, b.kubelet, filepath.Join(dir, "usr", "bin", "kubelet"))
	return b
}

func (b binaries) assertImpostorNotRun(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(b.marker); err == nil {
		t.Fatal("the impostor's executable was run")
	}
}

func intp(i int) *int { return &i }

func TestFind(t *testing.T) {
	uid := os.Getuid()
	b := newBinaries(t)
	kubelet := fakeProcess{pid: 42, uid: uid, hostNS: true, exe: b.kubelet, ticks: "12345"}
	for _, tc := range []struct {
		name      string
		procs     []fakeProcess
		config    Config
		systemctl string // script body; the systemd run dir exists when set
		wantPID   int
		wantBy    string
		wantErr   string
	}{
		{name: "the only host root process running the binary", wantPID: 42, wantBy: "process scan",
			procs: []fakeProcess{kubelet, {pid: 7, uid: uid, hostNS: true, exe: b.other, comm: "containerd"}}},
		{name: "impostors named kubelet are not looked at", wantPID: 42, wantBy: "process scan",
			procs: []fakeProcess{kubelet,
				{pid: 100, uid: 1000, exe: b.impostor},                               // a pod's process
				{pid: 101, uid: uid, hostNS: true, exe: b.impostor},                  // host root, another binary
				{pid: 102, uid: 1000, hostNS: true, exe: b.kubelet},                  // the binary, not as root
				{pid: 103, uid: uid, euid: intp(1000), hostNS: true, exe: b.kubelet}, // effective uid not root
				{pid: 104, uid: uid, exe: b.kubelet},                                 // the binary in a pod's PID namespace
			}},
		{name: "only impostors", wantErr: "no running kubelet: no process of the host PID namespace runs",
			procs: []fakeProcess{{pid: 100, uid: 1000, exe: b.impostor}, {pid: 101, uid: uid, hostNS: true, exe: b.impostor}}},
		{name: "two processes run the binary", wantErr: "2 processes run " + b.kubelet + " as root (pids [42 43]): choose the kubelet with --kubelet-pid",
			procs: []fakeProcess{kubelet, {pid: 43, uid: uid, hostNS: true, exe: b.kubelet}}},
		{name: "a comm with spaces and parentheses", wantPID: 8, procs: []fakeProcess{{pid: 8, uid: uid, hostNS: true, exe: b.kubelet, comm: "a b) (c"}}},
		{name: "--kubelet-pid", config: Config{PID: 43}, wantPID: 43, wantBy: "--kubelet-pid",
			procs: []fakeProcess{kubelet, {pid: 43, uid: uid, hostNS: true, exe: b.kubelet}}},
		{name: "--kubelet-pid of a process running another binary", config: Config{PID: 101},
			wantErr: `kubelet pid 101 (--kubelet-pid) runs "` + b.impostor + `", which is not the kubelet binary ` + b.kubelet,
			procs:   []fakeProcess{kubelet, {pid: 101, uid: uid, hostNS: true, exe: b.impostor}}},
		{name: "--kubelet-pid of no process", config: Config{PID: 99}, wantErr: "kubelet pid 99 (--kubelet-pid): no such process", procs: []fakeProcess{kubelet}},
		{name: "binary replaced, kubelet not restarted", config: Config{Binary: b.other},
			wantErr: "no running kubelet: no process of the host PID namespace runs " + b.other, procs: []fakeProcess{kubelet}},
		{name: "binary replaced, --kubelet-pid", config: Config{Binary: b.other, PID: 42},
			wantErr: "which is not the kubelet binary " + b.other + " (replaced without restarting the kubelet?)", procs: []fakeProcess{kubelet}},
		{name: "systemd's main PID", systemctl: "echo 43", wantPID: 43, wantBy: "systemd kubelet.service",
			procs: []fakeProcess{kubelet, {pid: 43, uid: uid, hostNS: true, exe: b.kubelet}}},
		{name: "systemd's main PID running another binary", systemctl: "echo 101", wantErr: "kubelet pid 101 (systemd kubelet.service) runs",
			procs: []fakeProcess{kubelet, {pid: 101, uid: uid, hostNS: true, exe: b.impostor}}},
		{name: "systemd without a kubelet unit process", systemctl: "echo 0", wantPID: 42, wantBy: "process scan", procs: []fakeProcess{kubelet}},
		{name: "systemctl fails", systemctl: "echo boom >&2; exit 1", wantErr: "asking systemd for the main PID of kubelet.service", procs: []fakeProcess{kubelet}},
		{name: "systemctl says nonsense", systemctl: "echo '[not set]'", wantErr: `unexpected "[not set]"`, procs: []fakeProcess{kubelet}},
		{name: "--kubelet-pid wins over systemd", config: Config{PID: 42}, systemctl: "echo 43", wantPID: 42,
			procs: []fakeProcess{kubelet, {pid: 43, uid: uid, hostNS: true, exe: b.kubelet}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.config
			c.ProcRoot = fakeProc(t, tc.procs...)
			c.RootUID = uid
			if c.Binary == "" {
				c.Binary = filepath.Join(b.dir, "usr", "bin", "kubelet")
			}
			c.Systemd = Systemd{RunDir: filepath.Join(t.TempDir(), "no-systemd")}
			if tc.systemctl != "" {
				c.Systemd.RunDir = t.TempDir()
				c.Systemd.Systemctl = filepath.Join(t.TempDir(), "systemctl")
				write(t, c.Systemd.Systemctl, "#!/bin/sh\n[ \"$*\" = 'show --property MainPID --value kubelet.service' ] || exit 3\n"+tc.systemctl+"\n", 0755)
			}
			p, err := Find(context.Background(), c)
			b.assertImpostorNotRun(t)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Find = %+v, %v; want error %q", p, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.PID != tc.wantPID || (tc.wantBy != "" && p.FoundBy != tc.wantBy) {
				t.Errorf("Find = pid %d found by %q, want %d by %q", p.PID, p.FoundBy, tc.wantPID, tc.wantBy)
			}
			if p.Binary.Path != b.kubelet && p.Binary.Path != b.other {
				t.Errorf("binary %s, want the resolved configured binary", p.Binary.Path)
			}
			v, err := p.Binary.Version(context.Background(), uid)
			if err != nil || v.String() != "v1.19.16" {
				t.Errorf("Version = %s, %v", v, err)
			}
			b.assertImpostorNotRun(t)
		})
	}
}

func TestPIDFile(t *testing.T) {
	uid := os.Getuid()
	b := newBinaries(t)
	root := fakeProc(t, fakeProcess{pid: 42, uid: uid, hostNS: true, exe: b.kubelet})
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0600); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "good"), "42\n", 0644)
	write(t, filepath.Join(dir, "writable"), "42\n", 0666)
	write(t, filepath.Join(dir, "garbage"), "kubelet\n", 0644)
	symlink(t, filepath.Join(dir, "good"), filepath.Join(dir, "link"))
	for _, tc := range []struct{ file, wantErr string }{
		{file: "good"},
		{file: "fifo", wantErr: "not a regular file"},
		{file: "writable", wantErr: "writable by group or others"},
		{file: "garbage", wantErr: `no PID in "kubelet"`},
		{file: "link", wantErr: "too many levels of symbolic links"},
		{file: "missing", wantErr: "no such file"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			done := make(chan struct{})
			var p *Process
			var err error
			go func() {
				defer close(done)
				p, err = Find(context.Background(), Config{ProcRoot: root, PIDFile: filepath.Join(dir, tc.file), RootUID: uid, Binary: b.kubelet})
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Find blocked on the pidfile")
			}
			if tc.wantErr == "" {
				if err != nil || p.PID != 42 || p.FoundBy != "pidfile "+filepath.Join(dir, tc.file) {
					t.Errorf("Find = %+v, %v", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Find = %+v, %v; want error %q", p, err, tc.wantErr)
			}
		})
	}
}

func TestTrustedBinary(t *testing.T) {
	uid := os.Getuid()
	b := newBinaries(t)
	write(t, filepath.Join(b.dir, "group-writable"), "#!/bin/sh\ntouch "+b.marker+"\n", 0775)
	write(t, filepath.Join(b.dir, "world-writable"), "#!/bin/sh\ntouch "+b.marker+"\n", 0757)
	symlink(t, filepath.Join(b.dir, "world-writable"), filepath.Join(b.dir, "link-to-writable"))
	for _, tc := range []struct {
		name, path string
		rootUID    int
		wantErr    string
	}{
		{name: "a symlink to a root-owned binary", path: filepath.Join(b.dir, "usr", "bin", "kubelet"), rootUID: uid},
		{name: "group-writable", path: filepath.Join(b.dir, "group-writable"), rootUID: uid, wantErr: "writable by group or others (mode -rwxrwxr-x): refusing to run it"},
		{name: "world-writable behind a symlink", path: filepath.Join(b.dir, "link-to-writable"), rootUID: uid, wantErr: "link-to-writable (" + filepath.Join(b.dir, "world-writable") + "): writable by group or others"},
		{name: "owned by someone else", path: b.kubelet, rootUID: uid + 4321, wantErr: "not owned by uid"},
		{name: "a directory", path: b.dir, rootUID: uid, wantErr: "not a regular file"},
		{name: "relative", path: "kubelet", rootUID: uid, wantErr: "want an absolute path"},
		{name: "missing", path: filepath.Join(b.dir, "missing"), rootUID: uid, wantErr: "missing does not exist (give --kubelet-binary)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Version(context.Background(), tc.path, tc.rootUID)
			b.assertImpostorNotRun(t)
			if tc.wantErr == "" {
				if err != nil || v.String() != "v1.19.16" {
					t.Errorf("Version = %s, %v", v, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Version = %s, %v; want error %q", v, err, tc.wantErr)
			}
		})
	}
}

// A binary swapped between the check and the run is not run.
func TestVersionRefusesABinaryReplacedAfterTheCheck(t *testing.T) {
	b := newBinaries(t)
	bin, err := TrustedBinary(b.kubelet, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(b.impostor, b.kubelet); err != nil {
		t.Fatal(err)
	}
	if _, err := bin.Version(context.Background(), os.Getuid()); err == nil || !strings.Contains(err.Error(), "was replaced while being checked") {
		t.Errorf("Version = %v", err)
	}
	b.assertImpostorNotRun(t)
}

func TestParseVersionOutput(t *testing.T) {
	for _, bad := range []string{"", "Kubernetes", "Kubernetes v1.x", "v1.18.19"} {
		if _, err := ParseVersionOutput(bad); err == nil {
			t.Errorf("ParseVersionOutput(%q) accepted", bad)
		}
	}
	if v, err := ParseVersionOutput("Kubernetes v1.18.19\n"); err != nil || v.String() != "v1.18.19" {
		t.Errorf("ParseVersionOutput = %s, %v", v, err)
	}
}

func TestStartTime(t *testing.T) {
	root := fakeProc(t, fakeProcess{pid: 42, ticks: "12345"}, fakeProcess{pid: 8, comm: "a b) (c"},
		fakeProcess{pid: 9, ticks: "-1"}, fakeProcess{pid: 10, ticks: "184467440737095516150"})
	clocks := func() (time.Duration, time.Time, error) {
		return time.Hour, time.Unix(testBtime, 0).Add(time.Hour), nil
	}
	got, err := StartTime(root, 42, clocks)
	if want := time.Unix(testBtime, 0).Add(123460 * time.Millisecond); err != nil || !got.Equal(want) {
		t.Errorf("StartTime = %s, %v; want %s", got, err, want)
	}
	if _, err := StartTime(root, 8, clocks); err != nil {
		t.Errorf("a comm with spaces and parentheses: %v", err)
	}
	for _, pid := range []int{9, 10} {
		if _, err := StartTime(root, pid, clocks); err == nil || !strings.Contains(err.Error(), "bad starttime") {
			t.Errorf("pid %d: %v", pid, err)
		}
	}
}

// TestStartTimeIsNeverEarly: the start time counts from the boot time that
// CLOCK_REALTIME - CLOCK_BOOTTIME give (not btime, whole seconds), and
// starttime's ticks are rounded up: the result is never before the true
// start, and at most a tick after it.
func TestStartTimeIsNeverEarly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		boot  time.Time // btime in the fake /proc is its whole seconds
		ticks uint64
	}{
		{name: "boot at .7 s", boot: time.Unix(testBtime, 7e8), ticks: 100000},
		{name: "boot on the second", boot: time.Unix(testBtime, 0), ticks: 100000},
		{name: "boot just before the next second", boot: time.Unix(testBtime, 999999999), ticks: 12345},
		{name: "started at boot", boot: time.Unix(testBtime, 5e8), ticks: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeProc(t, fakeProcess{pid: 42, ticks: strconv.FormatUint(tc.ticks, 10)})
			clocks := func() (time.Duration, time.Time, error) {
				since := 36 * time.Hour
				return since, tc.boot.Add(since), nil
			}
			got, err := StartTime(root, 42, clocks)
			if err != nil {
				t.Fatal(err)
			}
			// The kernel truncates the start to a tick: the true start is in
			// [ticks, ticks+1) ticks after boot.
			earliest := tc.boot.Add(time.Duration(tc.ticks) * 10 * time.Millisecond)
			latest := earliest.Add(10 * time.Millisecond)
			if got.Before(latest) || got.After(latest) {
				t.Errorf("StartTime = %s, want %s (the true start is in [%s, %s)); btime gives %s",
					got.Format(time.RFC3339Nano), latest.Format(time.RFC3339Nano), earliest.Format(time.RFC3339Nano),
					latest.Format(time.RFC3339Nano), time.Unix(testBtime, 0).Add(time.Duration(tc.ticks)*10*time.Millisecond).Format(time.RFC3339Nano))
			}
		})
	}
	failing := func() (time.Duration, time.Time, error) { return 0, time.Time{}, os.ErrPermission }
	if _, err := StartTime(fakeProc(t, fakeProcess{pid: 42}), 42, failing); err == nil || !strings.Contains(err.Error(), "boot time") {
		t.Errorf("a failing clock: %v", err)
	}
}

// TestSystemClocks: the machine's boot time from its clocks agrees with
// btime, which is the same boot time truncated to the second (give or take
// a second of clock adjustments since boot).
func TestSystemClocks(t *testing.T) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Skip(err)
	}
	var btime int64
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "btime" {
			btime, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	since, now, err := SystemClocks()
	if err != nil {
		t.Fatal(err)
	}
	boot := now.Add(-since)
	if d := boot.Sub(time.Unix(btime, 0)); d < -time.Second || d > 2*time.Second {
		t.Errorf("boot time from the clocks %s, btime %d: %s apart", boot.Format(time.RFC3339Nano), btime, d)
	}
}
