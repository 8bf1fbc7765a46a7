package scenario

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/snapshot"
)

func TestOldContainers(t *testing.T) {
	before := &snapshot.Snapshot{Containers: []snapshot.Container{
		{Pod: "ns/a", Name: "c", ID: "1", State: "RUNNING"},
		{Pod: "ns/b", Name: "c", ID: "2", State: "RUNNING"},
		{Pod: "ns/pinned", Name: "c", ID: "3", State: "RUNNING"},
		{Pod: "ns/d", Name: "init", ID: "4", State: "EXITED"},
	}}
	after := &snapshot.Snapshot{Containers: []snapshot.Container{
		{Pod: "ns/a", Name: "c", ID: "1", State: "RUNNING"},
		{Pod: "ns/b", Name: "c", ID: "5", State: "RUNNING"},
		{Pod: "ns/pinned", Name: "c", ID: "3", State: "RUNNING"},
		{Pod: "ns/d", Name: "init", ID: "4", State: "RUNNING"},
	}}
	got := oldContainers(before, after, "ns/pinned")
	assert.Equal(t, len(got), 1)
	assert.Equal(t, got[0].ID, "1")
}

func TestJudgeRuntimeRun(t *testing.T) {
	checks := []report.Check{{Name: "exec", Passed: true}, {Name: "logs", Passed: false}}
	patched, control, negative := plan.RuntimeRun{Patched: true}, plan.RuntimeRun{}, plan.RuntimeRun{Patched: true, KillShims: true}
	lost := func() *report.Run {
		return &report.Run{Pods: 10, Restarts: 3, Diff: snapshot.Diff{Pods: 10, Restarts: 3, RestartedPods: []string{"ns/a"}}}
	}
	for _, tc := range []struct {
		name    string
		run     *report.Run
		r       plan.RuntimeRun
		passed  bool
		verdict string
	}{
		{name: "patched, nothing lost", run: &report.Run{Pods: 10}, r: patched, passed: true},
		{name: "patched, restarts", run: lost(), r: patched},
		{name: "control: reported", run: lost(), r: control, passed: true,
			verdict: "reported, not asserted (the control of a runtime step): 3 restarts (ns/a), 0 pods recreated, 0 pod UIDs changed; exec: pass; logs: FAIL"},
		{name: "negative control: the assertion fails, as it must", run: lost(), r: negative, passed: true,
			verdict: "negative control (the shims killed with containerd): the zero-restart assertion failed, as it must: 3 restarts (ns/a), 0 pods recreated, 0 pod UIDs changed"},
		{name: "negative control: nothing lost is a failure", run: &report.Run{Pods: 10}, r: negative,
			verdict: "negative control (the shims killed with containerd): the zero-restart assertion passed, so it cannot tell a loss: 0 restarts (), 0 pods recreated, 0 pod UIDs changed"},
		{name: "negative control: no pods", run: &report.Run{}, r: negative,
			verdict: "negative control (the shims killed with containerd): no pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judgeRuntimeRun(tc.run, tc.r, checks)
			assert.Equal(t, tc.run.Passed, tc.passed, tc.run.Verdict)
			if tc.verdict != "" {
				assert.Equal(t, tc.run.Verdict, tc.verdict)
			}
		})
	}
}
