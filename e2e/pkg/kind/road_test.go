package kind

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// The road's runtime moves come right after the kubelet step that reached
// their kubelet (or the setup), each node in turn, each move checked as a
// step is.
func TestRoadActions(t *testing.T) {
	steps, moves, err := plan.ParseRoad("1.30.14,1.31.14,containerd@1.7.35,containerd@2.4.2,1.32.13", plan.KindRuntime)
	assert.NilError(t, err)
	r := &ClusterRun{Options: ScenarioOptions{Plan: plan.Plan{Steps: steps, RuntimeMoves: moves}, Workers: 2}, Steps: steps, Patched: true}
	actions, err := r.actions()
	assert.NilError(t, err)
	var names []string
	for _, a := range actions {
		if strings.Contains(a.Name, "runtime") || strings.HasPrefix(a.Name, "step ") {
			names = append(names, a.Name)
		}
	}
	move1 := "containerd@1.6.20 -> containerd@1.7.35"
	move2 := "containerd@1.7.35 -> containerd@2.4.2"
	want := []string{
		"step 1.30.14 -> 1.31.14: snapshot",
		"step 1.30.14 -> 1.31.14: workloads and the API unchanged",
		"runtime " + move1 + " under kubelet 1.31.14: stage its .debs on every node",
		"runtime " + move1 + " under kubelet 1.31.14: snapshot",
		"move the runtime of the control-plane node " + move1,
		"move the runtime of worker 1 " + move1,
		"move the runtime of worker 2 " + move1,
		"runtime " + move1 + " under kubelet 1.31.14: workloads and the API unchanged",
		"runtime " + move2 + " under kubelet 1.31.14: stage its .debs on every node",
		"runtime " + move2 + " under kubelet 1.31.14: snapshot",
		"move the runtime of the control-plane node " + move2,
		"move the runtime of worker 1 " + move2,
		"move the runtime of worker 2 " + move2,
		"runtime " + move2 + " under kubelet 1.31.14: workloads and the API unchanged",
		"step 1.31.14 -> 1.32.13: snapshot",
		"step 1.31.14 -> 1.32.13: workloads and the API unchanged",
	}
	assert.DeepEqual(t, names, want)
	// Without moves, the chain's actions are what they were.
	r.Options.RuntimeMoves = nil
	actions, err = r.actions()
	assert.NilError(t, err)
	for _, a := range actions {
		assert.Assert(t, !strings.Contains(a.Name, "runtime"), a.Name)
	}
}

func TestRoadMoveAtBirth(t *testing.T) {
	steps, moves, err := plan.ParseRoad("1.30.14,containerd@1.7.35,1.31.14", plan.KindRuntime)
	assert.NilError(t, err)
	r := &ClusterRun{Options: ScenarioOptions{Plan: plan.Plan{Steps: steps, RuntimeMoves: moves}, Workers: 1}, Steps: steps}
	actions, err := r.actions()
	assert.NilError(t, err)
	// The setup's last action, then the move, then the kubelet step.
	i := 0
	for ; i < len(actions) && !strings.HasPrefix(actions[i].Name, "runtime "); i++ {
	}
	assert.Assert(t, i < len(actions))
	assert.Equal(t, actions[i-1].Name, "wait until every pod is ready")
	assert.Equal(t, actions[i+4].Name, "runtime containerd@1.6.20 -> containerd@1.7.35 under kubelet 1.30.14: workloads and the API unchanged")
	assert.Equal(t, actions[i+5].Name, "step 1.30.14 -> 1.31.14: snapshot")
}

func TestRuntimeDebs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"runtime-unversioned_1.0.0-1_all.deb", "runtime-containerd-1.7.35_1.7.35-1_amd64.deb",
		"runtime-runc-1.4.0_1.4.0-1_amd64.deb", "runtime-runc-1.5.3_1.5.3-1_amd64.deb", "runtime-runc-1.10.0_1.10.0-1_amd64.deb", "runtime-cni-1.10.0_1.10.0-1_amd64.deb"} {
		assert.NilError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}
	debs, runc, err := RuntimeDebs(dir, plan.Runtime{Name: "containerd", Version: "1.7.35"})
	assert.NilError(t, err)
	assert.Equal(t, runc, "1.10.0", "by number, not as strings")
	var names []string
	for _, d := range debs {
		names = append(names, filepath.Base(d))
	}
	assert.DeepEqual(t, names, []string{"runtime-unversioned_1.0.0-1_all.deb", "runtime-containerd-1.7.35_1.7.35-1_amd64.deb", "runtime-runc-1.10.0_1.10.0-1_amd64.deb"})
	_, _, err = RuntimeDebs(dir, plan.Runtime{Name: "containerd", Version: "2.4.2"})
	assert.ErrorContains(t, err, "no runtime-containerd-2.4.2_*.deb in "+dir+" (make runtime-deb RUNTIME_COMPONENTS=containerd@2.4.2,runc@1.5.3)")
}

func TestRuntimeVersionIs(t *testing.T) {
	out := "Version:  0.1.0\nRuntimeName:  containerd\nRuntimeVersion:  v1.7.35\nRuntimeApiVersion:  v1\n"
	assert.Assert(t, RuntimeVersionIs(out, "1.7.35"))
	assert.Assert(t, !RuntimeVersionIs(out, "1.7.3"))
	assert.Assert(t, !RuntimeVersionIs("RuntimeVersion:  1.6.20~ds1\n", "1.6.20"))
	assert.Assert(t, !RuntimeVersionIs("", "1.7.35"))
}

func TestJudgeMove(t *testing.T) {
	kept := report.Run{Pods: 5, Containers: 6}
	judgeMove(&kept, true)
	assert.Assert(t, kept.Passed, kept.Verdict)
	lost := report.Run{Pods: 5, Containers: 6, Restarts: 1, Diff: snapshot.Diff{RestartedPods: []string{"kc-e2e/web-1"}}}
	judgeMove(&lost, true)
	assert.Assert(t, !lost.Passed, lost.Verdict)
	control := lost
	judgeMove(&control, false)
	assert.Assert(t, control.Passed)
	assert.Assert(t, strings.HasPrefix(control.Verdict, "reported, not asserted"), control.Verdict)
	assert.Assert(t, strings.Contains(control.Verdict, "1 restarts (kc-e2e/web-1)"), control.Verdict)
}
