package roll

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// runtimeStep is the runtime step's (KC_RUNTIME, or the state's runtime
// for a roll begun): containerd moved to version under the running
// kubelet, gated, rolled back alone (README.md, "The runtime step").
type runtimeStep struct {
	// runtime is containerd@VERSION; version its VERSION.
	runtime, version string
	// prev is containerd's selection before the roll: what a rollback
	// selects again.
	prev string
	// step: this new roll runs the runtime step.
	step bool
}

// planRuntime decides a new roll's runtime step, before anything changed:
// none when containerd's selection is the one asked for; refused when
// that version is not installed, the selection could not be put back,
// containerd's unit would stop its shims with it (KillMode), or crictl
// cannot say which containerd runs (upgrade.sh's runtime_plan).
func (r *run) planRuntime() action {
	return action{"new roll: the runtime step's plan", func(ctx context.Context) error {
		r.rt.step = false
		if r.rt.runtime == "" {
			return nil
		}
		rt, v := r.rt.runtime, r.rt.version
		sel, errLine, ok := r.runtimeSelected(ctx)
		if !ok {
			return dief("KC_RUNTIME %s: runtime-select status failed on the node (%s; is runtime-unversioned installed?): nothing changed", rt, errLine)
		}
		if sel == v {
			r.log("runtime: containerd %s is selected already (runtime-select status): no runtime step", v)
			return nil
		}
		if sel != "system" && (sel == "" || sel[0] < '0' || sel[0] > '9') {
			if sel == "" {
				sel = "not said"
			}
			return dief("KC_RUNTIME %s: containerd's selection is %s (runtime-select status), which a rollback could not select again: nothing changed", rt, sel)
		}
		list := r.onHost(ctx, "runtime-select", "list")
		if !list.OK() {
			return dief("KC_RUNTIME %s: runtime-select list failed on the node: nothing changed", rt)
		}
		installed, have := false, []string{}
		for _, line := range lines(string(list.Stdout)) {
			if line == "containerd "+v {
				installed = true
			}
			if f := strings.Fields(line); len(f) > 0 && f[0] == "containerd" {
				have = append(have, line)
			}
		}
		if !installed {
			h := strings.Join(have, ", ")
			if h == "" {
				h = "no containerd"
			}
			return dief("KC_RUNTIME %s: containerd %s is not installed on the node (runtime-select list: %s; install runtime-containerd-%s): nothing changed", rt, v, h, v)
		}
		// The restart must stop containerd alone: its shims, and so the
		// containers, outlive it only with KillMode=process.
		km := r.onHost(ctx, "systemctl", "show", "-p", "KillMode", "containerd")
		killMode := ""
		if km.OK() {
			killMode = strings.TrimRight(string(km.Stdout), "\n")
		}
		if killMode != "KillMode=process" {
			if killMode == "" {
				killMode = "no KillMode (systemctl show -p KillMode containerd failed)"
			}
			return dief("KC_RUNTIME %s: containerd.service has %s: restarting it would stop its shims, and so every container, with it (it must be process): nothing changed", rt, killMode)
		}
		runs, res := r.runtimeRuns(ctx)
		if !res.OK() || runs == "" {
			return dief("KC_RUNTIME %s: crictl version failed on the node (exit %d: %s): the runtime step needs crictl to see which containerd runs: nothing changed",
				rt, res.Code, firstLine(string(res.Stderr)))
		}
		r.rt.step, r.rt.prev = true, sel
		r.log("runtime: containerd %s -> %s (KC_RUNTIME %s; runs now: %s): the runtime step first, under kubelet %s, then the kubelet's", sel, v, rt, runs, r.previous)
		return nil
	}}
}

// runtimeSelected is containerd's selection as runtime-select status says
// it: a version, system, or unknown (LINK); false with runtime-select's
// first line of error when it fails.
func (r *run) runtimeSelected(ctx context.Context) (sel, errLine string, ok bool) {
	res := r.onHost(ctx, "runtime-select", "status")
	if !res.OK() {
		return "", firstLine(string(res.Stderr)), false
	}
	for _, line := range lines(string(res.Stdout)) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "containerd:" {
			return strings.TrimLeft(strings.TrimPrefix(line, "containerd:"), " "), "", true
		}
	}
	return "", "", true
}

// runtimeRuns is the version of the containerd that answers the CRI
// (crictl version's RuntimeVersion without its v): the process, not the
// selection.
func (r *run) runtimeRuns(ctx context.Context) (string, Result) {
	res := r.onHost(ctx, "crictl", "version")
	if !res.OK() {
		return "", res
	}
	for _, line := range lines(string(res.Stdout)) {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "RuntimeVersion:" {
			return strings.TrimPrefix(f[1], "v"), res
		}
	}
	return "", res
}

// waitRuntime waits, at most KC_GATE_TIMEOUT, until the containerd that
// answers the CRI is version (system: any); why not otherwise.
func (r *run) waitRuntime(ctx context.Context, version string) (string, error) {
	started := r.Host.Now()
	for {
		got, res := r.runtimeRuns(ctx)
		if (version == "system" && got != "") || got == version ||
			(strings.HasPrefix(got, version) && len(got) > len(version) && (got[len(version)] < '0' || got[len(version)] > '9')) {
			r.log("runtime: containerd %s answers the CRI (crictl version: v%s, %ds)", version, got, seconds(r.Host.Now().Sub(started)))
			return "", nil
		}
		if !r.Host.Now().Before(started.Add(time.Duration(r.cfg.GateTimeout) * time.Second)) {
			answer := firstLine(string(res.Stderr))
			if got != "" {
				answer = "containerd v" + got + " answers"
			}
			return fmt.Sprintf("containerd %s does not answer the CRI after %ds (crictl version: %s)", version, r.cfg.GateTimeout, answer), nil
		}
		if err := r.sleep(ctx, r.cfg.Poll.D); err != nil {
			return "", err
		}
	}
}

// repairCgroups puts back, with kubelet-compat cgroups --repair, every
// running container whose process left a cgroup runc gave it: containerd
// 1.7 or later kills such a shim at its start as leaked, and the pod with
// it. Why it failed, or "" (upgrade.sh's runtime_cgroups).
func (r *run) repairCgroups(ctx context.Context) string {
	res := r.onHost(ctx, "kubelet-compat", "cgroups", "--repair")
	for _, line := range lines(string(res.Stdout)) {
		r.log("runtime: cgroups: %s", line)
	}
	if res.OK() {
		return ""
	}
	return fmt.Sprintf("kubelet-compat cgroups --repair failed (%s): containerd %s would kill those pods at its start", cliReason(res.Stderr), r.rt.version)
}

// runtimePreflight is a new roll's checks of the runtime step: the
// cgroups repaired, preflight of the kubelet's step on the runtime it
// will run on (a refusal only for the node's runtime today is what the
// runtime step fixes), that runtime serving the running kubelet too.
func (r *run) runtimePreflight() []action {
	return []action{
		{"runtime: cgroups repaired", func(ctx context.Context) error {
			if why := r.repairCgroups(ctx); why != "" {
				return dief("%s: nothing changed", why)
			}
			return nil
		}},
		{"new roll: preflight on the runtime step's containerd", func(ctx context.Context) error {
			table, refusal := r.preflight(ctx, r.rt.runtime)
			if refusal != "" {
				return dief("kubelet-compat preflight refused this step on containerd %s (KC_RUNTIME), the runtime its kubelet would run on: %s: nothing changed", r.rt.version, refusal)
			}
			if from := preflightFromNote(table); from != "" {
				return dief("KC_RUNTIME containerd %s does not serve the running kubelet %s (preflight: %s): the kubelet's step comes first there (docs/runtime.md), and this Job runs the runtime step before it only; roll the kubelet without KC_RUNTIME first: nothing changed",
					r.rt.version, r.previous, from)
			}
			if why := r.judgePreflight(table); why != "" {
				return dief("%s: nothing changed", why)
			}
			return nil
		}},
	}
}

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
// containerd's answer on the CRI (upgrade.sh's runtime_swap).
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
// or the previous containerd selected back (upgrade.sh's
// runtime_gate_or_rollback).
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
// again. Never a verdict without the gate (upgrade.sh's rerun_runtime).
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
// runtime-rolling-back, and the next one does it again (upgrade.sh's
// runtime_rollback). As the kubelet's rollback, the marker of a failed
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
