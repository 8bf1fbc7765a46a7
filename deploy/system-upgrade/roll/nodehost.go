package roll

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path"
	"strings"
	"syscall"
	"time"
)

// NodeHost is the node as the upgrade Job's privileged container reaches
// it: its root at Root ($KC_HOST), its programs run with Chroot (the
// image's chroot; $KC_CHROOT for a test) and the node's PATH, the Job's
// own kubectl for the API and the kubelet's server, flock(2) on the node's
// lock file, the wall clock.
type NodeHost struct {
	Root string
	// Chroot is the chroot program (chroot on the Job's PATH when empty).
	Chroot string
	// Path is the PATH of the node's programs (KC_HOST_PATH).
	Path string
	// Kubectl is the Job's kubectl (kubectl on the Job's PATH when empty).
	KubectlBin string

	locks map[string]*os.File
}

// NewNodeHost is the node of a Config.
func NewNodeHost(c Config) *NodeHost {
	return &NodeHost{Root: c.Host, Chroot: c.Chroot, Path: c.HostPath}
}

func (h *NodeHost) Files() Files { return RootFS{Root: h.Root} }

// Run runs the program to its end whatever ctx says: a Job told to stop
// does not kill kubeadm or dpkg halfway; the engine does nothing more once the program ended.
func (h *NodeHost) Run(ctx context.Context, c Cmd) Result {
	chroot := h.Chroot
	if chroot == "" {
		chroot = "chroot"
	}
	cmd := exec.Command(chroot, append([]string{h.Root}, c.Argv...)...)
	cmd.Env = append(withoutEnv(os.Environ(), "PATH", "SYSTEMD_IGNORE_CHROOT"), "PATH="+h.Path, "SYSTEMD_IGNORE_CHROOT=1")
	return runCmd(cmd, c)
}

func (h *NodeHost) Kubectl(ctx context.Context, args ...string) Result {
	bin := h.KubectlBin
	if bin == "" {
		bin = "kubectl"
	}
	return runCmd(exec.Command(bin, args...), Cmd{})
}

// runCmd runs cmd with its output where c says, standard input empty; the
// files Go opens (the roll's lock among them) are close-on-exec.
func runCmd(cmd *exec.Cmd, c Cmd) Result {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	if c.Stderr != nil {
		cmd.Stderr = c.Stderr
	}
	err := cmd.Run()
	r := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		r.Code = exit.ExitCode()
	default:
		r.Code, r.Err = -1, err
	}
	return r
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

func (h *NodeHost) TryLock(name string) (bool, error) {
	f, err := h.lockFile(name)
	if err != nil {
		return false, err
	}
	return flockNB(f)
}

// WaitLock polls the lock every 100 ms: a wait that can end at its
// deadline and with ctx, which a blocking flock(2) cannot.
func (h *NodeHost) WaitLock(ctx context.Context, name string, wait time.Duration) (bool, error) {
	f, err := h.lockFile(name)
	if err != nil {
		return false, err
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := flockNB(f)
		if ok || err != nil || !time.Now().Before(deadline) {
			return ok, err
		}
		if err := h.Sleep(ctx, 100*time.Millisecond); err != nil {
			return false, err
		}
	}
}

// lockFile opens the lock file once, for appending as the previous
// release's Job (upgrade.sh's exec 9>>) did, and keeps it open: the lock lasts as long as this process.
func (h *NodeHost) lockFile(name string) (*os.File, error) {
	if f := h.locks[name]; f != nil {
		return f, nil
	}
	fs := h.Files()
	if err := os.MkdirAll(fs.Path(path.Dir(name)), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(fs.Path(name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if h.locks == nil {
		h.locks = map[string]*os.File{}
	}
	h.locks[name] = f
	return f, nil
}

// Close releases the roll's lock (the process's end releases it too).
func (h *NodeHost) Close() error {
	for name, f := range h.locks {
		f.Close()
		delete(h.locks, name)
	}
	return nil
}

func flockNB(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func (h *NodeHost) Now() time.Time { return time.Now() }

func (h *NodeHost) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Hostname is the kernel's.
func (h *NodeHost) Hostname() string {
	b, err := os.ReadFile("/proc/sys/kernel/hostname")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
