package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/genuine"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/statuscheck"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	kcexec "github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// extras run after the last patched step, while its compat window is open:
// sweep must keep the file, a genuine change must restart; then a fresh
// run of the step with faults; then sweep must delete the file once the
// legacy containers are gone.
func (s *Scenario) extras(ctx context.Context, last Step) error {
	s.check(s.statusAgrees(ctx))
	s.check(s.sweepKeeps(ctx))
	s.check(s.genuineChange(ctx))
	s.check(s.genuineRecorded(ctx))
	// The genuine change's restart in the kubelet's restarted counter.
	s.check(s.compatMetricsCheck(ctx, "after the genuine change", "patched", recordedKubelet{PID: s.kubelet.PID, Patched: true}))

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
// only that one (package genuine, as on kind).
func (s *Scenario) genuineChange(ctx context.Context) report.Check {
	name := "a genuine change during the compat window restarts (image of one static pod)"
	target, err := genuine.Target(s.corpus)
	if err != nil {
		return report.Check{Name: name, Detail: err.Error()}
	}
	return genuine.Check(ctx, name, genuine.Node{
		Take:          func(ctx context.Context) (*snapshot.Snapshot, error) { return s.rt.Take(ctx, corpus.Namespace) },
		WriteManifest: func(_ context.Context, pod *v1.Pod) error { return corpus.WritePod(s.manifestDir(), pod) },
		SyncFrequency: s.opts.SyncFrequency,
	}, target)
}

// genuineRecorded holds the kubelet's sync record against the genuine
// change: it names the changed pod's restart, with the kubelet's reason
// (its definition changed), and no kill in any other pod.
func (s *Scenario) genuineRecorded(ctx context.Context) report.Check {
	c := report.Check{Name: "the kubelet's sync record names the genuine change's restart, and no other kill"}
	target, err := genuine.Target(s.corpus)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	path := filepath.Join(s.kubeletDir(), kubeletcompat.RecordFileName)
	deadline := time.Now().Add(recordWait)
	for {
		rec, err := kubeletcompat.ReadSyncRecord(path, os.Getuid())
		if err != nil {
			c.Detail = fmt.Sprintf("reading the record: %v", err)
		} else {
			c = genuineRecordVerdict(c.Name, rec, target.RuntimeName)
		}
		if c.Passed || time.Now().After(deadline) {
			return c
		}
		if err := ctxtime.Sleep(ctx, 500*time.Millisecond); err != nil {
			c.Detail = err.Error()
			return c
		}
	}
}

// genuineRecordVerdict: the pod namespace/name has a kill whose reason is
// a changed definition; no other kill (another pod's, or another reason).
func genuineRecordVerdict(name string, rec *kubeletcompat.SyncRecord, pod string) report.Check {
	c := report.Check{Name: name}
	var changed []string
	var others []string
	for _, p := range rec.Pods {
		for _, cr := range p.Containers {
			for _, k := range cr.Kills {
				switch {
				case p.Namespace+"/"+p.Name != pod:
					others = append(others, fmt.Sprintf("%s/%s/%s (%s)", p.Namespace, p.Name, cr.Name, k.Reason))
				default:
					others = append(others, fmt.Sprintf("%s/%s (%s)", pod, cr.Name, k.Reason))
				case strings.Contains(k.Reason, "definition changed"):
					changed = append(changed, fmt.Sprintf("%s %s: %s", cr.Name, shortID(k.ID), k.Reason))
				}
			}
		}
	}
	c.Passed = len(changed) > 0 && len(others) == 0
	c.Detail = fmt.Sprintf("%s: %d kill(s) for a changed definition [%s]; kills in other pods: %d [%s]",
		pod, len(changed), strings.Join(changed, "; "), len(others), strings.Join(others, "; "))
	c.Detail += fmt.Sprintf("; the record: kubelet pid %d, written %s, %d pod(s)", rec.KubeletPID, rec.WrittenAt.Format(time.RFC3339Nano), len(rec.Pods))
	for _, p := range rec.Pods {
		if p.Namespace+"/"+p.Name == pod {
			c.Detail += fmt.Sprintf("; %s: %d sync(s), last %s", pod, p.Syncs, p.LastSyncAt.Format(time.RFC3339Nano))
			for _, cr := range p.Containers {
				c.Detail += fmt.Sprintf(", %s runs %s (kills %d, starts %d)", cr.Name, shortID(cr.ID), cr.KillCount, cr.Starts)
			}
		}
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
