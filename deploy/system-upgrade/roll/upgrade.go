package roll

import (
	"context"
	"errors"
)

// Upgrade rolls the node to Config.Target: under the
// roll's lock, from what the roll's state on the node says, to a verdict
// the gate proved (nil: upgraded and gated, by this run or one before it)
// or a rollback (*Failure). A run killed at any point, and run again,
// goes on from the state; a run whose context ends does nothing more on
// the node and returns the context's error.
func (e *Engine) Upgrade(ctx context.Context) error {
	r := e.newRun(ctx)
	err := r.upgrade(ctx)
	if err != nil && aborted(ctx, err) {
		return ctx.Err()
	}
	return err
}

func (r *run) upgrade(ctx context.Context) error {
	if err := r.lock(ctx); err != nil {
		return err
	}
	if err := r.writeKubeletKubeconfig(); err != nil {
		return err
	}
	r.gp = r.kubeletGate()
	if err := r.selectStatus(ctx); err != nil {
		return err
	}
	if r.sel.stage2 == "" {
		return dief("kubernetes-select status names no version for stage2")
	}
	st, err := r.store.load()
	if err != nil {
		return dief("%v", err)
	}
	r.st = st
	if st.Target != "" && st.Target != r.target {
		if err := r.endOtherRoll(ctx); err != nil {
			return err
		}
	}
	if r.st.Target != "" {
		err = r.resume(ctx)
	} else {
		err = r.newRoll(ctx)
	}
	return r.failed(ctx, err)
}

// failed rolls the node back when err is a failed step or gate,
// and says how the run ended.
func (r *run) failed(ctx context.Context, err error) error {
	var f *stepFailed
	if !errors.As(err, &f) || aborted(ctx, err) {
		return err
	}
	if r.naive {
		return dief("%s: the naive roll has no rollback; node %s is left as it is and the Job fails", f.why, r.cfg.Node)
	}
	if !f.gate {
		r.log("%s", f.why)
	}
	// In the runtime step, or after it before the kubelet's began: the
	// runtime is what the roll changed.
	if r.st.Phase == PhaseRuntimeSwapping || r.st.Phase == PhaseRuntimePassed {
		if err := r.do(ctx, r.runtimeRollback(f.why)...); err != nil {
			return err
		}
		return dief("%s: node %s is back on containerd %s, its kubelet untouched (%s); the Job fails, which stops the Plan",
			f.why, r.cfg.Node, r.rt.prev, r.previous)
	}
	if err := r.do(ctx, r.rollback(f.why)...); err != nil {
		return err
	}
	if f.gate {
		return dief("%s: node %s is back on %s; the Job fails, which stops the Plan", f.why, r.cfg.Node, r.previous)
	}
	return dief("%s: node %s rolled back to %s; the Job fails, which stops the Plan", f.why, r.cfg.Node, r.previous)
}

// endOtherRoll ends a roll of this node to another target (a Job of the
// Plan's former version died mid-roll): rolled back unless it has a
// verdict, then kept as LastRollFile.
func (r *run) endOtherRoll(ctx context.Context) error {
	other := r.st
	if !other.Phase.Verdict() {
		r.log("this node has an unfinished roll to %s (its state: %s), of a Job of another version: rolling it back before the roll to %s",
			other.Target, other.Phase, r.target)
		want := r.target
		r.target, r.previous, r.prevStage1, r.rt.prev = other.Target, other.Previous, other.Stage1, other.RuntimePrevious
		why := "interrupted by a roll to " + want
		back := r.rollback(why)
		if other.Phase == PhaseRuntimeSwapping || other.Phase == PhaseRuntimeRollingBack {
			back = r.runtimeRollback(why)
		}
		if err := r.do(ctx, back...); err != nil {
			return err
		}
		r.target = want
		if err := r.selectStatus(ctx); err != nil {
			return err
		}
	}
	r.log("the last roll of this node (to %s) ended %s: kept as %s", other.Target, r.st.Phase, LastRollFile)
	if err := r.store.archive(); err != nil {
		return dief("keeping the last roll as %s: %v", LastRollFile, err)
	}
	r.st = State{}
	return nil
}

// resume goes on from the roll's state, by its phase.
func (r *run) resume(ctx context.Context) error {
	st := r.st
	r.previous, r.prevStage1, r.rt.prev = st.Previous, st.Stage1, st.RuntimePrevious
	r.rt.runtime, r.rt.version = st.Runtime, ""
	if st.Runtime != "" {
		v, ok := runtimeVersion(st.Runtime)
		if !ok {
			return dief("%s/state on the node has the runtime '%s', not containerd@VERSION", RollDir, st.Runtime)
		}
		r.rt.version = v
	}
	if r.cfg.PodUID != "" {
		if err := r.save(func(s *State) { s.JobPods = s.JobPods + " " + r.cfg.PodUID }); err != nil {
			return dief("%v", err)
		}
	}
	s2 := r.sel.stage2
	switch st.Phase {
	case PhasePassed:
		if s2 != r.target {
			return dief("this node's roll to %s passed its gate (%s), but stage2 now serves %s: not certifying", r.target, st.PassedAt, s2)
		}
		r.log("stage2 serves %s and this node's gate passed (%s): certified", r.target, st.PassedAt)
		return nil
	case PhaseRolledBack:
		return dief("the health gate failed on this node before (%s, rolled back %s): not trying again; remove %s (and %s) on the node to retry",
			st.Reason, st.RolledBackAt, StateFile, gateFailedMarker(r.target))
	case PhaseRollingBack:
		r.log("a Job before this one died while rolling back: finishing the rollback")
		if err := r.do(ctx, r.rollback(st.Reason)...); err != nil {
			return err
		}
		return dief("%s: node %s is back on %s; the Job fails, which stops the Plan", st.Reason, r.cfg.Node, r.previous)
	case PhaseRuntimeRollingBack:
		r.log("a Job before this one died while rolling the runtime back: finishing it")
		if err := r.do(ctx, r.runtimeRollback(st.Reason)...); err != nil {
			return err
		}
		return dief("%s: node %s is back on containerd %s, its kubelet untouched (%s); the Job fails, which stops the Plan",
			st.Reason, r.cfg.Node, r.rt.prev, r.previous)
	case PhaseRuntimeSwapping:
		if err := r.rerunRuntime(ctx); err != nil {
			return err
		}
		return r.do(ctx, actions(r.kubeletBegin(), r.kubeletStep())...)
	case PhaseRuntimePassed:
		if s2 != r.previous {
			return failRollf("stage2 serves %s before the kubelet's step, not %s", s2, r.previous)
		}
		r.log("the runtime step (containerd %s) passed its gate in a Job before this one (%s): not again; now the kubelet's step",
			r.rt.version, st.RuntimePassedAt)
		return r.do(ctx, actions(r.kubeletBegin(), r.kubeletStep())...)
	case PhaseSwapping:
		if s2 == r.target {
			r.log("a Job before this one died after the swap, before its gate's verdict: the gate runs against the picture it saved (%s)", st.SwappedAt)
			return r.do(ctx, r.gateKubelet()...)
		}
		if s2 != r.previous {
			return failRollf("stage2 serves %s, neither %s nor %s", s2, r.previous, r.target)
		}
		r.log("a Job before this one died at the swap, which did not happen: taking the picture again")
		return r.do(ctx, actions(r.picture(), r.swap(), r.gateKubelet())...)
	case PhaseBegun:
		switch s2 {
		case r.previous:
		case "none":
			// A newer kubernetes-unversioned puts its directories in place
			// of the links; the packages' step selects the running kubelet
			// again.
			r.log("stage2 selects none (the packages a Job before this one installed dropped its link): the packages' step selects %s again", r.previous)
		default:
			return failRollf("stage2 serves %s before the swap, not %s", s2, r.previous)
		}
		r.log("a Job before this one died before the swap: going on from the packages (node %s (%s): %s -> %s)",
			r.cfg.Node, r.cfg.Role, r.previous, r.target)
		return r.do(ctx, r.kubeletStep()...)
	}
	return dief("%s/state on the node has the unknown phase '%s'", RollDir, st.Phase)
}

// kubeletStep is the kubelet's step once begun: the packages, stage1 and
// kubeadm; the record and the picture; the swap; the gate and its verdict.
func (r *run) kubeletStep() []action {
	return actions(r.install(), r.picture(), r.swap(), r.gateKubelet())
}
