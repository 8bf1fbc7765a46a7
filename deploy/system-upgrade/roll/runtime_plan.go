package roll

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimeroad"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
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
// cannot say which containerd runs.
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
		if why := r.onTheRoad(ctx, sel, runs); why != "" {
			return dief("KC_RUNTIME %s: %s: nothing changed", rt, why)
		}
		r.rt.step, r.rt.prev = true, sel
		r.log("runtime: containerd %s -> %s (KC_RUNTIME %s; runs now: %s): the runtime step first, under kubelet %s, then the kubelet's", sel, v, rt, runs, r.previous)
		return nil
	}}
}

// onTheRoad checks the step from the containerd that runs to KC_RUNTIME's
// against the road containerd supports (pkg/runtimeroad: one minor at a
// time) and against the deprecated features the running containerd
// reports in use (`ctr deprecations list`, containerd 1.7 and later; sel is
// its selection, whose ctr asks): why the step is refused, or "".
func (r *run) onTheRoad(ctx context.Context, sel, runs string) string {
	from, ok := versions.Leading(runs)
	to, err := versions.ParseRelease(r.rt.version)
	if !ok || err != nil {
		return fmt.Sprintf("cannot place containerd %s -> %s on the road (crictl version: %s)", runs, r.rt.version, runs)
	}
	step := runtimeroad.Step{From: from, To: to}
	if err := step.Check(); err != nil {
		return err.Error() + " (docs/runtime.md, the road)"
	}
	if step.LeavesTaskAPIv3() {
		// The configuration 2.x wrote and the tasks it started are not
		// 1.x's: only the failed gate's rollback, which kept both, goes
		// back (runtimeRollback).
		return fmt.Sprintf("containerd %s -> %s leaves 2.x for 1.x, which is not a step of a roll: only the rollback of a failed runtime gate goes back, with the configuration it kept", runs, r.rt.version)
	}
	if step.Down() {
		return ""
	}
	if from.Major == 1 && from.Minor < 7 {
		r.log("runtime: containerd %s has no deprecations API (1.7 and later): no deprecated feature to check", runs)
		return ""
	}
	ctr := "ctr"
	if sel != "system" {
		ctr = layout.RuntimeCurrent + "/containerd/bin/ctr"
	}
	res := r.onHost(ctx, ctr, "deprecations", "list")
	if !res.OK() {
		return fmt.Sprintf("%s deprecations list failed (exit %d: %s): cannot tell which features in use containerd %s removes", ctr, res.Code, firstLine(string(res.Stderr)), r.rt.version)
	}
	inUse := runtimeroad.ParseDeprecations(string(res.Stdout))
	removed, unknown := step.Removed(inUse)
	r.log("runtime: containerd %s reports %d deprecated feature(s) in use (ctr deprecations list)%s", runs, len(inUse), listed(inUse))
	if len(unknown) > 0 {
		r.log("runtime: deprecations this roll does not know, not judged: %s", strings.Join(unknown, ", "))
	}
	if len(removed) > 0 {
		var names []string
		for _, d := range removed {
			names = append(names, fmt.Sprintf("%s (%s, removed in %s)", runtimeroad.Prefix+d.ID, d.What, d.RemovedIn))
		}
		return fmt.Sprintf("containerd %s removes what containerd %s reports in use: %s", r.rt.version, runs, strings.Join(names, "; "))
	}
	return ""
}

// listed is ": a, b" or "".
func listed(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ": " + strings.Join(ids, ", ")
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
// it. Why it failed, or "".
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
