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
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
)

// orderRuns runs every order of Plan.RuntimeOrder; a run that fails its
// assertions is reported and the others go on.
func (s *Scenario) orderRuns(ctx context.Context) error {
	if err := s.needKubelets(s.opts.RuntimeOrder.From, s.opts.RuntimeOrder.To); err != nil {
		return err
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
	to, err := local.FindRuntime(ctx, filepath.Join(s.opts.Output, "runtime"), rst.To.Version)
	if err != nil {
		return nil, err
	}
	_, variant, err := s.startRuntimeRun(ctx, fmt.Sprintf("order %s of the runtime step %s and the kubelet step %s", r.Order, rst, k), rst.From, k.From, r.Patched)
	if err != nil {
		return nil, err
	}
	start, err := s.rt.Take(ctx, corpus.Namespace)
	if err != nil {
		return nil, err
	}
	var runs []*report.Run
	asRuntimeRun := plan.RuntimeRun{Patched: r.Patched}
	runtimeStep := func(under string) error {
		run, _, shims, err := s.runtimeStep(ctx, rst, under, asRuntimeRun, variant, to)
		if err == nil {
			if r.Patched {
				s.check(shims.Check)
			}
			judgeRuntimeRun(run, asRuntimeRun, []report.Check{shims.Check}, shims.Named)
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
	// Each step only if the one before it ran.
	switch r.Order {
	case plan.RuntimeFirst:
		if err = runtimeStep(k.From); err == nil {
			err = kubeletStep()
		}
	case plan.KubeletFirst:
		if err = kubeletStep(); err == nil {
			err = runtimeStep(k.To)
		}
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
	checks := s.runtimeChecks(ctx, rst, variant, start, end, r.Patched)
	s.finishRuntimeRun(ctx, fmt.Sprintf("order %s (%s): ", r.Order, variant), runs[len(runs)-1], r.Patched, checks)
	return runs, nil
}
