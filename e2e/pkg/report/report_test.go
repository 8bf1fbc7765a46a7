package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
)

func sample() *Report {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	r := &Report{Mode: "ci", Provider: "local", StartedAt: start, Runs: []Run{
		{Step: "1.20.15 -> 1.21.14", From: "1.20.15", To: "1.21.14", Variant: Unpatched, Pods: 10, Containers: 11, Restarts: 7, RecreatedPods: 6, WindowSeconds: 12.34,
			Expected: []Expectation{{Pod: "kc-e2e/web-000-node", Reason: "static pod without metadata.uid"}},
			Diff:     snapshot.Diff{Pods: 10, Containers: 11, Restarts: 7, RecreatedPods: 6}, Passed: true, Verdict: "restarts as upstream (7 expected pods)"},
		{Step: "1.20.15 -> 1.21.14", From: "1.20.15", To: "1.21.14", Variant: Patched, Pods: 10, Containers: 11, WindowSeconds: 3.21, KeptLogLines: 1,
			Diff: snapshot.Diff{Pods: 10, Containers: 11}, Passed: true, Verdict: "0 restarts"},
		{Step: "1.20.15 -> 1.21.14", From: "1.20.15", To: "1.21.14", Variant: Patched, Faults: []string{"containerd restart", "SIGKILL mid-sync"}, Pods: 10, Containers: 11, WindowSeconds: 9.5,
			Passed: true, Verdict: "0 restarts"},
	}, Checks: []Check{{Name: "sweep keeps the file while legacy containers run", Passed: true, Detail: "exit 2"}}}
	r.Finish(start.Add(321*time.Second), nil)
	return r
}

func TestTableGolden(t *testing.T) {
	var sb strings.Builder
	sample().Table(&sb)
	golden.Assert(t, sb.String(), "table.golden")
}

// The local provider's readiness table (API mode): no node column.
func TestReadinessTableGolden(t *testing.T) {
	r := &Report{Runs: []Run{{Step: "1.20.15 -> 1.21.14", Variant: Unpatched, Readiness: []ReadyGroup{
		{Group: "corpus", PeriodSeconds: 5, Pods: []PodReadiness{{Pod: "web-000", Transitions: 1, LongestGapSeconds: 8.4}}},
		{Group: "ready-p10", PeriodSeconds: 10, Endpoints: true, Pods: []PodReadiness{
			{Pod: "ready-p10-0", Transitions: 1, EndpointRemovals: 1, LongestGapSeconds: 6, LongestEndpointGapSeconds: 6.1},
			{Pod: "ready-p10-1", Transitions: 1, EndpointRemovals: 1, LongestGapSeconds: 5.2, LongestEndpointGapSeconds: 5.3}}},
		{Group: "probefail-p10", PeriodSeconds: 10, Failing: true, Endpoints: true, Pods: []PodReadiness{
			{Pod: "probefail-p10", Transitions: 1, EndpointRemovals: 1, LongestGapSeconds: 20, LongestEndpointGapSeconds: 20}}},
	}}}}
	var sb strings.Builder
	r.readinessTable(&sb)
	golden.Assert(t, sb.String(), "table-readiness.golden")
}

func TestFinish(t *testing.T) {
	r := sample()
	assert.Assert(t, r.Passed)
	r.Checks = append(r.Checks, Check{Name: "x"})
	r.Finish(r.StartedAt, nil)
	assert.Assert(t, !r.Passed)
	empty := &Report{}
	empty.Finish(time.Now(), nil)
	assert.Assert(t, !empty.Passed, "a report without runs must not pass")
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	r := sample()
	assert.NilError(t, r.Write(dir))

	js, err := os.ReadFile(filepath.Join(dir, "report.json"))
	assert.NilError(t, err)
	var back Report
	assert.NilError(t, json.Unmarshal(js, &back))
	assert.DeepEqual(t, back.Runs, r.Runs)
	assert.Equal(t, back.Passed, r.Passed)

	txt, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	assert.NilError(t, err)
	var table strings.Builder
	r.Table(&table)
	assert.Equal(t, string(txt), table.String())
}

// A multi-node provider reports one run per node: the summary sums them
// per step and variant, the runs table names each node, and the pods that
// restarted by design are listed apart.
func TestTablePerNodeGolden(t *testing.T) {
	start := time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC)
	run := func(variant, node string, pods, containers, restarts int, window float64) Run {
		return Run{Step: "1.20.15 -> 1.21.14", From: "1.20.15", To: "1.21.14", Variant: variant, Node: node,
			Pods: pods, Containers: containers, Restarts: restarts, WindowSeconds: window, Passed: true, Verdict: "pass"}
	}
	cp := run(Patched, "kc-control-plane", 6, 6, 0, 13.3)
	cp.ByDesign = []Expectation{{Pod: "kube-system/kube-proxy-x", Reason: "kubeadm upgrade apply updated the DaemonSet"}}
	// The readiness watchers' groups of each node's swap: the table names
	// the node.
	web := func(transitions int, gap float64) ReadyGroup {
		return ReadyGroup{Group: "deployment/web", PeriodSeconds: 2, Endpoints: true, Pods: []PodReadiness{
			{Pod: "web-1", Transitions: transitions, EndpointRemovals: transitions, LongestGapSeconds: gap, LongestEndpointGapSeconds: gap, ReadyAtEnd: true, EndpointReadyAtEnd: true}}}
	}
	agent := ReadyGroup{Group: "daemonset/agent", PeriodSeconds: 2, Pods: []PodReadiness{{Pod: "agent-x", ReadyAtEnd: true}}}
	uw2 := run(Unpatched, "kc-worker2", 6, 6, 0, 19.7)
	uw2.Readiness = []ReadyGroup{web(1, 1.8), agent}
	pw2 := run(Patched, "kc-worker2", 6, 6, 0, 13.5)
	pw2.Readiness = []ReadyGroup{web(0, 0), agent}
	r := &Report{Mode: "ci", Provider: "kind", StartedAt: start, Runs: []Run{
		run(Unpatched, "kc-control-plane", 6, 6, 4, 36.2), run(Unpatched, "kc-worker", 12, 13, 7, 13.3), uw2,
		cp, run(Patched, "kc-worker", 12, 13, 0, 13.2), pw2,
	}}
	r.Finish(start.Add(999*time.Second), nil)
	var sb strings.Builder
	r.Table(&sb)
	golden.Assert(t, sb.String(), "table-per-node.golden")
}

// A rollback step says so in every table (its Step carries "(rollback)",
// from plan.Step.String), and a patched run that recreated static pods
// under other UIDs says how many.
func TestTableRollbackGolden(t *testing.T) {
	start := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	step := "1.31.14 -> 1.30.14 (rollback)"
	control := Run{Step: step, From: "1.31.14", To: "1.30.14", Rollback: true, Variant: Unpatched, Pods: 10, Containers: 11, Restarts: 11, RecreatedPods: 7, WindowSeconds: 20.5,
		Expected: []Expectation{{Pod: "kc-e2e/web-000-node", Reason: "static pod without metadata.uid: rollback below 1.31"}},
		Diff:     snapshot.Diff{Pods: 10, Containers: 11, Restarts: 11, RecreatedPods: 7, UIDChanges: 7, RestartedPods: []string{"kc-e2e/web-000-node"}}}
	AssertControl(&control)
	patched := Run{Step: step, From: "1.31.14", To: "1.30.14", Rollback: true, Variant: Patched, Pods: 10, Containers: 11, Restarts: 11, RecreatedPods: 7, WindowSeconds: 19.0,
		Diff: snapshot.Diff{Pods: 10, Containers: 11, Restarts: 11, RecreatedPods: 7, UIDChanges: 7, RestartedPods: []string{"kc-e2e/web-000-node"}}}
	AssertPatched(&patched)
	r := &Report{Mode: "steps", Provider: "local", StartedAt: start, Runs: []Run{control, patched}}
	r.Finish(start.Add(200*time.Second), nil)
	var sb strings.Builder
	r.Table(&sb)
	golden.Assert(t, sb.String(), "table-rollback.golden")
}
