package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/snapshot"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/statuscheck"
	kcexec "github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// extras run after the last patched step, while its compat window is open:
// sweep must keep the file, a genuine change must restart; then a fresh
// run of the step with faults; then sweep must delete the file once the
// legacy containers are gone.
func (s *Scenario) extras(ctx context.Context, last Step) error {
	s.check(s.statusAgrees(ctx))
	s.check(s.sweepKeeps(ctx))
	s.check(s.genuineChange(ctx))

	if err := s.baseline(ctx, last.From); err != nil {
		return err
	}
	run, err := s.swap(ctx, last, true, []string{FaultContainerdRestart, FaultSigkillMidSync})
	if err != nil {
		return err
	}
	report.AssertPatched(run)
	s.Report.Runs = append(s.Report.Runs, *run)
	s.check(s.sweepDeletesWhenLegacyGone(ctx))
	return nil
}

func (s *Scenario) check(c report.Check) {
	status := "pass"
	if !c.Passed {
		status = "FAIL"
	}
	s.logf("check %q: %s: %s", c.Name, status, c.Detail)
	s.Report.Checks = append(s.Report.Checks, c)
}

// statusAgrees runs `kubelet-compat status` right after the patched kubelet
// kept every container (package statuscheck).
func (s *Scenario) statusAgrees(ctx context.Context) report.Check {
	out, err := s.cliRun(ctx, "status", "-o", "json")
	return statuscheck.Check("status decides as the kubelet did for every legacy container", []byte(out), err, true)
}

func (s *Scenario) sweepKeeps(ctx context.Context) report.Check {
	c := report.Check{Name: "sweep keeps the compat file while legacy containers run"}
	out, err := s.cliRun(ctx, "sweep", "--grace", "0s")
	_, statErr := os.Stat(filepath.Join(s.kubeletDir(), "upgrade-compat.json"))
	c.Passed = kcexec.ExitCode(err) == 2 && statErr == nil
	c.Detail = fmt.Sprintf("exit %d, file present: %t: %s", kcexec.ExitCode(err), statErr == nil, report.LastLine(out))
	return c
}

// genuineChange changes the image of the pod with an explicit UID during
// the compat window: the patched kubelet must restart that container, and
// only that one.
func (s *Scenario) genuineChange(ctx context.Context) report.Check {
	c := report.Check{Name: "a genuine change during the compat window restarts (image of one static pod)"}
	var target *corpus.Pod
	for i := range s.corpus.Pods {
		if s.corpus.Pods[i].Kind == corpus.KindPinned {
			target = &s.corpus.Pods[i]
			break
		}
	}
	if target == nil {
		c.Detail = "the corpus has no pod of kind pinned (needs at least 8 pods)"
		return c
	}
	before, err := s.rt.Take(ctx, corpus.Namespace)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	changed := target.Spec.DeepCopy()
	changed.Spec.Containers[0].Image = corpus.BusyboxVariantImage
	if err := corpus.WritePod(s.manifestDir(), changed); err != nil {
		c.Detail = err.Error()
		return c
	}
	start := time.Now()
	var after *snapshot.Snapshot
	seen := time.Duration(0)
	for time.Since(start) < 2*time.Minute {
		if err := ctxtime.Sleep(ctx, time.Second); err != nil {
			c.Detail = err.Error()
			return c
		}
		after, err = s.rt.Take(ctx, corpus.Namespace)
		if err != nil {
			continue
		}
		if running, ok := after.Running(target.RuntimeName)["httpd"]; ok && running.Image == corpus.BusyboxVariantImage {
			seen = time.Since(start)
			break
		}
	}
	if after == nil {
		c.Detail = "no snapshot after the change"
		return c
	}
	// Let the kubelet run three more sync periods: nothing else may move.
	if err := ctxtime.Sleep(ctx, 3*s.opts.SyncFrequency); err != nil {
		c.Detail = err.Error()
		return c
	}
	after, err = s.rt.Take(ctx, corpus.Namespace)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	d := snapshot.Compare(before, after)
	running := after.Running(target.RuntimeName)["httpd"]
	c.Passed = running.Image == corpus.BusyboxVariantImage && d.Restarts == 1 && len(d.RestartedPods) == 1 && d.RestartedPods[0] == target.RuntimeName
	c.Detail = fmt.Sprintf("%s runs %s %.0fs after the manifest changed; restarts on the node after three more sync periods: %d (%s), pods recreated: %d",
		target.RuntimeName, running.Image, seen.Seconds(), d.Restarts, strings.Join(d.RestartedPods, " "), d.RecreatedPods)
	// Put the manifest back so that later runs start from the corpus.
	if err := corpus.WritePod(s.manifestDir(), target.Spec); err != nil {
		c.Passed, c.Detail = false, c.Detail+"; restoring the manifest: "+err.Error()
	}
	return c
}

// sweepDeletesWhenLegacyGone removes every pod (the legacy containers go
// with them) and expects sweep to delete the file.
func (s *Scenario) sweepDeletesWhenLegacyGone(ctx context.Context) report.Check {
	c := report.Check{Name: "sweep deletes the compat file once the legacy containers are gone"}
	out, err := s.cliRun(ctx, "sweep", "--grace", "0s")
	before := kcexec.ExitCode(err)
	if err := os.RemoveAll(s.manifestDir()); err != nil {
		c.Detail = err.Error()
		return c
	}
	if err := os.MkdirAll(s.manifestDir(), 0o755); err != nil {
		c.Detail = err.Error()
		return c
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		snap, err := s.rt.Take(ctx, corpus.Namespace)
		if err == nil && snap.RunningCount() == 0 {
			break
		}
		if time.Now().After(deadline) {
			c.Detail = "the kubelet did not stop the pods within 2 minutes of their manifests' removal"
			return c
		}
		if err := ctxtime.Sleep(ctx, time.Second); err != nil {
			c.Detail = err.Error()
			return c
		}
	}
	out2, err := s.cliRun(ctx, "sweep", "--grace", "0s")
	_, statErr := os.Stat(filepath.Join(s.kubeletDir(), "upgrade-compat.json"))
	c.Passed = before == 2 && kcexec.ExitCode(err) == 0 && os.IsNotExist(statErr)
	c.Detail = fmt.Sprintf("with legacy containers: exit %d (%s); after the pods were removed: exit %d, file gone: %t (%s)",
		before, report.LastLine(out), kcexec.ExitCode(err), os.IsNotExist(statErr), report.LastLine(out2))
	return c
}
