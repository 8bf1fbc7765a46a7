// Package execlog checks, after a runtime move, that a container the old
// runtime started still takes an exec (through the new runtime and its old
// shim) and that its stdout still reaches its log (the new runtime took
// over its output): the same two checks on every provider, whatever the
// transport (a CRI client on the local node, crictl inside a kind node).
package execlog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/snapshot"
)

// Names of the two checks.
const (
	ExecCheck = "exec into a container the old containerd started"
	LogCheck  = "its stdout still reaches its log"
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
}

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
