// Package execlog checks, after a runtime move, that a container the old
// runtime started still takes an exec (through the new runtime and its old
// shim), that its stdout still reaches its log (the new runtime took over
// its output) and an attach (the new runtime streams its old output): the
// same checks on every provider, whatever the transport (a CRI client on
// the local node, crictl inside a kind node).
package execlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// Names of the checks.
const (
	ExecCheck   = "exec into a container the old containerd started"
	LogCheck    = "its stdout still reaches its log"
	AttachCheck = "attach to it: a line written to its stdout reaches the attached stream"
)

// maxTries bounds the candidates tried: a container whose user cannot
// write its pid 1's stdout refuses the exec, the next is tried.
const maxTries = 4

// Node is how the checks reach a node's runtime.
type Node struct {
	// Exec runs argv in container id and returns its stdout.
	Exec func(ctx context.Context, id string, argv ...string) (string, error)
	// LogHas waits until id's log holds marker and names where it looked.
	LogHas func(ctx context.Context, id, marker string) (string, error)
	// Fatal says an Exec error is the runtime's, not the command's: no
	// other candidate is tried. Nil: every error tries the next one.
	Fatal func(error) bool
	// Attach attaches to id's stdout and stderr and copies what they
	// carry to out until ctx ends (then nil) or the attach fails. It may
	// write only when it returns (crictl in a node): out is read again then.
	Attach func(ctx context.Context, id string, out io.Writer) error
	// AttachFor bounds the attach (zero: DefaultAttachFor); a marker is
	// written every AttachFor/12 meanwhile, since no transport tells when
	// its stream is set up.
	AttachFor time.Duration
}

// DefaultAttachFor is how long the attach check attaches at most.
const DefaultAttachFor = 12 * time.Second

// Check execs into the first candidate that takes it, writing a marker
// line to its pid 1's stdout, and waits for that line in its log. used is
// the candidate the checks were made on (none when no exec ran).
func Check(ctx context.Context, n Node, cands []snapshot.Container) (execC, logC report.Check, used snapshot.Container) {
	execC = report.Check{Name: ExecCheck}
	logC = report.Check{Name: LogCheck, Detail: "no exec"}
	marker := fmt.Sprintf("kc-e2e-runtime-move-%d", time.Now().UnixNano())
	var tried []string
	for _, c := range cands {
		if len(tried) == maxTries {
			break
		}
		out, err := n.Exec(ctx, c.ID, "sh", "-c", "echo "+marker+" >/proc/1/fd/1 && echo ok")
		if err != nil && n.Fatal != nil && n.Fatal(err) {
			execC.Detail = fmt.Sprintf("%s/%s: %v", c.Pod, c.Name, err)
			return execC, logC, c
		}
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s/%s: %v", c.Pod, c.Name, err))
			continue
		}
		out = strings.TrimSpace(out)
		execC.Passed = out == "ok"
		execC.Detail = fmt.Sprintf("%s/%s (%.13s, started %s): exec answered %q", c.Pod, c.Name, c.ID, c.StartedAt.Format(time.RFC3339), out)
		where, err := n.LogHas(ctx, c.ID, marker)
		logC.Passed = err == nil
		logC.Detail = fmt.Sprintf("%s/%s: %s holds the line written after the move", c.Pod, c.Name, where)
		if err != nil {
			logC.Detail = fmt.Sprintf("%s/%s: %v", c.Pod, c.Name, err)
		}
		return execC, logC, c
	}
	execC.Detail = "no container took the exec: " + strings.Join(tried, "; ")
	return execC, logC, snapshot.Container{}
}

// Attach attaches to c (the container the exec check used) and writes a
// marker line to its pid 1's stdout through exec until the attached stream
// carries it.
func Attach(ctx context.Context, n Node, c snapshot.Container) report.Check {
	ch := report.Check{Name: AttachCheck}
	if c.ID == "" {
		ch.Detail = "no container took the exec"
		return ch
	}
	marker := fmt.Sprintf("kc-e2e-runtime-attach-%d", time.Now().UnixNano())
	attachFor := n.AttachFor
	if attachFor == 0 {
		attachFor = DefaultAttachFor
	}
	actx, cancel := context.WithTimeout(ctx, attachFor)
	defer cancel()
	var out lockedBuffer
	done := make(chan error, 1)
	go func() { done <- n.Attach(actx, c.ID, &out) }()
	var attachErr, execErr error
	writes := 0
	tick := time.NewTicker(attachFor / 12)
	defer tick.Stop()
wait:
	for !out.Has(marker) {
		select {
		case attachErr = <-done:
			done = nil
			break wait
		case <-tick.C:
			if _, err := n.Exec(ctx, c.ID, "sh", "-c", "echo "+marker+" >/proc/1/fd/1"); err != nil {
				execErr = err
			} else {
				writes++
			}
		}
	}
	cancel()
	if done != nil {
		attachErr = <-done
	}
	if errors.Is(attachErr, context.Canceled) || errors.Is(attachErr, context.DeadlineExceeded) {
		attachErr = nil
	}
	who := fmt.Sprintf("%s/%s (%.13s)", c.Pod, c.Name, c.ID)
	switch {
	case out.Has(marker):
		ch.Passed = true
		ch.Detail = fmt.Sprintf("%s: the attached stream carried the line (%d written through exec)", who, writes)
	case attachErr != nil:
		ch.Detail = fmt.Sprintf("%s: attach: %v", who, attachErr)
	case writes == 0 && execErr != nil:
		ch.Detail = fmt.Sprintf("%s: no line written: %v", who, execErr)
	default:
		ch.Detail = fmt.Sprintf("%s: %d line(s) written through exec in %s, none reached the attached stream", who, writes, attachFor)
	}
	return ch
}

// lockedBuffer is written by the attach and read by the check at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Has(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Contains(b.buf.String(), s)
}
