package kind

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
)

func TestDiskNeed(t *testing.T) {
	const gib = int64(1) << 30
	archive := func(v string) (int64, error) {
		if v == "1.99.0" {
			return 0, fmt.Errorf("no images of %s", v)
		}
		return gib, nil
	}
	// What n archives of 1 GiB cost on 3 nodes, with the margin.
	perNode := float64(gib) * importFactor
	cost := func(n int64) int64 { return n*int64(perNode)*3 + diskMargin }
	chain := []Step{{From: "1.30.14", To: "1.31.14"}, {From: "1.31.14", To: "1.32.13"}, {From: "1.32.13", To: "1.33.13"}}
	for _, tc := range []struct {
		name string
		plan plan.Plan
		want int64
	}{
		{name: "the patched chain: its first version and three staged", plan: plan.Plan{Steps: chain}, want: cost(4)},
		{name: "controls are one step each: the chain is the largest", plan: plan.Plan{Steps: chain, Controls: true}, want: cost(4)},
		{name: "the controls alone", plan: plan.Plan{Steps: chain, Controls: true, SkipPatched: true}, want: cost(2)},
		// 1.28 -> 1.31 stages 1.29, 1.30 and 1.31 on every node.
		{name: "a skip-level step stages the control plane's path", plan: plan.Plan{Steps: []Step{{From: "1.28.15", To: "1.31.14"}}}, want: cost(4)},
	} {
		got, err := diskNeed(ScenarioOptions{Plan: tc.plan, Workers: 2}, archive)
		assert.NilError(t, err, tc.name)
		assert.Equal(t, got, tc.want, tc.name)
	}
	_, err := diskNeed(ScenarioOptions{Plan: plan.Plan{Steps: []Step{{From: "1.98.0", To: "1.99.0"}}}, Workers: 2}, archive)
	assert.Error(t, err, "no images of 1.99.0")
}
