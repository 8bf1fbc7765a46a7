package kind

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
)

func TestDiskNeed(t *testing.T) {
	const gib = int64(1) << 30
	perNode := func(v string) (int64, error) {
		if v == "1.99.0" {
			return 0, fmt.Errorf("no images of %s", v)
		}
		return gib, nil
	}
	// What n versions of 1 GiB a node cost on 3 nodes, with the margin.
	cost := func(n int64) int64 { return n*gib*3 + diskMargin }
	chain := []Step{{From: "1.30.14", To: "1.31.14"}, {From: "1.31.14", To: "1.32.13"}, {From: "1.32.13", To: "1.33.13"}}
	for _, tc := range []struct {
		name string
		plan plan.Plan
		want int64
	}{
		// Before each step after the first, the images of the step before's From go.
		{name: "the patched chain: two versions at its peak", plan: plan.Plan{Steps: chain}, want: cost(2)},
		{name: "controls are one step each: as large as the chain", plan: plan.Plan{Steps: chain, Controls: true}, want: cost(2)},
		// After a skip-level step nothing goes: 1.28, 1.29, 1.30, 1.31, then 1.32.
		{name: "a chain after a skip-level step", plan: plan.Plan{Steps: []Step{{From: "1.28.15", To: "1.31.14"}, {From: "1.31.14", To: "1.32.13"}}}, want: cost(5)},
		{name: "the controls alone", plan: plan.Plan{Steps: chain, Controls: true, SkipPatched: true}, want: cost(2)},
		// 1.28 -> 1.31 stages 1.29, 1.30 and 1.31 on every node.
		{name: "a skip-level step stages the control plane's path", plan: plan.Plan{Steps: []Step{{From: "1.28.15", To: "1.31.14"}}}, want: cost(4)},
	} {
		got, err := diskNeed(ScenarioOptions{Plan: tc.plan, Workers: 2}, perNode)
		assert.NilError(t, err, tc.name)
		assert.Equal(t, got, tc.want, tc.name)
	}
	_, err := diskNeed(ScenarioOptions{Plan: plan.Plan{Steps: []Step{{From: "1.98.0", To: "1.99.0"}}}, Workers: 2}, perNode)
	assert.Error(t, err, "no images of 1.99.0")
}

func TestLeftBehindBefore(t *testing.T) {
	steps := []Step{{From: "1.28.15", To: "1.31.14"}, {From: "1.31.14", To: "1.32.13"}, {From: "1.32.13", To: "1.33.13"}}
	for _, tc := range []struct {
		i    int
		want Step
		ok   bool
	}{
		{i: 0},
		{i: 1}, // after a skip-level step: its path's versions stay
		{i: 2, want: steps[1], ok: true},
	} {
		got, ok := leftBehindBefore(steps, tc.i)
		assert.Equal(t, ok, tc.ok, "step %d", tc.i)
		assert.Equal(t, got, tc.want, "step %d", tc.i)
	}
	r := &ClusterRun{Options: ScenarioOptions{Workers: 1}, Steps: steps[1:], Patched: true}
	actions, err := r.actions()
	assert.NilError(t, err)
	var names []string
	for _, a := range actions {
		names = append(names, a.Name)
	}
	i := indexOf(names, "step 1.32.13 -> 1.33.13: snapshot")
	assert.Equal(t, names[i-2], "remove the images of 1.31.14 that 1.32.13 no longer lists from every node (not pause)")
	assert.Equal(t, names[i-1], "remove the packages of 1.31.14 from every node (dpkg -r: no longer selected)")
	assert.Equal(t, indexOf(names, "remove the packages of 1.28.15 from every node (dpkg -r: no longer selected)"), -1)
	assert.Equal(t, indexOf(names, "remove the images of 1.28.15 that 1.31.14 no longer lists from every node (not pause)"), -1)
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// A version costs a node its images (imported: importFactor) and its
// packages (installed binaries and the staged .debs).
func TestVersionCost(t *testing.T) {
	out := t.TempDir()
	write := func(path string, size int) {
		assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		assert.NilError(t, os.WriteFile(path, make([]byte, size), 0o644))
	}
	write(filepath.Join(out, "kind", "images", "1.31.14.tar"), 1000)
	for _, b := range []string{"kubelet", "kubeadm", "kubectl"} {
		write(filepath.Join(out, "1.31.14", b), 100)
	}
	debs := nodeimage.PackageDir(out, "patched")
	write(filepath.Join(debs, "kubernetes-1.31.14-node_1.31.14-1_amd64.deb"), 10)
	write(filepath.Join(debs, "kubernetes-1.31.14-kubeadm_1.31.14-1_amd64.deb"), 10)
	write(filepath.Join(debs, "kubernetes-1.31.14-client_1.31.14-1_amd64.deb"), 10)
	write(filepath.Join(debs, "kubernetes-1.32.13-node_1.32.13-1_amd64.deb"), 999) // another version's
	got, err := versionCost(out, "1.31.14")
	assert.NilError(t, err)
	assert.Equal(t, got, int64(1000*importFactor)+300+30)
	_, err = versionCost(out, "1.32.13")
	assert.ErrorContains(t, err, "1.32.13.tar")
}
