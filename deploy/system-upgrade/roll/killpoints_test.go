package roll

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// killScenario is a roll the kill points are taken in.
type killScenario struct {
	name string
	tc   rollCase
	// want is the verdict of the roll unkilled: passed or rolled-back;
	// mixed: a kill may turn it into the other one (the fake gate's
	// verdicts change from call to call), each proven.
	want  Phase
	mixed bool
}

const oldConfig = "the 1.30 configuration\n"

// containerdConfig17 is containerd's configuration of 1.7 (version 2).
const containerdConfig17 = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n"

func killScenarios() []killScenario {
	restarted := func(s string) string {
		return strings.Replace(s, "          \"c-pinned-uid-app\"\n", "          \"c-pinned-uid-app-2\"\n", 1)
	}
	const preflight = "preflight-1.30-1.31.table.golden"
	worker := map[string]string{"var/lib/kubelet/config.yaml": oldConfig}
	controlPlane := map[string]string{"var/lib/kubelet/config.yaml": oldConfig,
		"etc/kubernetes/manifests/kube-apiserver.yaml": "image: registry.k8s.io/kube-apiserver:v1.30.14\n",
		"etc/kubernetes/manifests/etcd.yaml":           "image: registry.k8s.io/etcd:3.5.15-0\n"}
	etcd36 := map[string]string{"var/lib/kubelet/config.yaml": oldConfig, "etc/kubernetes/manifests/etcd.yaml": "image: registry.k8s.io/etcd:3.6.8-0\n"}
	runtime := []string{"KC_RUNTIME=containerd@1.7.35"}
	// A step into 2.0 from 1.7: containerd's configuration migrated to
	// version 3, which 1.7 cannot read, and put back by a rollback.
	runtime2 := []string{"KC_RUNTIME=containerd@2.0.14"}
	installed2 := "containerd 1.7.35\ncontainerd 2.0.14\nrunc 1.5.3\n"
	worker2 := map[string]string{"var/lib/kubelet/config.yaml": oldConfig, "etc/containerd/config.toml": containerdConfig17}
	return []killScenario{
		{name: "worker, passes", want: PhasePassed, tc: rollCase{preflight: preflight, host: worker}},
		{name: "worker, the gate fails", want: PhaseRolledBack, tc: rollCase{preflight: preflight, host: worker, after: restarted, gate: gateLost}},
		{name: "first control-plane node, RPM, the gate fails", want: PhaseRolledBack, tc: rollCase{preflight: preflight, format: "rpm",
			env: []string{"KC_ROLE=control-plane"}, host: controlPlane, after: restarted, gate: gateLost}},
		{name: "control-plane node, the etcd bridge, passes", want: PhasePassed, tc: rollCase{preflight: preflight, host: etcd36,
			env: []string{"KC_ROLE=control-plane", "KUBEADM_ETCD=registry.k8s.io/etcd:3.7.0-0", "ETCD_IMAGE=registry.k8s.io/etcd:3.7.0-0",
				"KC_ETCD_BRIDGE_IMAGE=registry.k8s.io/etcd:3.6.16-0"}}},
		{name: "a newer kubernetes-unversioned drops stage2's selection, passes", want: PhasePassed, mixed: true,
			tc: rollCase{preflight: preflight, host: worker, unversioned: "1.0.0-3", env: []string{"DPKG_DROPS=1"}}},
		{name: "runtime step, then the kubelet's, passes", want: PhasePassed, tc: rollCase{preflight: preflight, host: worker, env: runtime}},
		{name: "runtime step, its gate fails", want: PhaseRolledBack, tc: rollCase{preflight: preflight, host: worker, env: runtime,
			afterRuntime: restarted, gate: gateLost}},
		{name: "runtime step passes, the kubelet's gate fails", want: PhaseRolledBack, mixed: true, tc: rollCase{preflight: preflight,
			host: worker, env: runtime, after: restarted, gate: "0 passed\n" + gateLost}},
		{name: "runtime step into 2.0 (the configuration migrated), then the kubelet's, passes", want: PhasePassed,
			tc: rollCase{preflight: preflight, host: worker2, env: runtime2, containerd: "1.7.35", runtimeInstalled: installed2}},
		{name: "runtime step into 2.0, its gate fails (the configuration put back)", want: PhaseRolledBack,
			tc: rollCase{preflight: preflight, host: worker2, env: runtime2, containerd: "1.7.35", runtimeInstalled: installed2, afterRuntime: restarted, gate: gateLost}},
		{name: "an unfinished roll to another version, rolled back first, then this one passes", want: PhasePassed,
			tc: rollCase{preflight: preflight, host: worker, stage1Before: "1.31.13", stage2Before: "1.31.13",
				state: "target=1.31.13\nprevious=1.30.14\nstage1=1.30.14\nphase=swapping\nswapped_at=2026-12-03T10:00:00Z\n"}},
	}
}

// TestKillPoints kills the engine right after every action of a roll,
// and right after every call it makes on the node (a panic: the Job's pod
// lost; and its context ended: the Job told to stop), then runs it again
// as SUC's next Job: it must end in a verdict its checks proved (passed
// after a gate of the swap, or rolled back whole), and never repeat what
// the engine never repeats (the swap, the runtime switch, a rollback's
// restart, the picture after the swap, the backup after kubeadm, the etcd
// bridge once done).
func TestKillPoints(t *testing.T) {
	for _, sc := range killScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			f, env := newCaseNode(t, sc.tc)
			var trace []string
			clean := runJob(t, f, env, nil, func(a string) { trace = append(trace, a) })
			assert.Assert(t, clean.killed == nil)
			checkProven(t, f, sc, clean, true)
			checkOnce(t, f, "")
			calls := len(f.calls)
			t.Logf("%d actions, %d calls: %s", len(trace), calls, strings.Join(trace, ", "))
			for i, a := range trace {
				t.Run(fmt.Sprintf("after action %d (%s)", i+1, a), func(t *testing.T) { killAndRerun(t, sc, killAfterAction, i+1) })
			}
			for n := 1; n <= calls; n++ {
				t.Run(fmt.Sprintf("after call %d", n), func(t *testing.T) { killAndRerun(t, sc, killAfterCall, n) })
				t.Run(fmt.Sprintf("context ended after call %d", n), func(t *testing.T) { killAndRerun(t, sc, cancelAfterCall, n) })
			}
		})
	}
}

type killKind int

const (
	killAfterAction killKind = iota
	killAfterCall
	cancelAfterCall
)

func killAndRerun(t *testing.T, sc killScenario, kind killKind, n int) {
	f, env := newCaseNode(t, sc.tc)
	var hook func(string)
	switch kind {
	case killAfterAction:
		seen := 0
		hook = func(a string) {
			if seen++; seen == n {
				panic(killed{"action " + a})
			}
		}
	case killAfterCall:
		f.dieCallN = n
	case cancelAfterCall:
		f.dieCallN, f.cancel = n, func() {}
	}
	first := runJob(t, f, env, nil, hook)
	killedAfter := ""
	switch kind {
	case cancelAfterCall:
		if !f.cancelled {
			t.Skip("the roll made fewer calls")
		}
		killedAfter = f.calls[n-1]
		assert.Check(t, errors.Is(first.err, context.Canceled), "the first Job, its context ended, returned %v:\n%s", first.err, first.out)
		assert.Check(t, is.Len(f.callsAfterCancel, 0), "calls on the node after the context ended")
		state, _ := os.ReadFile(f.hostFile(StateFile))
		assert.Check(t, is.Equal(string(state), f.stateAtCancel), "the state changed after the context ended")
	default:
		if first.killed == nil {
			t.Skip("the roll ended before the kill point")
		}
		killedAfter = first.killed.after
	}
	t.Logf("first Job, killed after %s:\n%s", killedAfter, first.out)
	f.dieCallN, f.cancel, f.cancelled = 0, nil, false
	second := runJob(t, f, env, nil, nil)
	t.Logf("the next Job:\n%s", second.out)
	assert.Assert(t, second.killed == nil)
	checkProven(t, f, sc, second, false)
	checkOnce(t, f, killedAfter)
}

// checkProven checks that the roll ended in a verdict its checks proved:
// passed with stage2 and stage1 on the target after a gate of the swap
// that passed; or rolled back with stage2, stage1, the kubelet's
// configuration and the manifests as before the roll (and containerd,
// unless the runtime step passed its own gate).
func checkProven(t *testing.T, f *fakeNode, sc killScenario, j jobRun, unkilled bool) {
	t.Helper()
	data, err := os.ReadFile(f.hostFile(StateFile))
	assert.NilError(t, err, "no roll's state on the node:\n%s", j.out)
	st := ParseState(string(data))
	if unkilled || !sc.mixed {
		assert.Check(t, is.Equal(st.Phase, sc.want), "the verdict:\n%s", j.out)
	}
	switch st.Phase {
	case PhasePassed:
		assert.Check(t, j.err, "a passed roll's Job failed")
		assert.Check(t, is.Equal(f.stage2, targetVersion))
		assert.Check(t, is.Equal(f.stage1, targetVersion))
		assert.Check(t, gatedAfter(f, "kubernetes-select --restart-kubelet stage2 "+targetVersion, "--step kubelet"), "passed without a passed gate after the swap: %q", f.calls)
		if st.Runtime != "" {
			rt, _ := runtimeVersion(st.Runtime)
			assert.Check(t, is.Equal(f.containerd, rt))
			assert.Check(t, gatedAfter(f, "runtime-select --restart-containerd containerd "+rt, "--step runtime"), "no passed gate after the runtime switch: %q", f.calls)
			if before, ok := sc.tc.host["etc/containerd/config.toml"]; ok && strings.HasPrefix(rt, "2.") {
				cfg, _ := os.ReadFile(f.hostFile(ContainerdConfig))
				backup, _ := os.ReadFile(f.hostFile(containerdConfigBackup(f.containerdInitial)))
				assert.Check(t, is.Equal(string(cfg), "version = 3\n"+strings.TrimPrefix(before, "version = 2\n")), "containerd's configuration after a step into 2.x")
				assert.Check(t, is.Equal(string(backup), before), "the configuration of before, kept for a rollback")
			}
		}
	case PhaseRolledBack:
		var failure *Failure
		assert.Check(t, errors.As(j.err, &failure), "a rolled-back roll's Job ended %v", j.err)
		assert.Check(t, is.Equal(f.stage2, prevVersion))
		assert.Check(t, is.Equal(f.stage1, prevVersion))
		wantContainerd := f.containerdInitial
		if st.RuntimePassedAt != "" {
			wantContainerd, _ = runtimeVersion(st.Runtime)
		}
		assert.Check(t, is.Equal(f.containerd, wantContainerd))
		assert.Check(t, is.Equal(f.containerdRuns, wantContainerd))
		for name, want := range sc.tc.host {
			got, err := os.ReadFile(f.hostFile(name))
			assert.Check(t, err)
			assert.Check(t, is.Equal(string(got), want), "%s after the rollback", name)
		}
		for _, name := range []string{"/var/lib/kubelet/kubeadm-flags.env", ManifestsDir + "/kube-scheduler.yaml"} {
			_, err := os.Stat(f.hostFile(name))
			assert.Check(t, os.IsNotExist(err), "%s, which the roll wrote, is still there", name)
		}
		_, err := os.Stat(f.hostFile(gateFailedMarker(targetVersion)))
		gateFailed := st.Reason == "the health gate failed" || st.Reason == "the runtime step's health gate failed"
		assert.Check(t, is.Equal(err == nil, gateFailed), "the marker of a failed gate (%s)", st.Reason)
	default:
		t.Errorf("the roll ended in %q, not a verdict:\n%s", st.Phase, j.out)
	}
	// The backup holds what was there before kubeadm, whenever it is there.
	if b, err := os.ReadFile(f.hostFile(BackupDir + "/kubelet/config.yaml")); err == nil {
		assert.Check(t, is.Equal(string(b), oldConfig), "the backup")
	}
}

// gatedAfter says whether a gate of step passed after the last call swap.
func gatedAfter(f *fakeNode, swap, step string) bool {
	last := -1
	for i, c := range f.calls {
		if c == swap {
			last = i
		}
	}
	for _, g := range f.gateLog {
		if g.call > last && strings.Contains(f.calls[g.call], step) && g.code == 0 {
			return true
		}
	}
	return false
}

// checkOnce checks that what the engine never does twice was done at most
// once over both Jobs: the kubelet's swap and the rollback's, the runtime
// switch and its rollback's, the picture after a swap; the etcd bridge is
// run again only by a Job after one killed right after it.
func checkOnce(t *testing.T, f *fakeNode, killedAfter string) {
	t.Helper()
	count := map[string]int{}
	for _, c := range f.calls {
		count[c]++
	}
	for _, once := range []string{
		"kubernetes-select --restart-kubelet stage2 " + targetVersion,
		"kubernetes-select --restart-kubelet stage2 " + prevVersion,
		"runtime-select --restart-containerd containerd 1.7.35",
		"runtime-select --restart-containerd containerd system",
	} {
		assert.Check(t, count[once] <= 1, "%q %d times: %q", once, count[once], f.calls)
	}
	bridges := 0
	for c, n := range count {
		if strings.HasPrefix(c, "kubelet-compat etcd-bridge ") {
			bridges += n
		}
	}
	if strings.HasPrefix(killedAfter, "kubelet-compat etcd-bridge ") {
		assert.Check(t, bridges <= 2, "etcd-bridge %d times", bridges)
	} else {
		assert.Check(t, bridges <= 1, "etcd-bridge %d times", bridges)
	}
	// No picture between a swap and the gate that judges it: the picture
	// is what the gate compares the swap with.
	for i, c := range f.calls {
		step := ""
		switch c {
		case "kubernetes-select --restart-kubelet stage2 " + targetVersion:
			step = "--step kubelet"
		case "runtime-select --restart-containerd containerd 1.7.35":
			step = "--step runtime"
		default:
			continue
		}
		for _, d := range f.calls[i+1:] {
			if strings.HasPrefix(d, "kubelet-compat gate ") && strings.Contains(d, step) {
				break
			}
			assert.Check(t, !strings.HasPrefix(d, "kubelet-compat picture "), "a picture after the swap %q, before its gate: %q", c, f.calls)
		}
	}
}
