package kubelet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// maxRunOutput bounds what Run keeps of a binary's output.
const maxRunOutput = 1 << 20

// Run runs the binary with args, if it is still the file that was checked,
// with an empty environment but PATH, no stdin, and a timeout; it returns
// stdout and stderr together (at most 1 MiB) and whether it exited 0. It is
// for `--version` and `--help` style invocations that exit by themselves:
// the process is killed at the timeout.
func (b Binary) Run(ctx context.Context, rootUID int, timeout time.Duration, args ...string) (string, bool, error) {
	fi, err := os.Lstat(b.Path)
	if err != nil {
		return "", false, fmt.Errorf("kubelet binary: %w", err)
	}
	if !os.SameFile(fi, b.Info) {
		return "", false, fmt.Errorf("kubelet binary %s was replaced while being checked; try again", b.Path)
	}
	if err := checkTrusted(fi, rootUID); err != nil {
		return "", false, fmt.Errorf("kubelet binary %s: %v: refusing to run it", b.Path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.Path, args...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Dir = "/"
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return out.String(), false, fmt.Errorf("%s did not exit within %s", b.Path, timeout)
	}
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		return "", false, fmt.Errorf("running %s: %w", b.Path, err)
	}
	return out.String(), err == nil, nil
}

// limitedBuffer keeps the first maxRunOutput bytes written to it. It has
// no ReadFrom, so that io.Copy goes through Write.
type limitedBuffer struct{ buf bytes.Buffer }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxRunOutput - l.buf.Len(); room < len(p) {
		if room > 0 {
			l.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return l.buf.Write(p)
}

func (l *limitedBuffer) String() string { return l.buf.String() }
