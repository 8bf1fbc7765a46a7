package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/crio"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/shimgroups"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// shimGroupCheckName is the check made before every runtime swap.
const shimGroupCheckName = "before the swap: every running container's shim answers at its bundle's address (kubelet-compat preflight --runtime)"

// shimHost is the run's containerd as package shimgroups reads it.
func (s *Scenario) shimHost() shimgroups.Host {
	return shimgroups.Host{
		RuncRoot:  filepath.Join(s.node.RuncRoot(), "k8s.io"),
		TaskState: filepath.Join(s.node.ContainerdState(), "io.containerd.runtime.v2.task", "k8s.io"),
		FSRoot:    "/",
	}
}

// shimGroupResult is the shim-group check and whether it named containers
// away from their shims' addresses, the library and the operator's command
// alike (what the split negative control needs).
type shimGroupResult struct {
	report.Check
	Named bool
}

// shimGroupCheck lists the running containers whose shim no longer
// answers at their bundle's address (package shimgroups): what a
// containerd that kills unreachable shims kills at its start, and what
// preflight --runtime refuses. The operator's command (`kubelet-compat
// cgroups`, which the fleet's kc-roll runs right before containerd
// restarts) must say the same on the node.
func (s *Scenario) shimGroupCheck(ctx context.Context, prefix string) shimGroupResult {
	c := report.Check{Name: prefix + shimGroupCheckName}
	tasks, checked, err := s.shimHost().Stranded()
	switch {
	case err != nil:
		c.Detail = err.Error()
	case checked == 0:
		// The corpus runs: a check that found no container looked in the
		// wrong place.
		c.Detail = "no running container found under " + s.shimHost().RuncRoot
	case len(tasks) == 0:
		c.Passed = true
		c.Detail = fmt.Sprintf("none of %d running containers away from its shim's address", checked)
	default:
		var ts []string
		for _, t := range tasks {
			ts = append(ts, t.String())
		}
		c.Detail = fmt.Sprintf("%d of %d running containers away from their shim's address: %s", len(tasks), checked, strings.Join(ts, "; "))
	}
	agrees := false
	if err == nil && checked > 0 {
		agrees = s.cliShimGroups(ctx, &c, len(tasks) > 0)
		c.Passed = c.Passed && agrees
	}
	s.logf("runtime check %q: passed %t: %s", c.Name, c.Passed, c.Detail)
	return shimGroupResult{Check: c, Named: len(tasks) > 0 && agrees}
}

// cliShimGroups runs `kubelet-compat cgroups` on the run's containerd and
// says whether it agrees: exit 2 exactly when containers are away from
// their shims' addresses, else 0.
func (s *Scenario) cliShimGroups(ctx context.Context, c *report.Check, away bool) bool {
	h := s.shimHost()
	out, err := s.cliExec(ctx, "cgroups", "--runc-root", h.RuncRoot, "--task-state", h.TaskState,
		"--runtime-endpoint", s.node.RuntimeEndpoint())
	code := 0
	var exitErr *osexec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		code = -1
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	agrees := (away && code == 2) || (!away && code == 0)
	verb := "agrees"
	if !agrees {
		verb = "disagrees"
	}
	c.Detail += fmt.Sprintf("; kubelet-compat cgroups %s (exit %d: %s)", verb, code, last)
	return agrees
}

// splitShimGroup splits one pod's shim group in two, as a shim start on
// a loaded node does when its connect to the pod's socket times out: the
// pod's socket is removed (the run's own containerd's shim), then one of
// its containers is stopped through the CRI, and the kubelet's new
// container gets a shim of its own that listens at the pod's address. The
// pod's sandbox stays with the old shim, which nothing can dial any more.
// It returns the pod.
func (s *Scenario) splitShimGroup(ctx context.Context) (string, error) {
	snap, err := s.rt.Take(ctx, corpus.Namespace)
	if err != nil {
		return "", err
	}
	victim, ok := splitVictim(snap)
	if !ok {
		return "", errors.New("split shim group: no pod runs exactly one container")
	}
	data, err := os.ReadFile(filepath.Join(s.shimHost().TaskState, victim.SandboxID, "address"))
	if err != nil {
		return "", fmt.Errorf("split shim group: %s's sandbox address: %w", victim.Pod, err)
	}
	sock, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "unix://")
	if !ok {
		return "", fmt.Errorf("split shim group: %s's sandbox address %q is not a unix socket", victim.Pod, data)
	}
	if err := os.Remove(sock); err != nil {
		return "", fmt.Errorf("split shim group: %w", err)
	}
	c, err := crio.Dial(s.node.ContainerdSocket())
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.Stop(ctx, victim.ID, 2*time.Second); err != nil {
		return "", fmt.Errorf("split shim group: %w", err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		now, err := s.rt.Take(ctx, corpus.Namespace)
		if err == nil {
			if c, ok := now.Running(victim.Pod)[victim.Name]; ok && c.ID != victim.ID {
				s.logf("split shim group: %s: socket %s removed, %s stopped; the kubelet runs %.13s under a new shim at the pod's address", victim.Pod, sock, victim.Name, c.ID)
				return victim.Pod, s.waitStable(ctx, "after the split")
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("split shim group: the kubelet ran no container in %s/%s's place within 90s", victim.Pod, victim.Name)
		}
		if err := ctxtime.Sleep(ctx, 500*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// splitVictim is the first pod (by name) that runs exactly one container
// in a ready sandbox, not on the host's network (its restart must not
// race its old copy for a port).
func splitVictim(snap *snapshot.Snapshot) (snapshot.Container, bool) {
	for _, pod := range snap.Pods() {
		sb, ok := snap.ReadySandbox(pod)
		if !ok || sb.HostNetwork {
			continue
		}
		running := snap.Running(pod)
		if len(running) != 1 {
			continue
		}
		for _, c := range running {
			return c, true
		}
	}
	return snapshot.Container{}, false
}
