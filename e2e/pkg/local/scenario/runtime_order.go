package scenario

// The runtime step against a kubelet step, in every order (-runtime-order,
// issue 35 §3): from one start (the runtime step's From containerd on an
// empty root, the corpus on the kubelet step's From), the runtime first
// under the old kubelet, then the kubelet; the kubelet first, then the
// runtime under the new one; or both in one window, the runtime swapped
// while no kubelet runs. Both kubelets patched, then both as released.
// Each order ends with exec, logs, a genuine change and stop on a
// container that ran at its start, then every pod removed through the CRI.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
)

// orderRuns runs every order of Plan.RuntimeOrder; a run that fails its
// assertions is reported and the others go on.
func (s *Scenario) orderRuns(ctx context.Context) error {
	k := s.opts.RuntimeOrder
	for _, v := range []string{k.From, k.To} {
		for _, patched := range []bool{true, false} {
			if p := s.Binary(v, patched); (patched && !s.opts.SkipPatched || !patched && s.opts.Controls) && !fileExists(p) {
				return fmt.Errorf("missing kubelet %s (make build VERSIONS=%s [PATCHED=false], or copy it there)", p, v)
			}
		}
	}
	var failed []error
	for _, r := range plan.OrderRuns(s.opts.Controls, s.opts.SkipPatched) {
		runs, err := s.orderRun(ctx, r)
		if err != nil {
			return fmt.Errorf("order %s: %w", r.Order, err)
		}
		failed = append(failed, s.reportRuns("", runs)...)
	}
	return errors.Join(failed...)
}

// orderRun is one order from one start, its steps each judged as on their
// own; the last one's verdict also carries the old-container checks.
func (s *Scenario) orderRun(ctx context.Context, r plan.OrderRun) ([]*report.Run, error) {
	k, rst := s.opts.RuntimeOrder, s.opts.RuntimeSteps[0]
	out := filepath.Join(s.opts.Output, "runtime")
	from, err := local.FindRuntime(ctx, out, rst.From.Version)
	if err != nil {
		return nil, err
	}
	to, err := local.FindRuntime(ctx, out, rst.To.Version)
	if err != nil {
		return nil, err
	}
	variant := report.Unpatched
	if r.Patched {
		variant = report.Patched
	}
	if err := s.reset(ctx); err != nil {
		return nil, err
	}
	if err := s.node.ResetRuntime(ctx, from); err != nil {
		return nil, fmt.Errorf("starting %s on an empty root: %w", from, err)
	}
	s.logf("order %s (%s): %s, kubelet %s; the runtime step %s, the kubelet step %s", r.Order, variant, from, k.From, rst, k)
	if err := s.baselineOn(ctx, k.From, r.Patched); err != nil {
		return nil, err
	}
	start, err := s.rt.Take(ctx, corpus.Namespace)
	if err != nil {
		return nil, err
	}
	var runs []*report.Run
	runtimeStep := func(under string) error {
		run, _, err := s.runtimeStep(ctx, rst, under, r.Patched, variant, to)
		if err == nil {
			judgeRuntimeRun(run, r.Patched, nil)
			runs = append(runs, run)
		}
		return err
	}
	kubeletStep := func() error {
		run, err := s.swap(ctx, k, r.Patched, nil)
		if err == nil {
			s.judgeKubeletStep(run, k, r.Patched)
			runs = append(runs, run)
		}
		return err
	}
	switch r.Order {
	case plan.RuntimeFirst:
		err = errors.Join(runtimeStep(k.From), kubeletStep())
	case plan.KubeletFirst:
		err = errors.Join(kubeletStep(), runtimeStep(k.To))
	case plan.OneWindow:
		s.runtimeBetween = &to
		err = kubeletStep()
		s.runtimeBetween = nil
	}
	if err != nil {
		return nil, err
	}
	for _, run := range runs {
		run.Step = fmt.Sprintf("%s: %s", r.Order, run.Step)
	}
	end, err := s.rt.Take(ctx, corpus.Namespace)
	if err != nil {
		return nil, err
	}
	last := runs[len(runs)-1]
	checks := s.runtimeChecks(ctx, rst, variant, start, end, r.Patched)
	checks = append(checks, s.teardown(ctx, fmt.Sprintf("order %s (%s): ", r.Order, variant)))
	if r.Patched {
		s.check(checks[len(checks)-1])
	} else {
		last.Verdict += "; " + controlOutcomes(checks)
	}
	return runs, nil
}

// judgeKubeletStep holds a kubelet step's run as the chain's (patched: 0
// restarts) or the control's (what upstream restarts on that step).
func (s *Scenario) judgeKubeletStep(run *report.Run, st Step, patched bool) {
	if patched {
		report.AssertPatched(run)
		return
	}
	for _, e := range s.corpus.UpstreamRestarts(kubelet.Minor(st.From), kubelet.Minor(st.To)) {
		run.Expected = append(run.Expected, report.Expectation{Pod: e.Pod, Reason: e.Reason})
	}
	report.AssertControl(run)
}
