package scenario

import (
	"testing"

	"gotest.tools/v3/assert"

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
	run := &report.Run{Pods: 10, Restarts: 0}
	judgeRuntimeRun(run, true, checks)
	assert.Assert(t, run.Passed, run.Verdict)
	run = &report.Run{Pods: 10, Restarts: 3, Diff: snapshot.Diff{Pods: 10, Restarts: 3, RestartedPods: []string{"ns/a"}}}
	judgeRuntimeRun(run, true, checks)
	assert.Assert(t, !run.Passed, run.Verdict)
	run = &report.Run{Pods: 10, Restarts: 3, Diff: snapshot.Diff{Pods: 10, Restarts: 3, RestartedPods: []string{"ns/a"}}}
	judgeRuntimeRun(run, false, checks)
	assert.Assert(t, run.Passed)
	assert.Equal(t, run.Verdict, "reported, not asserted (the control of a runtime step): 3 restarts (ns/a), 0 pods recreated, 0 pod UIDs changed; exec: pass; logs: FAIL")
}
