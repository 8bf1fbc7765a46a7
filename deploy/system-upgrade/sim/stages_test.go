package sim

import (
	"bytes"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"sigs.k8s.io/yaml"
)

func parseStages(t *testing.T, y []byte) map[string]stage {
	t.Helper()
	out := map[string]stage{}
	for _, doc := range bytes.Split(y, []byte("---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var s stage
		assert.NilError(t, yaml.UnmarshalStrict(doc, &s))
		out[s.Metadata.Name] = s
	}
	return out
}

func selectorOf(s stage) map[string]expr {
	out := map[string]expr{}
	for _, e := range s.Spec.Selector.MatchExpressions {
		out[e.Key] = e
	}
	return out
}

func TestStages(t *testing.T) {
	times := StageTimes{Worker: 4500 * time.Millisecond, ControlPlane: 23600 * time.Millisecond, ControlPlanePlan: "cp"}
	for _, tc := range []struct {
		name  string
		fail  []string
		names []string
	}{
		{name: "no failure", names: []string{"node-initialize", "pod-create", "pod-init-container-running", "pod-init-container-completed",
			"pod-ready", "pod-delete", "job-control-plane", "job-worker"}},
		{name: "two failing", fail: []string{"w1", "w2"}, names: []string{"node-initialize", "pod-create", "pod-init-container-running",
			"pod-init-container-completed", "pod-ready", "pod-delete", "job-control-plane", "job-worker", "job-worker-gate-failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y, err := Stages(times, tc.fail)
			assert.NilError(t, err)
			got := parseStages(t, y)
			assert.Equal(t, len(got), len(tc.names))
			for _, n := range tc.names {
				s, ok := got[n]
				assert.Assert(t, ok, "stage %s missing", n)
				assert.Equal(t, s.Kind, "Stage")
				assert.Equal(t, s.APIVersion, "kwok.x-k8s.io/v1alpha1")
			}
			cp := got["job-control-plane"]
			assert.Equal(t, cp.Spec.Delay.DurationMilliseconds, int64(23600))
			assert.DeepEqual(t, selectorOf(cp)[`.metadata.labels["upgrade.cattle.io/plan"]`], expr{Key: `.metadata.labels["upgrade.cattle.io/plan"]`, Operator: "In", Values: []string{"cp"}})
			w := got["job-worker"]
			assert.Equal(t, w.Spec.Delay.DurationMilliseconds, int64(4500))
			assert.Equal(t, selectorOf(w)[`.metadata.labels["upgrade.cattle.io/plan"]`].Operator, "NotIn")
			assert.Assert(t, bytes.Contains([]byte(w.Spec.Next.StatusTemplate), []byte("phase: Succeeded")))
			if len(tc.fail) == 0 {
				_, onNode := selectorOf(w)[".spec.nodeName"]
				assert.Assert(t, !onNode)
				return
			}
			assert.DeepEqual(t, selectorOf(w)[".spec.nodeName"], expr{Key: ".spec.nodeName", Operator: "NotIn", Values: tc.fail})
			f := got["job-worker-gate-failed"]
			assert.DeepEqual(t, selectorOf(f)[".spec.nodeName"], expr{Key: ".spec.nodeName", Operator: "In", Values: tc.fail})
			assert.Equal(t, f.Spec.Delay.DurationMilliseconds, int64(4500))
			assert.Assert(t, bytes.Contains([]byte(f.Spec.Next.StatusTemplate), []byte("phase: Failed")))
			assert.Assert(t, bytes.Contains([]byte(f.Spec.Next.StatusTemplate), []byte("exitCode: 1")))
		})
	}
}

func TestStagesErrors(t *testing.T) {
	for _, tc := range []StageTimes{
		{ControlPlane: time.Second, ControlPlanePlan: "cp"},
		{Worker: time.Second, ControlPlanePlan: "cp"},
		{Worker: time.Second, ControlPlane: time.Second},
	} {
		_, err := Stages(tc, nil)
		assert.Error(t, err, "stages: want both durations above 0 and the control-plane Plan's name")
	}
}
