package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/crio"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/execlog"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/genuine"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/leftovers"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// oldContainerChecks are what must still work after a runtime swap on a
// container the old containerd started: exec (ExecSync through its old
// shim), its log (a line written to its stdout reaches its log file: the
// new containerd took over its output), attach (the same line reaches an
// attached stream through the new containerd's streaming server), a
// genuine change (the image of
// the corpus's pinned pod: that container restarts, nothing else) and
// stop (StopContainer, then the kubelet starts it again).
func (s *Scenario) oldContainerChecks(ctx context.Context, st plan.RuntimeStep, variant string, before, after *snapshot.Snapshot) []report.Check {
	prefix := fmt.Sprintf("runtime %s (%s): ", st, variant)
	target, err := genuine.Target(s.corpus)
	if err != nil {
		return []report.Check{{Name: prefix + "a genuine change", Detail: err.Error()}}
	}
	cands := oldContainers(before, after, target.RuntimeName)
	if len(cands) == 0 {
		return []report.Check{{Name: prefix + "a container that ran before still runs", Detail: "none: every container was restarted"}}
	}
	c, err := crio.Dial(s.node.ContainerdSocket())
	if err != nil {
		return []report.Check{{Name: prefix + "CRI", Detail: err.Error()}}
	}
	defer c.Close()
	n := execlog.Node{
		Exec: func(ctx context.Context, id string, argv ...string) (string, error) {
			return c.Exec(ctx, id, 10*time.Second, argv...)
		},
		LogHas: func(ctx context.Context, id, marker string) (string, error) {
			return c.LogHas(ctx, id, marker, 15*time.Second)
		},
		// The command's own non-zero exit tries the next container; any
		// other error is the CRI's.
		Fatal:  func(err error) bool { return !strings.Contains(err.Error(), ": exit ") },
		Attach: c.Attach,
	}
	execC, logC, old := execlog.Check(ctx, n, cands)
	attachC := execlog.Attach(ctx, n, old)
	execC.Name, logC.Name, attachC.Name = prefix+execC.Name, prefix+logC.Name, prefix+attachC.Name
	checks := []report.Check{execC, logC, attachC}
	g := genuine.Check(ctx, prefix+"a genuine change restarts (image of one static pod)", genuine.Node{
		Take:          func(ctx context.Context) (*snapshot.Snapshot, error) { return s.rt.Take(ctx, corpus.Namespace) },
		WriteManifest: func(_ context.Context, pod *v1.Pod) error { return corpus.WritePod(s.manifestDir(), pod) },
		SyncFrequency: s.opts.SyncFrequency,
	}, target)
	checks = append(checks, g)
	if old.ID != "" {
		st := s.stopOld(ctx, c, old)
		st.Name = prefix + st.Name
		checks = append(checks, st)
	}
	for _, ch := range checks {
		s.logf("runtime check %q: passed %t: %s", ch.Name, ch.Passed, ch.Detail)
	}
	return checks
}

// stopOld stops old through the CRI and waits until it has exited and the
// kubelet runs another container in its place.
func (s *Scenario) stopOld(ctx context.Context, c *crio.Client, old snapshot.Container) report.Check {
	ch := report.Check{Name: "stop a container the old containerd started; the kubelet starts it again"}
	start := time.Now()
	if err := c.Stop(ctx, old.ID, 10*time.Second); err != nil {
		ch.Detail = fmt.Sprintf("%s/%s: %v", old.Pod, old.Name, err)
		return ch
	}
	st, err := c.Status(ctx, old.ID)
	if err != nil {
		ch.Detail = fmt.Sprintf("%s/%s: %v", old.Pod, old.Name, err)
		return ch
	}
	stopped := time.Since(start)
	if st.GetState() != runtimev1.ContainerState_CONTAINER_EXITED {
		ch.Detail = fmt.Sprintf("%s/%s: %s after StopContainer", old.Pod, old.Name, st.GetState())
		return ch
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		snap, err := s.rt.Take(ctx, corpus.Namespace)
		if err == nil {
			if now, ok := snap.Running(old.Pod)[old.Name]; ok && now.ID != old.ID {
				ch.Passed = true
				ch.Detail = fmt.Sprintf("%s/%s (%.13s): exited (code %d) %.1fs after StopContainer; the kubelet runs %.13s (attempt %d) %.1fs after the stop",
					old.Pod, old.Name, old.ID, st.GetExitCode(), stopped.Seconds(), now.ID, now.Attempt, time.Since(start).Seconds())
				return ch
			}
		}
		if time.Now().After(deadline) {
			ch.Detail = fmt.Sprintf("%s/%s exited (code %d), but the kubelet ran no container in its place within 90s", old.Pod, old.Name, st.GetExitCode())
			return ch
		}
		if err := ctxtime.Sleep(ctx, 500*time.Millisecond); err != nil {
			ch.Detail = err.Error()
			return ch
		}
	}
}

// teardown removes every pod through the CRI once the run's steps are
// done (the kubelet stopped first), as the next run's reset and an
// operator's drain would: a containerd that cannot stop what an older one
// started fails it. Then, whatever the outcome, the run's containerd is
// When that fails, the run's containerd is stopped, what it could not
// stop is killed (its shims and their containers, found as the cleanup
// finds them) and it is started again, so the next run starts from an
// empty node.
func (s *Scenario) teardown(ctx context.Context, prefix string) report.Check {
	ch := report.Check{Name: prefix + "every pod removed through the CRI after the swap (StopPodSandbox, RemovePodSandbox)"}
	if err := s.stopKubelet(ctx); err != nil {
		ch.Detail = err.Error()
		return ch
	}
	start := time.Now()
	n, err := s.rt.RemoveAll(ctx, "")
	ch.Passed = err == nil
	ch.Detail = fmt.Sprintf("%d sandboxes removed in %.1fs", n, time.Since(start).Seconds())
	if err != nil {
		ch.Detail = fmt.Sprintf("%d sandboxes removed, then after %.1fs: %v", n, time.Since(start).Seconds(), err)
		s.logf("teardown: %s; stopping containerd and killing the run's shims and containers", ch.Detail)
		if err := s.node.StopContainerd(ctx); err != nil {
			ch.Detail += "; stopping containerd: " + err.Error()
		} else if err := leftovers.KillTasks(ctx, s.node.Journal.State(), leftovers.Machine(s.opts.Log)); err != nil {
			ch.Detail += "; killing the shims: " + err.Error()
		}
		// The same containerd again, on its dead tasks: the next reset
		// removes them through the CRI.
		if err := s.node.StartContainerd(ctx); err != nil {
			ch.Detail += "; restarting containerd: " + err.Error()
		}
	}
	return ch
}
