package plan

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestParseRuntimeSteps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []RuntimeStep
		err  string
	}{
		{in: DefaultRuntimeSteps, want: []RuntimeStep{
			{Runtime{"containerd", "1.6.20"}, Runtime{"containerd", "1.7.35"}},
			{Runtime{"containerd", "1.7.35"}, Runtime{"containerd", "2.4.2"}}}},
		{in: " containerd@1.6.20 : containerd@2.4.2", want: []RuntimeStep{{Runtime{"containerd", "1.6.20"}, Runtime{"containerd", "2.4.2"}}}},
		{in: "containerd@1.6.20", err: "want from:to"},
		{in: "containerd@1.7.35:containerd@1.6.20", want: []RuntimeStep{{Runtime{"containerd", "1.7.35"}, Runtime{"containerd", "1.6.20"}}}},
		{in: "containerd@2.4.2+compat.1:containerd@2.3.7+compat.1", want: []RuntimeStep{{Runtime{"containerd", "2.4.2+compat.1"}, Runtime{"containerd", "2.3.7+compat.1"}}}},
		{in: "containerd@1.7.36+compat.1:containerd@1.7.35", want: []RuntimeStep{{Runtime{"containerd", "1.7.36+compat.1"}, Runtime{"containerd", "1.7.35"}}}},
		{in: "containerd@2.4.2:containerd@2.2.10", err: "is not a step back of the road"},
		{in: "containerd@2.0.14:containerd@1.7.35", err: "not from 2.x to 1.x"},
		{in: "containerd@1.7.35:containerd@1.7.35", err: "does not go up"},
		{in: "crio@1.30.0:crio@1.31.0", err: "only containerd"},
		{in: "containerd@1.7:containerd@2.4.2", err: "MAJOR.MINOR.PATCH"},
		{in: "1.7.35:containerd@2.4.2", err: "want name@version"},
		{in: "", err: "want from:to"},
	} {
		got, err := ParseRuntimeSteps(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		assert.NilError(t, err, tc.in)
		assert.DeepEqual(t, got, tc.want)
	}
	st, _ := ParseRuntimeSteps(DefaultRuntimeSteps)
	assert.Equal(t, st[1].String(), "containerd@1.7.35 -> containerd@2.4.2")
}

func TestCheckRuntimeKubelet(t *testing.T) {
	road, err := ParseRuntimeSteps(DefaultRuntimeSteps)
	assert.NilError(t, err)
	assert.NilError(t, CheckRuntimeKubelet(DefaultRuntimeKubelet, road))
	assert.NilError(t, CheckRuntimeKubelet("1.23.17", road))
	// 1.22 speaks v1alpha2 only: not on 2.x.
	assert.ErrorContains(t, CheckRuntimeKubelet("1.22.17", road), "containerd@1.7.35 -> containerd@2.4.2: kubelet 1.22 speaks only CRI v1alpha2")
	// 1.22 on the first step alone is served.
	assert.NilError(t, CheckRuntimeKubelet("1.22.17", road[:1]))
	assert.ErrorContains(t, CheckRuntimeKubelet("1.37", road), "want 1.<minor>.<patch>")
}

func TestRuntimeRuns(t *testing.T) {
	road, _ := ParseRuntimeSteps(DefaultRuntimeSteps)
	one := func(i int, patched bool) RuntimeRun { return RuntimeRun{Steps: road[i : i+1], Patched: patched} }
	// With controls, the negative control comes last: the patched kubelet
	// on the road's last step, swapped as a unit without KillMode=process
	// stops containerd (its shims killed with it).
	negative := RuntimeRun{Steps: road[1:], Patched: true, KillShims: true}
	// Then, on a runtime that kills the shims it cannot reach (2.4.2), a
	// pod's shim group split before the swap.
	split := RuntimeRun{Steps: road[1:], Patched: true, SplitShimGroup: true}
	assert.DeepEqual(t, RuntimeRuns(road, false, true, false), []RuntimeRun{one(0, true), one(0, false), one(1, true), one(1, false), negative, split})
	// 1.6.20 kills no shim as leaked: no split run on a road ending there.
	old, err := ParseRuntimeSteps("containerd@1.6.20:containerd@1.6.36")
	assert.NilError(t, err)
	assert.DeepEqual(t, RuntimeRuns(old, false, true, false), []RuntimeRun{{Steps: old, Patched: true}, {Steps: old}, {Steps: old, Patched: true, KillShims: true}})
	assert.DeepEqual(t, RuntimeRuns(road, false, false, false), []RuntimeRun{one(0, true), one(1, true)})
	// Without the patched kubelet, no negative control (it runs the patched one).
	assert.DeepEqual(t, RuntimeRuns(road[:1], false, true, true), []RuntimeRun{one(0, false)})
	assert.DeepEqual(t, RuntimeRuns(road, true, true, false), []RuntimeRun{{Steps: road, Patched: true}, {Steps: road}, negative, split})
	assert.DeepEqual(t, RuntimeRuns(road, true, false, false), []RuntimeRun{{Steps: road, Patched: true}})
	assert.NilError(t, CheckRuntimeChain(road))
	gap, _ := ParseRuntimeSteps("containerd@1.6.20:containerd@1.7.35,containerd@1.6.20:containerd@2.4.2")
	assert.ErrorContains(t, CheckRuntimeChain(gap), "does not start where containerd@1.6.20 -> containerd@1.7.35 ended")
	p, u := RuntimeVersions("1.37.2", true)
	assert.DeepEqual(t, p, []string{"1.37.2"})
	assert.DeepEqual(t, u, []string{"1.37.2"})
	_, u = RuntimeVersions("1.37.2", false)
	assert.Assert(t, u == nil)
}

// TestRuntimeOrder: -runtime-order takes one runtime step and a kubelet step
// up whose kubelets both runtimes serve; it runs every order patched, then
// as released.
func TestRuntimeOrder(t *testing.T) {
	step := []RuntimeStep{{From: Runtime{"containerd", "1.7.35"}, To: Runtime{"containerd", "2.4.2"}}}
	assert.NilError(t, CheckRuntimeOrder(Step{From: "1.36.5", To: "1.37.2"}, step))
	for _, tc := range []struct {
		kubelet Step
		steps   []RuntimeStep
		err     string
	}{
		{kubelet: Step{From: "1.36.5", To: "1.37.2"}, steps: append(step, step...), err: "-runtime-order measures one runtime step against the kubelet step, not 2"},
		{kubelet: Step{From: "1.37.2", To: "1.36.5"}, steps: step, err: "the kubelet step must go up"},
		{kubelet: Step{From: "1.21.14", To: "1.22.17"}, steps: step, err: "-runtime-order 1.21.14 -> 1.22.17: kubelet 1.21.14: runtime step containerd@1.7.35 -> containerd@2.4.2:"},
	} {
		assert.ErrorContains(t, CheckRuntimeOrder(tc.kubelet, tc.steps), tc.err)
	}
	assert.DeepEqual(t, OrderRuns(true, false), []OrderRun{
		{Order: RuntimeFirst, Patched: true}, {Order: RuntimeFirst},
		{Order: KubeletFirst, Patched: true}, {Order: KubeletFirst},
		{Order: OneWindow, Patched: true}, {Order: OneWindow}})
	assert.DeepEqual(t, OrderRuns(false, false), []OrderRun{{Order: RuntimeFirst, Patched: true}, {Order: KubeletFirst, Patched: true}, {Order: OneWindow, Patched: true}})
}
