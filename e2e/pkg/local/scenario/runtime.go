package scenario

// The container runtime swapped under a running kubelet (issue 35 §3):
// per runtime step of the plan (plan.RuntimeRuns), a baseline of the
// corpus on the step's From containerd under kubelet Plan.RuntimeKubelet
// (patched, then as released for the control), then the swap sequence
// (package swap) with the runtime as what is swapped: the kubelet is not
// restarted and must reconnect. Before the swap, the shim-group check
// (runtime_shims.go); judged as the kubelet swaps are (the runtime's
// picture before and after), then exec, logs, attach, a genuine change and
// stop on the containers that ran before.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/swap"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// runtimeRuns runs the plan's runtime steps; a run that fails its
// assertions is reported and the others go on.
func (s *Scenario) runtimeRuns(ctx context.Context) error {
	if s.opts.RuntimeOrder.From != "" {
		return s.orderRuns(ctx)
	}
	if len(s.opts.ShimFaults) > 0 {
		return s.shimFaultRuns(ctx)
	}
	if err := s.needKubelets(s.opts.RuntimeKubelet); err != nil {
		return err
	}
	var failed []error
	for _, r := range plan.RuntimeRuns(s.opts.RuntimeSteps, s.opts.RuntimeChain, s.opts.Controls, s.opts.SkipPatched) {
		runs, err := s.runtimeRun(ctx, r)
		if err != nil {
			return fmt.Errorf("runtime %s: %w", r.Steps[0], err)
		}
		failed = append(failed, s.reportRuns("runtime ", runs)...)
	}
	return errors.Join(failed...)
}

// needKubelets refuses a run whose kubelets (patched, and as released for
// the controls) are not built.
func (s *Scenario) needKubelets(versions ...string) error {
	for _, v := range versions {
		for _, patched := range []bool{true, false} {
			if p := s.Binary(v, patched); (patched && !s.opts.SkipPatched || !patched && s.opts.Controls) && !fileExists(p) {
				return fmt.Errorf("missing kubelet %s (make build VERSIONS=%s [PATCHED=false], or copy it there)", p, v)
			}
		}
	}
	return nil
}

// startRuntimeRun is where every runtime run starts: no pod, containerd
// from on an empty root, the corpus's baseline on kubelet k. It returns
// from's build and the run's variant.
func (s *Scenario) startRuntimeRun(ctx context.Context, what string, from plan.Runtime, k string, patched bool) (local.RuntimeDist, string, error) {
	dist, err := local.FindRuntime(ctx, filepath.Join(s.opts.Output, "runtime"), from.Version)
	if err != nil {
		return dist, "", err
	}
	variant := report.Unpatched
	if patched {
		variant = report.Patched
	}
	if err := s.reset(ctx); err != nil {
		return dist, variant, err
	}
	if err := s.node.ResetRuntime(ctx, dist); err != nil {
		return dist, variant, fmt.Errorf("starting %s on an empty root: %w", dist, err)
	}
	s.logf("%s (%s): %s, kubelet %s", what, variant, dist, k)
	return dist, variant, s.baselineOn(ctx, k, patched)
}

// finishRuntimeRun removes every pod through the CRI (a check: the
// patched run's, else with controlChecks in the control's last verdict).
func (s *Scenario) finishRuntimeRun(ctx context.Context, prefix string, last *report.Run, patched bool, controlChecks []report.Check) {
	tear := s.teardown(ctx, prefix)
	s.logf("runtime check %q: passed %t: %s", tear.Name, tear.Passed, tear.Detail)
	if patched {
		s.check(tear)
		return
	}
	last.Verdict += "; " + controlOutcomes(append(controlChecks, tear))
}

// reportRuns adds runs to the report and says which failed.
func (s *Scenario) reportRuns(prefix string, runs []*report.Run) []error {
	var failed []error
	for _, run := range runs {
		s.Report.Runs = append(s.Report.Runs, *run)
		if !run.Passed {
			failed = append(failed, fmt.Errorf("%s%s %s: %s", prefix, run.Step, run.Variant, run.Verdict))
		}
	}
	return failed
}

// runtimeRun is one run: no pod, the first step's From containerd on an
// empty root, the corpus on the kubelet, then each step: the runtime
// swapped to its To, judged, the checks.
func (s *Scenario) runtimeRun(ctx context.Context, r plan.RuntimeRun) ([]*report.Run, error) {
	k := s.opts.RuntimeKubelet
	what := fmt.Sprintf("runtime run of %d steps", len(r.Steps))
	switch {
	case r.KillShims:
		what = "negative control of the runtime swap (the shims killed with containerd)"
	case r.SplitShimGroup:
		what = "negative control of the shim-group check (one pod's shim group split before the swap)"
	}
	_, variant, err := s.startRuntimeRun(ctx, what, r.Steps[0].From, k, r.Patched)
	if err != nil {
		return nil, err
	}
	switch {
	case r.KillShims:
		variant = negativeVariant
	case r.SplitShimGroup:
		variant = splitVariant
		if _, err := s.splitShimGroup(ctx); err != nil {
			return nil, err
		}
	}
	// What the run's own checks assert: a patched run's, not a negative
	// control's (its old containers are gone, as they must be).
	negative := r.KillShims || r.SplitShimGroup
	asserted := r.Patched && !negative
	var runs []*report.Run
	for _, st := range r.Steps {
		to, err := local.FindRuntime(ctx, filepath.Join(s.opts.Output, "runtime"), st.To.Version)
		if err != nil {
			return nil, err
		}
		run, res, shims, err := s.runtimeStep(ctx, st, k, r, variant, to)
		if err != nil {
			return nil, err
		}
		checks := []report.Check{shims.Check}
		if asserted {
			s.check(shims.Check)
		}
		if !negative {
			checks = append(checks, s.runtimeChecks(ctx, st, variant, res.Before, res.After, asserted)...)
		}
		judgeRuntimeRun(run, r, checks, shims.Named)
		runs = append(runs, run)
	}
	s.finishRuntimeRun(ctx, fmt.Sprintf("runtime %s (%s): ", r.Steps[len(r.Steps)-1], variant), runs[len(runs)-1], asserted, nil)
	return runs, nil
}

// The negative controls' variants in the report.
const (
	negativeVariant = report.Patched + ", shims killed"
	splitVariant    = report.Patched + ", shim group split"
)

// runtimeStep swaps the running containerd for to under the running
// kubelet k, as run r does; the caller judges the step (judgeRuntimeRun).
//
// Before the swap it makes the shim-group check (returned).
func (s *Scenario) runtimeStep(ctx context.Context, st plan.RuntimeStep, k string, r plan.RuntimeRun, variant string, to local.RuntimeDist) (*report.Run, *swap.Result, shimGroupResult, error) {
	s.logf("runtime %s (%s): the swap starts %s", st, variant, to)
	run := &report.Run{Step: fmt.Sprintf("%s (kubelet %s)", st, k), From: st.From.String(), To: st.To.String(), Variant: variant}
	var shims shimGroupResult
	res, err := s.runtimeSwap(ctx, st, r, to, run, func(ctx context.Context) {
		shims = s.shimGroupCheck(ctx, fmt.Sprintf("runtime %s (%s): ", st, variant))
	})
	if err != nil {
		return nil, nil, shims, err
	}
	fill(run, res)
	if last := lastStartAfter(res.After, res.Started); last.Sub(res.Started).Seconds() > run.WindowSeconds {
		run.WindowSeconds = last.Sub(res.Started).Seconds()
	}
	s.logf("runtime %s (%s): %d pods, %d containers, %d restarts, %d pods recreated, %d pod UIDs changed, window %.1fs (CRI down %.1fs)",
		st, variant, run.Pods, run.Containers, run.Restarts, run.RecreatedPods, run.Diff.UIDChanges, run.WindowSeconds, run.RuntimeDownSeconds)
	return run, res, shims, nil
}

// runtimeChecks are exec, logs, a genuine change and stop on a container
// that ran at before and still runs at after; a patched run's go to the
// report's checks.
func (s *Scenario) runtimeChecks(ctx context.Context, st plan.RuntimeStep, variant string, before, after *snapshot.Snapshot, patched bool) []report.Check {
	checks := s.oldContainerChecks(ctx, st, variant, before, after)
	if patched {
		for _, c := range checks {
			s.check(c)
		}
	}
	return checks
}

// judgeRuntimeRun asserts a patched run as a kubelet swap's (0 restarts,
// 0 pods recreated, 0 UIDs changed; its checks go to the report's
// checks); a control is reported: what it lost and how its checks went
// are its verdict. The negative control (r.KillShims) passes only when
// that same assertion fails on it; the split one (r.SplitShimGroup) only
// when also the shim-group check before the swap (checks[0]) named
// containers (splitNamed).
func judgeRuntimeRun(run *report.Run, r plan.RuntimeRun, checks []report.Check, splitNamed bool) {
	lost := fmt.Sprintf("%d restarts (%s), %d pods recreated, %d pod UIDs changed",
		run.Restarts, strings.Join(run.Diff.RestartedPods, " "), run.RecreatedPods, run.Diff.UIDChanges)
	switch {
	case r.KillShims:
		probe := *run
		report.AssertPatched(&probe)
		run.Passed = run.Pods > 0 && !probe.Passed
		switch {
		case run.Pods == 0:
			run.Verdict = "negative control (the shims killed with containerd): no pods"
		case run.Passed:
			run.Verdict = "negative control (the shims killed with containerd): the zero-restart assertion failed, as it must: " + lost
		default:
			run.Verdict = "negative control (the shims killed with containerd): the zero-restart assertion passed, so it cannot tell a loss: " + lost
		}
	case r.SplitShimGroup:
		probe := *run
		report.AssertPatched(&probe)
		run.Passed = run.Pods > 0 && !probe.Passed && splitNamed
		prefix := "negative control (one pod's shim group split before the swap): "
		switch {
		case run.Pods == 0:
			run.Verdict = prefix + "no pods"
		case run.Passed:
			run.Verdict = prefix + "the check before the swap named it (" + checks[0].Detail + ") and the zero-restart assertion failed, as both must: " + lost
		case !splitNamed:
			run.Verdict = prefix + "the check before the swap did not name it: " + checkDetail(checks) + "; " + lost
		default:
			run.Verdict = prefix + "the check named it, but the zero-restart assertion passed: the new containerd kept the stranded shim: " + lost
		}
	case r.Patched:
		report.AssertPatched(run)
	default:
		run.Passed = run.Pods > 0
		run.Verdict = "reported, not asserted (the control of a runtime step): " + lost
		if len(checks) > 0 {
			run.Verdict += "; " + controlOutcomes(checks)
		}
	}
}

// controlOutcomes says how a control's checks went: reported, not asserted.
func controlOutcomes(checks []report.Check) string {
	var outcomes []string
	for _, c := range checks {
		status := "pass"
		if !c.Passed {
			status = "FAIL"
			if c.Detail != "" {
				status += " (" + c.Detail + ")"
			}
		}
		outcomes = append(outcomes, fmt.Sprintf("%s: %s", c.Name, status))
	}
	return strings.Join(outcomes, "; ")
}

// runtimeSwap is the swap sequence with the runtime swapped: the node is
// back when every pod runs and serves and the kubelet has synced every pod
// since the new containerd answered CRI.
func (s *Scenario) runtimeSwap(ctx context.Context, st plan.RuntimeStep, r plan.RuntimeRun, to local.RuntimeDist, run *report.Run, beforeStop func(context.Context)) (*swap.Result, error) {
	var offset int64
	h := swap.Hooks{
		Prepare: func(ctx context.Context, _ *snapshot.Snapshot) error {
			beforeStop(ctx)
			s.logf("runtime %s (%s): stopping containerd %s; kubelet pid %d keeps running", st, run.Variant, s.node.RunningRuntime().Version, s.kubelet.PID)
			if r.KillShims {
				s.logf("runtime %s (%s): the negative control: its shims are killed after it stopped, as systemd stops a unit without KillMode=process", st, run.Variant)
			}
			return nil
		},
		Started: func(context.Context, time.Time) (err error) {
			offset, err = s.kubelet.LogSize()
			return err
		},
		Wait: func(ctx context.Context, _ *snapshot.Snapshot, _ time.Time) (time.Time, error) {
			return s.waitRuntimeBack(ctx, 4*time.Minute, offset)
		},
		WaitFailed: swap.FailPatched(r.Patched && !r.KillShims, s.logf, fmt.Sprintf("after the runtime swap to %s: ", st.To)),
		Settle: func(ctx context.Context, window time.Duration) error {
			settle := 3*s.opts.SyncFrequency + 3*time.Second
			s.logf("runtime %s (%s): back %.1fs after containerd %s started; waiting %s (three sync periods)", st, run.Variant, window.Seconds(), to.Version, settle)
			return ctxtime.Sleep(ctx, settle)
		},
		Alive: func(context.Context) error { return s.kubelet.Alive() },
	}
	swapper := func(ctx context.Context) (time.Time, error) {
		started, down, err := s.node.SwapRuntime(ctx, to, r.KillShims)
		run.RuntimeDownSeconds = down.Seconds()
		return started, err
	}
	return swap.Run(ctx, s.swapNode(), swapper, h)
}

// waitRuntimeBack waits until every pod runs all its containers and serves
// and the running kubelet has logged computePodActions for every pod
// after offset in its log.
func (s *Scenario) waitRuntimeBack(ctx context.Context, timeout time.Duration, offset int64) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	pods := s.pods()
	refs := podRefs(pods)
	lastReport := time.Now()
	for {
		if err := s.kubelet.Alive(); err != nil {
			return time.Time{}, err
		}
		snap, err := s.rt.Take(ctx, corpus.Namespace)
		why := ""
		if err != nil {
			why = err.Error()
		} else if why = notReady(snap, pods); why == "" {
			if err := servingOf(ctx, snap, pods); err != nil {
				why = err.Error()
			}
		}
		if why == "" {
			done, err := s.kubelet.SyncedPodsSince(offset, refs)
			if err != nil {
				return time.Time{}, err
			}
			if len(done) < len(refs) {
				why = fmt.Sprintf("the kubelet has synced %d of %d pods since the new containerd answered", len(done), len(refs))
			}
		}
		if why == "" {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not back after %s: %s", timeout, why)
		}
		if time.Since(lastReport) > 15*time.Second {
			s.logf("waiting: %s", why)
			lastReport = time.Now()
		}
		if err := ctxtime.Sleep(ctx, 200*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

// oldContainers are the containers running before and after with the
// same ID, but those of pod skip.
func oldContainers(before, after *snapshot.Snapshot, skip string) []snapshot.Container {
	ran := map[string]bool{}
	for _, c := range before.Containers {
		if c.State == "RUNNING" {
			ran[c.ID] = true
		}
	}
	var out []snapshot.Container
	for _, c := range after.Containers {
		if c.State == "RUNNING" && ran[c.ID] && c.Pod != skip {
			out = append(out, c)
		}
	}
	return out
}

func checkDetail(checks []report.Check) string {
	if len(checks) == 0 {
		return "no check"
	}
	return checks[0].Detail
}
