package roll

import (
	"context"
	"strconv"
	"strings"
)

// beginRuntimeStep writes the roll's state: runtime-swapping, with the
// selection to put back.
func (r *run) beginRuntimeStep() []action {
	return []action{r.clearState(), r.saveAction("state: runtime-swapping", func(s *State) {
		s.Target, s.Previous, s.Stage1, s.JobPods = r.target, r.previous, r.prevStage1, r.cfg.PodUID
		s.Runtime, s.RuntimePrevious = r.rt.runtime, r.rt.prev
		s.Phase, s.BeganAt = PhaseRuntimeSwapping, r.stamp()
	})}
}

// runtimeSwap is the runtime step under the running kubelet: the picture,
// as before the kubelet's swap; the kubelet's counters the gate counts
// from (its rejections, its readiness probes); runtime-select
// --restart-containerd, which stops containerd alone; the new
// containerd's answer on the CRI.
func (r *run) runtimeSwap() []action {
	return actions(r.picture(), []action{
		{"runtime: the kubelet's counters", func(ctx context.Context) error {
			rejections := strings.Fields(r.kubeletRejections(ctx) + " x")[0]
			if _, err := strconv.Atoi(rejections); err != nil {
				rejections = ""
			}
			base, ok := r.probeSample(ctx)
			if !ok {
				return failRollf("the kubelet's %s/metrics/probes did not answer", r.cfg.KubeletURL)
			}
			if err := put(r.files, ProbesBaseFile, []byte(base.String())); err != nil {
				return dief("writing %s: %v", ProbesBaseFile, err)
			}
			if err := r.save(func(s *State) { s.RuntimeRejections, s.RuntimeSwappedAt = rejections, r.stamp() }); err != nil {
				return dief("%v", err)
			}
			return nil
		}},
		{"runtime: cgroups repaired", func(ctx context.Context) error {
			if why := r.repairCgroups(ctx); why != "" {
				return failRollf("%s", why)
			}
			return nil
		}},
		{"runtime: switch", func(ctx context.Context) error {
			r.log("runtime: runtime-select --restart-containerd containerd %s (containerd stopped alone: its shims, and so the containers, go on)", r.rt.version)
			if res := r.onHostLogged(ctx, "runtime-select", "--restart-containerd", "containerd", r.rt.version); !res.OK() {
				return failRollf("runtime-select --restart-containerd containerd %s failed", r.rt.version)
			}
			return nil
		}},
		r.runtimeBack(true),
	})
}

// runtimeBack waits for the new containerd's answer, then notes when it
// came back (the gate counts the kubelet's syncs from then); always, or
// only when no Job noted it before.
func (r *run) runtimeBack(always bool) action {
	return action{"runtime: containerd answers", func(ctx context.Context) error {
		why, err := r.waitRuntime(ctx, r.rt.version)
		if err != nil {
			return err
		}
		if why != "" {
			return failRollf("%s", why)
		}
		if !always && r.st.RuntimeBackAt != "" {
			return nil
		}
		if err := r.save(func(s *State) { s.RuntimeBackAt = r.stamp() }); err != nil {
			return dief("%v", err)
		}
		return nil
	}}
}

// gateRuntime is the runtime step's gate and its verdict: runtime-passed,
// or the previous containerd selected back.
func (r *run) gateRuntime() []action {
	return []action{
		{"runtime: gate", func(ctx context.Context) error {
			r.gp = gateParams{kubelet: r.previous, on: " on containerd " + r.rt.version, step: "runtime", since: r.st.RuntimeBackAt,
				swappedAt: func(s State) string { return s.RuntimeSwappedAt }, probeBase: true, probeSince: "since the runtime swap",
				rejectBase: r.st.RuntimeRejections}
			r.log("gate: the runtime step's gate: kubelet v%s on containerd %s, against the picture before the runtime swap", r.previous, r.rt.version)
			ok, err := r.gate(ctx)
			if err != nil {
				return err
			}
			if !ok {
				return &stepFailed{why: "the runtime step's health gate failed", gate: true}
			}
			return nil
		}},
		{"state: runtime-passed", func(context.Context) error {
			if err := r.save(func(s *State) { s.Phase, s.RuntimePassedAt = PhaseRuntimePassed, r.stamp() }); err != nil {
				return dief("%v", err)
			}
			r.gp = r.kubeletGate()
			r.log("node %s: containerd %s runs under kubelet %s and its gate passed: now the kubelet's step", r.cfg.Node, r.rt.version, r.previous)
			return nil
		}},
	}
}

// rerunRuntime goes on from a Job that died in the runtime step: the
// switch took (containerd's selection is the new one): its gate against
// the saved picture; it did not: the picture, the switch and the gate
// again. Never a verdict without the gate.
func (r *run) rerunRuntime(ctx context.Context) error {
	if r.sel.stage2 != r.previous {
		return failRollf("stage2 serves %s in the runtime step, not %s", r.sel.stage2, r.previous)
	}
	sel, _, ok := r.runtimeSelected(ctx)
	if !ok {
		return failRollf("runtime-select status failed")
	}
	switch sel {
	case r.rt.version:
		r.log("a Job before this one died after the runtime swap, before its gate's verdict: the gate runs against the picture it saved (%s)", r.st.RuntimeSwappedAt)
		return r.do(ctx, actions([]action{r.runtimeBack(false)}, r.gateRuntime())...)
	case r.rt.prev:
		r.log("a Job before this one died before the runtime swap took (containerd %s is selected): taking the picture again", sel)
		return r.do(ctx, actions(r.runtimeSwap(), r.gateRuntime())...)
	}
	return failRollf("containerd's selection is %s, neither %s nor %s", sel, r.rt.prev, r.rt.version)
}

// runtimeRollback selects the containerd of before the roll again
// (runtime-select --restart-containerd: containerd stopped alone again)
// under the state runtime-rolling-back, and waits for its answer on the
// CRI; the kubelet was not touched. Idempotent: a Job killed in it leaves
// runtime-rolling-back, and the next one does it again. As the kubelet's rollback, the marker of a failed
// gate is written before the verdict.
func (r *run) runtimeRollback(why string) []action {
	return []action{
		r.saveAction("state: runtime-rolling-back", func(s *State) { s.Phase, s.Reason = PhaseRuntimeRollingBack, why }),
		{"runtime rollback: select the previous containerd", func(ctx context.Context) error {
			r.log("rolling the runtime back to containerd %s (%s)", r.rt.prev, why)
			sel, _, ok := r.runtimeSelected(ctx)
			if !ok {
				return dief("the rollback failed: runtime-select status failed (the next Job tries again)")
			}
			if sel == r.rt.prev {
				return nil
			}
			r.log("rollback: runtime-select --restart-containerd containerd %s", r.rt.prev)
			if res := r.onHostLogged(ctx, "runtime-select", "--restart-containerd", "containerd", r.rt.prev); !res.OK() {
				return dief("the rollback failed: runtime-select --restart-containerd containerd %s failed (the next Job tries again)", r.rt.prev)
			}
			return nil
		}},
		{"runtime rollback: containerd answers", func(ctx context.Context) error {
			why, err := r.waitRuntime(ctx, r.rt.prev)
			if err != nil {
				return err
			}
			if why != "" {
				return dief("the rollback failed: %s (the next Job tries again)", why)
			}
			return nil
		}},
		r.gateFailedMark(why, "the runtime step's health gate failed"),
		r.saveAction("state: rolled-back", func(s *State) { s.Phase, s.RolledBackAt = PhaseRolledBack, r.stamp() }),
		{"runtime rollback: done", func(context.Context) error {
			r.log("rolled back: containerd %s is selected and answers the CRI; the kubelet was not touched (stage2 and stage1 serve %s and %s)",
				r.rt.prev, r.previous, r.prevStage1)
			return nil
		}},
	}
}
