package plan

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestParseRoad(t *testing.T) {
	c := func(v string) Runtime { return Runtime{"containerd", v} }
	for _, tc := range []struct {
		name      string
		in        string
		wantSteps []Step
		wantMoves []RuntimeMove
		err       string
	}{
		{name: "kubelet steps and runtime moves between them",
			in:        "1.30.14,1.31.14,containerd@1.7.35,1.32.13,containerd@2.4.2,1.33.13",
			wantSteps: []Step{{"1.30.14", "1.31.14"}, {"1.31.14", "1.32.13"}, {"1.32.13", "1.33.13"}},
			wantMoves: []RuntimeMove{{At: "1.31.14", Step: RuntimeStep{c("1.6.20"), c("1.7.35")}}, {At: "1.32.13", Step: RuntimeStep{c("1.7.35"), c("2.4.2")}}}},
		{name: "two moves under one kubelet, and one after the last step",
			in:        " 1.23.17 , 1.24.17, containerd@1.7.35, containerd@2.4.2",
			wantSteps: []Step{{"1.23.17", "1.24.17"}},
			wantMoves: []RuntimeMove{{At: "1.24.17", Step: RuntimeStep{c("1.6.20"), c("1.7.35")}}, {At: "1.24.17", Step: RuntimeStep{c("1.7.35"), c("2.4.2")}}}},
		{name: "a move before any kubelet", in: "containerd@1.7.35,1.30.14,1.31.14", err: "starts with a kubelet version"},
		{name: "one kubelet", in: "1.30.14,containerd@1.7.35", err: "at least two kubelet versions"},
		{name: "a move that does not go up", in: "1.30.14,containerd@1.7.35,1.31.14,containerd@1.7.35", err: "does not go up"},
		{name: "a move down", in: "1.30.14,1.31.14,containerd@1.6.0", err: "does not go up"},
		{name: "not containerd", in: "1.30.14,1.31.14,crio@1.31.0", err: "only containerd"},
		{name: "a bad kubelet version", in: "1.30,1.31.14", err: "versions must be 1.<minor>.<patch>"},
		{name: "a kubelet the runtime it moves under does not serve", in: "1.21.14,containerd@2.4.2,1.22.17", err: "kubelet 1.21 speaks only CRI v1alpha2"},
		{name: "a kubelet step onto a runtime that does not serve it", in: "1.22.17,containerd@1.7.35,1.23.17,1.24.17", wantSteps: []Step{{"1.22.17", "1.23.17"}, {"1.23.17", "1.24.17"}},
			wantMoves: []RuntimeMove{{At: "1.22.17", Step: RuntimeStep{c("1.6.20"), c("1.7.35")}}}},
		{name: "a runtime outside the matrix", in: "1.30.14,1.31.14,containerd@3.0.0", err: "not in pkg/runtimecompat's matrix"},
		{name: "empty", in: "", err: "the road is empty"},
	} {
		steps, moves, err := ParseRoad(tc.in, KindRuntime)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		assert.NilError(t, err, tc.name)
		assert.DeepEqual(t, steps, tc.wantSteps)
		assert.DeepEqual(t, moves, tc.wantMoves)
	}
}

func TestParseRoadRefusesAKubeletItsRuntimeCannotServe(t *testing.T) {
	// 1.6.20 serves 1.18 .. 1.37; 2.4.2 does not serve a v1alpha2-only kubelet.
	_, _, err := ParseRoad("1.21.14,1.22.17,containerd@2.4.2", KindRuntime)
	assert.ErrorContains(t, err, "road: containerd@2.4.2 under kubelet 1.22.17: kubelet 1.22 speaks only CRI v1alpha2")
	// The move is fine under 1.23, but the road then goes down to no kubelet it refuses.
	_, _, err = ParseRoad("1.22.17,1.23.17,containerd@2.4.2,1.24.17", KindRuntime)
	assert.NilError(t, err)
}

func TestRuntimeMoveString(t *testing.T) {
	m := RuntimeMove{At: "1.31.14", Step: RuntimeStep{Runtime{"containerd", "1.6.20"}, Runtime{"containerd", "1.7.35"}}}
	assert.Equal(t, m.String(), "containerd@1.6.20 -> containerd@1.7.35 under kubelet 1.31.14")
}

func TestRoadRuns(t *testing.T) {
	steps := []Step{{"1.30.14", "1.31.14"}, {"1.31.14", "1.32.13"}}
	assert.DeepEqual(t, RoadRuns(steps, true, false), []Run{{Steps: steps}, {Steps: steps, Patched: true}})
	assert.DeepEqual(t, RoadRuns(steps, false, false), []Run{{Steps: steps, Patched: true}})
	assert.DeepEqual(t, RoadRuns(steps, true, true), []Run{{Steps: steps}})
}

func TestCheckRoadControls(t *testing.T) {
	steps, moves, err := ParseRoad("1.30.14,containerd@1.7.35,1.31.14", KindRuntime)
	assert.NilError(t, err)
	p := Plan{Steps: steps, RuntimeMoves: moves, Controls: true}
	assert.ErrorContains(t, CheckRoadControls(p), "comes before the first kubelet step")
	p.Controls = false
	assert.NilError(t, CheckRoadControls(p))
	steps, moves, err = ParseRoad("1.30.14,1.31.14,containerd@1.7.35", KindRuntime)
	assert.NilError(t, err)
	assert.NilError(t, CheckRoadControls(Plan{Steps: steps, RuntimeMoves: moves, Controls: true}))
}
