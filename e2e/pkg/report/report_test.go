package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/snapshot"
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
	r := &Report{Mode: "ci", Provider: "kind", StartedAt: start, Runs: []Run{
		run(Unpatched, "kc-control-plane", 6, 6, 4, 36.2), run(Unpatched, "kc-worker", 12, 13, 7, 13.3), run(Unpatched, "kc-worker2", 6, 6, 0, 19.7),
		cp, run(Patched, "kc-worker", 12, 13, 0, 13.2), run(Patched, "kc-worker2", 6, 6, 0, 13.5),
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
