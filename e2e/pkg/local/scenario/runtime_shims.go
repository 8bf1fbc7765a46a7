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
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/snapshot"
	"github.com/kubelet-compat/kubelet-compat/pkg/shimgroups"
)

// shimGroupCheckName is the check made before every runtime swap.
const shimGroupCheckName = "before the swap: every running container's shim answers at its bundle's address (kubelet-compat preflight --runtime)"

// strandedDetail is in the check's detail when it named containers.
const strandedDetail = "away from their shim's address"

// shimHost is the run's containerd as package shimgroups reads it.
func (s *Scenario) shimHost() shimgroups.Host {
	return shimgroups.Host{
		RuncRoot:  filepath.Join(s.node.RuncRoot(), "k8s.io"),
		TaskState: filepath.Join(s.node.ContainerdState(), "io.containerd.runtime.v2.task", "k8s.io"),
		FSRoot:    "/",
	}
}

// shimGroupCheck lists the running containers whose shim no longer
// answers at their bundle's address (package shimgroups): what a
// containerd that kills unreachable shims kills at its start, and what
// preflight --runtime refuses.
func (s *Scenario) shimGroupCheck(prefix string) (report.Check, []shimgroups.Task) {
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
		c.Detail = fmt.Sprintf("%d of %d running containers %s: %s", len(tasks), checked, strandedDetail, strings.Join(ts, "; "))
	}
	if err == nil && checked > 0 {
		s.cliShimGroups(&c, len(tasks) > 0)
	}
	s.logf("runtime check %q: passed %t: %s", c.Name, c.Passed, c.Detail)
	return c, tasks
}

// cliAgrees is in the check's detail when the operator's command (the
// CLI's cgroups, which the fleet's upgrade.sh runs right before containerd
// restarts) said the same on the node.
const cliAgrees = "kubelet-compat cgroups agrees"

// cliShimGroups runs `kubelet-compat cgroups` on the run's containerd: it
// must exit 2 exactly when containers are away from their shims' addresses,
// else 0; the check fails when it says otherwise.
func (s *Scenario) cliShimGroups(c *report.Check, away bool) {
	h := s.shimHost()
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := osexec.CommandContext(cctx, s.cli(), "cgroups", "--runc-root", h.RuncRoot, "--task-state", h.TaskState,
		"--runtime-endpoint", s.node.RuntimeEndpoint()).CombinedOutput()
	code := 0
	var exitErr *osexec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		code = -1
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if (away && code == 2) || (!away && code == 0) {
		c.Detail += fmt.Sprintf("; %s (exit %d: %s)", cliAgrees, code, last)
		return
	}
	c.Passed = false
	c.Detail += fmt.Sprintf("; kubelet-compat cgroups disagrees (exit %d: %s)", code, last)
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
