package readiness

import (
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	v1 "k8s.io/api/core/v1"
)

var t0 = time.Unix(1000, 0)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestWindows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []Sample
		want    map[string]Window
	}{
		{name: "no samples, no windows", want: map[string]Window{}},
		{
			name: "kept, flapping twice, gone from the map and never back",
			samples: []Sample{
				{T: at(0), Ready: map[string]bool{"kept": true, "flap": true, "gone": true}},
				{T: at(1), Ready: map[string]bool{"kept": true, "flap": false, "gone": true}},
				{T: at(2), Ready: map[string]bool{"kept": true, "flap": true}},
				{T: at(3), Ready: map[string]bool{"kept": true, "flap": false}},
				{T: at(7), Ready: map[string]bool{"kept": true, "flap": true}},
				{T: at(9), Ready: map[string]bool{"kept": true, "flap": true}},
			},
			want: map[string]Window{
				"kept": {ReadyAtEnd: true},
				"flap": {NotReadySeconds: 5, ReadyAtEnd: true, Drops: 2, LongestSeconds: 4, FirstDrop: at(1)},
				// gone at 2 and never back: one drop, until the end
				"gone": {NotReadySeconds: 7, Drops: 1, LongestSeconds: 7, FirstDrop: at(2)},
			},
		},
		{
			// The API server is down from 1 to 4 (its upgrade): the gap
			// counts as the state seen at 1.
			name: "no samples while the API server is down",
			samples: []Sample{
				{T: at(0), Ready: map[string]bool{"kept": true, "flap": true, "failed": true}},
				{T: at(1), Ready: map[string]bool{"kept": true, "flap": false, "failed": false}},
				{T: at(4), Ready: map[string]bool{"kept": true, "flap": true, "failed": false}},
				{T: at(5), Ready: map[string]bool{"kept": true, "flap": true}},
			},
			want: map[string]Window{
				"kept":   {ReadyAtEnd: true},
				"flap":   {NotReadySeconds: 3, ReadyAtEnd: true, Drops: 1, LongestSeconds: 3, FirstDrop: at(1)},
				"failed": {NotReadySeconds: 4, Drops: 1, LongestSeconds: 4, FirstDrop: at(1)},
			},
		},
		{
			// A pod that appears later was not Ready before: a gap, no
			// drop.
			name: "a pod that appears later",
			samples: []Sample{
				{T: at(0), Ready: map[string]bool{}},
				{T: at(2), Ready: map[string]bool{"new": true}},
			},
			want: map[string]Window{"new": {NotReadySeconds: 2, ReadyAtEnd: true, LongestSeconds: 2}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, Windows(tc.samples), tc.want)
		})
	}
}

// TestWindowsOfServing: the same arithmetic on the endpoints' map.
func TestWindowsOfServing(t *testing.T) {
	samples := []Sample{
		{T: at(0), Ready: map[string]bool{"a": true}, Serving: map[string]bool{"a": true}},
		{T: at(1), Ready: map[string]bool{"a": true}, Serving: map[string]bool{"a": false}},
		{T: at(3), Ready: map[string]bool{"a": true}, Serving: map[string]bool{"a": true}},
	}
	assert.DeepEqual(t, WindowsOf(samples, ServingOf)["a"], Window{NotReadySeconds: 2, ReadyAtEnd: true, Drops: 1, LongestSeconds: 2, FirstDrop: at(1)})
	assert.DeepEqual(t, Windows(samples)["a"], Window{ReadyAtEnd: true})
}

func TestPodReady(t *testing.T) {
	cond := func(t v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: s}
	}
	for _, tc := range []struct {
		name  string
		conds []v1.PodCondition
		want  bool
	}{
		{name: "Ready True", conds: []v1.PodCondition{cond(v1.PodScheduled, v1.ConditionTrue), cond(v1.PodReady, v1.ConditionTrue)}, want: true},
		{name: "Ready False", conds: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse)}},
		{name: "Ready Unknown", conds: []v1.PodCondition{cond(v1.PodReady, v1.ConditionUnknown)}},
		{name: "no Ready condition", conds: []v1.PodCondition{cond(v1.ContainersReady, v1.ConditionTrue)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, PodReady(&v1.Pod{Status: v1.PodStatus{Conditions: tc.conds}}), tc.want)
		})
	}
}

func TestFigures(t *testing.T) {
	samples := []Sample{
		{T: at(0), Ready: map[string]bool{"kept": true, "flap": true}, Serving: map[string]bool{"kept": true, "flap": true}},
		{T: at(5), Ready: map[string]bool{"kept": true, "flap": false}, Serving: map[string]bool{"kept": true, "flap": true}},
		{T: at(6), Ready: map[string]bool{"kept": true, "flap": false}, Serving: map[string]bool{"kept": true, "flap": false}},
		{T: at(9), Ready: map[string]bool{"kept": true, "flap": true}, Serving: map[string]bool{"kept": true, "flap": true}},
	}
	// the kubelet started at 2
	f := NewFigures(samples, at(2))
	for _, tc := range []struct {
		pod  string
		want report.PodReadiness
	}{
		{pod: "kept", want: report.PodReadiness{Pod: "kept", FirstNotReadySeconds: -1, ReadyAtEnd: true, EndpointReadyAtEnd: true}},
		{pod: "flap", want: report.PodReadiness{Pod: "flap", Transitions: 1, EndpointRemovals: 1, LongestGapSeconds: 4, LongestEndpointGapSeconds: 3,
			FirstNotReadySeconds: 3, ReadyAtEnd: true, EndpointReadyAtEnd: true}},
		// never in a sample: never Ready, no endpoint
		{pod: "unseen", want: report.PodReadiness{Pod: "unseen", FirstNotReadySeconds: -1}},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			assert.DeepEqual(t, f.Pod(tc.pod), tc.want)
		})
	}
}

func TestNotKept(t *testing.T) {
	kept := report.PodReadiness{Pod: "a", FirstNotReadySeconds: -1, ReadyAtEnd: true, EndpointReadyAtEnd: true}
	for _, tc := range []struct {
		name string
		pod  func(p report.PodReadiness) report.PodReadiness
		want string // "" when kept
	}{
		{name: "kept", pod: func(p report.PodReadiness) report.PodReadiness { return p }},
		{name: "a transition", pod: func(p report.PodReadiness) report.PodReadiness { p.Transitions = 1; return p }, want: "a: 1 Ready->NotReady, 0 endpoint removals"},
		{name: "an endpoint removal", pod: func(p report.PodReadiness) report.PodReadiness { p.EndpointRemovals = 2; return p }, want: "a: 0 Ready->NotReady, 2 endpoint removals"},
		// never Ready in the window: no transition, but not kept either
		{name: "not Ready at the end", pod: func(p report.PodReadiness) report.PodReadiness { p.ReadyAtEnd = false; return p }, want: "a: 0 Ready->NotReady, 0 endpoint removals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := NotKept([]report.PodReadiness{tc.pod(kept)})
			if tc.want == "" {
				assert.Assert(t, is.Len(bad, 0))
				return
			}
			assert.DeepEqual(t, bad, []string{tc.want})
		})
	}
}
