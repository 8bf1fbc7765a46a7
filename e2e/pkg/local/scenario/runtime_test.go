package scenario

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
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
	split := plan.RuntimeRun{Patched: true, SplitShimGroup: true}
	const namedDetail = "1 of 23 running containers away from their shim's address: sb: its shim is pid 1, but unix:///s reaches pid 2; kubelet-compat cgroups agrees (exit 2)"
	named := []report.Check{{Detail: namedDetail}}
	lost := func() *report.Run {
		return &report.Run{Pods: 10, Restarts: 3, Diff: snapshot.Diff{Pods: 10, Restarts: 3, RestartedPods: []string{"ns/a"}}}
	}
	for _, tc := range []struct {
		name   string
		run    *report.Run
		r      plan.RuntimeRun
		checks []report.Check
		// splitNamed: the shim-group check named containers, the CLI too.
		splitNamed bool
		passed     bool
		verdict    string
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
		{name: "split shim group: named before the swap and lost", run: lost(), r: split, checks: named, splitNamed: true, passed: true,
			verdict: "negative control (one pod's shim group split before the swap): the check before the swap named it (" + namedDetail + ") and the zero-restart assertion failed, as both must: 3 restarts (ns/a), 0 pods recreated, 0 pod UIDs changed"},
		{name: "split shim group: lost but not named", run: lost(), r: split, checks: []report.Check{{Passed: true, Detail: "none away from its shim's address"}},
			verdict: "negative control (one pod's shim group split before the swap): the check before the swap did not name it: none away from its shim's address; 3 restarts (ns/a), 0 pods recreated, 0 pod UIDs changed"},
		{name: "split shim group: the check failed to read", run: lost(), r: split, checks: []report.Check{{Detail: "the shim's unix sockets: permission denied"}}},
		{name: "split shim group: the CLI did not name it", run: lost(), r: split,
			checks: []report.Check{{Detail: "1 of 23 running containers away from their shim's address: sb; kubelet-compat cgroups disagrees (exit 0: no running container is out of the cgroups runc gave it)"}}},
		{name: "split shim group: named, nothing lost", run: &report.Run{Pods: 10}, r: split, checks: named, splitNamed: true,
			verdict: "negative control (one pod's shim group split before the swap): the check named it, but the zero-restart assertion passed: the new containerd kept the stranded shim: 0 restarts (), 0 pods recreated, 0 pod UIDs changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := checks
			if tc.checks != nil {
				cs = tc.checks
			}
			judgeRuntimeRun(tc.run, tc.r, cs, tc.splitNamed)
			assert.Equal(t, tc.run.Passed, tc.passed, tc.run.Verdict)
			if tc.verdict != "" {
				assert.Equal(t, tc.run.Verdict, tc.verdict)
			}
		})
	}
}

func TestSplitVictim(t *testing.T) {
	snap := &snapshot.Snapshot{
		Sandboxes: []snapshot.Sandbox{
			{Pod: "kc-e2e/hostnet-001", ID: "s1", Ready: true, HostNetwork: true},
			{Pod: "kc-e2e/multi-002", ID: "s2", Ready: true},
			{Pod: "kc-e2e/web-000", ID: "s0", Ready: true},
			{Pod: "kc-e2e/web-008", ID: "s8", Ready: true},
		},
		Containers: []snapshot.Container{
			{Pod: "kc-e2e/hostnet-001", Name: "httpd", ID: "c1", SandboxID: "s1", State: "RUNNING"},
			{Pod: "kc-e2e/multi-002", Name: "a", ID: "c2a", SandboxID: "s2", State: "RUNNING"},
			{Pod: "kc-e2e/multi-002", Name: "b", ID: "c2b", SandboxID: "s2", State: "RUNNING"},
			{Pod: "kc-e2e/web-000", Name: "httpd", ID: "c0", SandboxID: "s0", State: "RUNNING"},
			{Pod: "kc-e2e/web-008", Name: "httpd", ID: "c8", SandboxID: "s8", State: "RUNNING"},
		},
	}
	// Not on the host's network, exactly one container: web-000 (by name).
	c, ok := splitVictim(snap)
	assert.Assert(t, ok)
	assert.Equal(t, c.ID, "c0")
	_, ok = splitVictim(&snapshot.Snapshot{Sandboxes: snap.Sandboxes[:2], Containers: snap.Containers[:3]})
	assert.Assert(t, !ok, "hostNetwork and multi-container pods only")
}
