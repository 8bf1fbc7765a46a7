package roll

import (
	"context"
)

// newRoll is a roll this node has no state of:
// everything before the first change (the kubelet's server answers, the
// runtime step's plan, preflight), then the runtime step when there is
// one, the backup and the state begun, then the kubelet's step.
func (r *run) newRoll(ctx context.Context) error {
	if err := r.do(ctx, r.checkNewRoll(), r.checkKubeletServer(), r.planRuntime()); err != nil {
		return err
	}
	if r.rt.step {
		return r.do(ctx, actions(r.runtimePreflight(), r.beginRuntimeStep(), r.runtimeSwap(), r.gateRuntime(),
			r.kubeletBegin(), r.kubeletStep())...)
	}
	return r.do(ctx, actions(r.kubeletPreflight(), r.beginKubeletStep(), r.kubeletStep())...)
}

// checkNewRoll refuses a target selected outside this roll and a node
// whose gate failed before; the roll goes from what stage2 serves.
func (r *run) checkNewRoll() action {
	return action{"new roll: check", func(ctx context.Context) error {
		if r.sel.stage2 == r.target {
			return dief("stage2 already serves %s, but this node has no record of a roll to it (%s): it was selected outside this Plan, and no gate passed here; not certifying",
				r.target, StateFile)
		}
		if marker := gateFailedMarker(r.target); exists(r.files, marker) {
			return dief("the health gate failed on this node before (%s): not trying again; remove the file to retry", marker)
		}
		r.previous, r.prevStage1 = r.sel.stage2, r.sel.stage1
		r.log("node %s (%s): %s -> %s", r.cfg.Node, r.cfg.Role, r.previous, r.target)
		return nil
	}}
}

// checkKubeletServer refuses a roll whose gate could not read the
// kubelet's readiness probes.
func (r *run) checkKubeletServer() action {
	return action{"new roll: the kubelet's server answers", func(ctx context.Context) error {
		if _, ok := r.probeSample(ctx); !ok {
			return dief("the kubelet's %s/metrics/probes did not answer (the gate's evidence of readiness): nothing changed", r.cfg.KubeletURL)
		}
		return nil
	}}
}

// kubeletPreflight is preflight of the kubelet's step on the node's
// runtime: a refusal or a loss stops the Job before anything changed.
func (r *run) kubeletPreflight() []action {
	return []action{{"new roll: preflight", func(ctx context.Context) error {
		// A refusal (a target the node's runtime does not serve, a bad
		// version) is preflight's last line on stderr: the Job's one line.
		table, refusal := r.preflight(ctx, "")
		if refusal != "" {
			return dief("kubelet-compat preflight refused this step: %s: nothing changed", refusal)
		}
		if why := r.judgePreflight(table); why != "" {
			return dief("%s: nothing changed", why)
		}
		return nil
	}}}
}

// clearState drops a state that names no roll (no target), as a new roll
// begins.
func (r *run) clearState() action {
	return action{"state: cleared", func(context.Context) error {
		if err := r.store.remove(); err != nil {
			return dief("removing %s: %v", StateFile, err)
		}
		r.st = State{}
		return nil
	}}
}

// beginKubeletStep saves what kubeadm rewrites, then writes the roll's
// state: begun.
func (r *run) beginKubeletStep() []action {
	return []action{r.clearState(), r.backup(), r.saveAction("state: begun", func(s *State) {
		s.Target, s.Previous, s.Stage1, s.JobPods = r.target, r.previous, r.prevStage1, r.cfg.PodUID
		s.Phase, s.BeganAt = PhaseBegun, r.stamp()
	})}
}

// kubeletBegin is the kubelet's step after the runtime step passed its
// gate: preflight again, on the containerd that runs now (the node's
// probe); a refusal selects the previous containerd back; then the backup
// and the state begun.
func (r *run) kubeletBegin() []action {
	return []action{{"kubelet step: preflight", func(ctx context.Context) error {
		table, refusal := r.preflight(ctx, "")
		if refusal != "" {
			return failRollf("kubelet-compat preflight refused the kubelet's step on containerd %s, which runs now: %s", r.rt.version, refusal)
		}
		if why := r.judgePreflight(table); why != "" {
			return failRollf("%s", why)
		}
		return nil
	}}, r.backup(), r.saveAction("state: begun", func(s *State) { s.Phase, s.BeganAt = PhaseBegun, r.stamp() })}
}
