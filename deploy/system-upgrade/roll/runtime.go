package roll

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimeroad"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
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
		{"runtime: containerd's configuration", r.migrateConfig},
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
	// selected: the previous containerd is selected already (a Job killed
	// in the rollback after its switch), read once, before anything.
	selected := false
	return []action{
		r.saveAction("state: runtime-rolling-back", func(s *State) { s.Phase, s.Reason = PhaseRuntimeRollingBack, why }),
		// The refusal comes before anything changes: a refused rollback
		// leaves the new containerd selected and running on its own
		// configuration (the kind e2e found the 1.x file put back under a
		// 2.0 that stayed).
		{"runtime rollback: the tasks the previous containerd must reach", func(ctx context.Context) error {
			r.log("rolling the runtime back to containerd %s (%s)", r.rt.prev, why)
			sel, _, ok := r.runtimeSelected(ctx)
			if !ok {
				return dief("the rollback failed: runtime-select status failed (the next Job tries again)")
			}
			if selected = sel == r.rt.prev; selected {
				return nil
			}
			if why := r.orphansOnRollback(); why != "" {
				return dief("the rollback failed: %s (the next Job tries again)", why)
			}
			return nil
		}},
		{"runtime rollback: containerd's configuration of before", r.restoreConfig},
		{"runtime rollback: select the previous containerd", func(ctx context.Context) error {
			if selected {
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

// ContainerdConfig is containerd's configuration on the node, which every
// selection reads (runtime-select's drop-in changes the binary, not -c).
const ContainerdConfig = "/etc/containerd/config.toml"

// containerdConfigBackup is where the runtime step keeps the file it
// migrates, for a rollback to prev (the selection before the step).
func containerdConfigBackup(prev string) string { return ContainerdConfig + ".kc-" + prev }

// migrateConfig writes containerd's configuration in the form the new
// containerd's own `config migrate` gives (2.x: version 3, 2.3 and later:
// version 4, which 2.0-2.2 cannot read; 1.x reads version 2 only, so a
// step to 1.x migrates nothing), keeping the file of before for the
// rollback. The state names the backup before either file is written, the
// backup is written only once and before the new file: a Job killed at any
// point leaves the file of before at one of the two names, and the next
// Job ends the same.
func (r *run) migrateConfig(ctx context.Context) error {
	to, err := versions.ParseRelease(r.rt.version)
	if err != nil || to.Major < 2 {
		return nil
	}
	old, err := r.files.ReadFile(ContainerdConfig)
	if errors.Is(err, fs.ErrNotExist) {
		r.log("runtime: no %s: containerd %s runs on its defaults, nothing to migrate", ContainerdConfig, r.rt.version)
		return nil
	}
	if err != nil {
		return failRollf("reading %s: %v", ContainerdConfig, err)
	}
	bin := layout.RuntimeRoot + "/containerd/" + r.rt.version + "/bin/containerd"
	res := r.onHost(ctx, bin, "--config", ContainerdConfig, "config", "migrate")
	if !res.OK() || len(bytes.TrimSpace(res.Stdout)) == 0 {
		return failRollf("%s --config %s config migrate failed (exit %d: %s): containerd %s's configuration not written", bin, ContainerdConfig, res.Code, firstLine(string(res.Stderr)), r.rt.version)
	}
	if bytes.Equal(res.Stdout, old) {
		r.log("runtime: %s is already in containerd %s's form (config migrate): kept", ContainerdConfig, r.rt.version)
		return nil
	}
	backup := containerdConfigBackup(r.rt.prev)
	if err := r.save(func(s *State) { s.RuntimeConfigBackup = backup }); err != nil {
		return dief("%v", err)
	}
	if _, err := r.files.Stat(backup); errors.Is(err, fs.ErrNotExist) {
		if err := copyFile(r.files, ContainerdConfig, backup); err != nil {
			return dief("keeping %s as %s: %v", ContainerdConfig, backup, err)
		}
	} else if err != nil {
		return dief("%s: %v", backup, err)
	}
	if err := put(r.files, ContainerdConfig, res.Stdout); err != nil {
		return dief("writing %s: %v", ContainerdConfig, err)
	}
	r.log("runtime: %s migrated by containerd %s's config migrate; the file of before kept as %s for a rollback", ContainerdConfig, r.rt.version, backup)
	return nil
}

// restoreConfig puts back the configuration migrateConfig kept, before
// the containerd of before starts on it again (1.7 cannot read the
// version 3 a 2.x step wrote). Idempotent; nothing to do when the step
// migrated nothing or was killed before the backup was written (the file
// of before is then still in place).
func (r *run) restoreConfig(context.Context) error {
	backup := r.st.RuntimeConfigBackup
	if backup == "" {
		return nil
	}
	data, err := r.files.ReadFile(backup)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return dief("the rollback failed: reading %s: %v (the next Job tries again)", backup, err)
	}
	if cur, err := r.files.ReadFile(ContainerdConfig); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	if err := put(r.files, ContainerdConfig, data); err != nil {
		return dief("the rollback failed: writing %s: %v (the next Job tries again)", ContainerdConfig, err)
	}
	r.log("rollback: %s put back from %s", ContainerdConfig, backup)
	return nil
}

// orphansOnRollback says why the runtime's rollback from a 2.x to a 1.x
// (or Debian's 1.6) would orphan containers, or "": containerd 1.x reaches
// a shim only through the task API v2, and a shim containerd 2.x started
// (during the gate: a container the kubelet started) serves v3 only
// (containerd/containerd#11720). The node then stays on the new
// containerd, its pods running; the operator decides.
func (r *run) orphansOnRollback() string {
	from, err := versions.ParseRelease(r.rt.version)
	if err != nil || from.Major < 2 {
		return ""
	}
	if prev, err := versions.ParseRelease(r.rt.prev); err == nil && prev.Major >= 2 {
		return ""
	}
	all, tasks, err := runtimeroad.TaskShims(r.files, runtimeroad.TaskState)
	if err != nil {
		return fmt.Sprintf("the tasks' bundles: %v", err)
	}
	if len(tasks) == 0 {
		// Said, not only done: the e2e reads that the rollback looked.
		r.log("rollback: looked for tasks on shims of the task API v3 in %s (containerd %s could not reach them): none of %d task(s)",
			runtimeroad.TaskState, r.rt.prev, len(all))
		return ""
	}
	return fmt.Sprintf("containerd %s cannot reach the %d task(s) containerd %s started (their shims serve the task API v3 only; containerd/containerd#11720: their containers would be orphaned): %s; containerd %s stays selected and its pods run on",
		r.rt.prev, len(tasks), r.rt.version, strings.Join(tasks, " "), r.rt.version)
}
