package report

import (
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	"gotest.tools/v3/assert"
)

func TestAssertPatched(t *testing.T) {
	tests := []struct {
		name    string
		run     Run
		want    bool
		verdict string
	}{
		{name: "nothing moved", run: Run{Pods: 3}, want: true, verdict: "pass"},
		{name: "a restart", run: Run{Pods: 3, Restarts: 1, Diff: snapshot.Diff{RestartedPods: []string{"ns/a"}}}, verdict: "FAIL: 1 restarts, 0 pods recreated, 0 pod UIDs changed, 0 init reruns: ns/a"},
		{name: "a static pod under another UID", run: Run{Pods: 3, Restarts: 1, RecreatedPods: 1, Diff: snapshot.Diff{UIDChanges: 1, RestartedPods: []string{"ns/a"}}},
			verdict: "FAIL: 1 restarts, 1 pods recreated, 1 pod UIDs changed, 0 init reruns: ns/a"},
		{name: "a UID changed, nothing else counted", run: Run{Pods: 3, Diff: snapshot.Diff{UIDChanges: 1}}, verdict: "FAIL: 0 restarts, 0 pods recreated, 1 pod UIDs changed"},
		{name: "rollback: nothing moved", run: Run{Pods: 3, Rollback: true, Step: "1.31.14 -> 1.30.14 (rollback)"}, want: true, verdict: "pass"},
		{name: "rollback: restarts exactly the pod setting a field the older kubelet does not know",
			run:  Run{Pods: 3, Rollback: true, Restarts: 1, Unrepresentable: []Expectation{{Pod: "ns/grace"}}, Diff: snapshot.Diff{RestartedPods: []string{"ns/grace"}}},
			want: true, verdict: "pass: restarts only ns/grace"},
		{name: "rollback: another pod restarted too",
			run:     Run{Pods: 3, Rollback: true, Restarts: 2, Unrepresentable: []Expectation{{Pod: "ns/grace"}}, Diff: snapshot.Diff{RestartedPods: []string{"ns/a", "ns/grace"}}},
			verdict: "FAIL: 2 restarts, 0 pods recreated, 0 pod UIDs changed, 0 init reruns: restarted ns/a ns/grace, expected only ns/grace"},
		{name: "rollback: the unrepresentable pod kept",
			run: Run{Pods: 3, Rollback: true, Unrepresentable: []Expectation{{Pod: "ns/grace"}}}, verdict: "FAIL: 0 restarts"},
		{name: "rollback: the refused pod gone, nothing else moved",
			run:  Run{Pods: 3, Rollback: true, Restarts: 1, Refused: []Expectation{{Pod: "ns/ra"}}, Diff: snapshot.Diff{RestartedPods: []string{"ns/ra"}, Changes: []snapshot.Change{{Pod: "ns/ra", Kind: snapshot.PodGone}}}},
			want: true, verdict: "pass: 0 restarts of the pods the target admits; lost as the target refuses them, as upstream (asserted): ns/ra"},
		{name: "rollback: the refused pod still runs",
			run:     Run{Pods: 3, Rollback: true, Refused: []Expectation{{Pod: "ns/ra"}}},
			verdict: "FAIL: ns/ra still running, though the target refuses it"},
		{name: "rollback: the refused pod gone, another restarted",
			run:     Run{Pods: 3, Rollback: true, Restarts: 2, Refused: []Expectation{{Pod: "ns/ra"}}, Diff: snapshot.Diff{RestartedPods: []string{"ns/a", "ns/ra"}, Changes: []snapshot.Change{{Pod: "ns/ra", Kind: snapshot.PodGone}}}},
			verdict: "FAIL: 2 restarts, 0 pods recreated, 0 pod UIDs changed, 0 init reruns: ns/a"},
		{name: "an init container ran again", run: Run{Pods: 3, Diff: snapshot.Diff{Changes: []snapshot.Change{{Kind: snapshot.InitRerun}}}}, verdict: "FAIL"},
		{name: "no pods at all", run: Run{}, verdict: "FAIL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := tt.run
			AssertPatched(&run)
			assert.Equal(t, run.Passed, tt.want)
			assert.Assert(t, strings.HasPrefix(run.Verdict, tt.verdict), run.Verdict)
		})
	}
}

func TestAssertControl(t *testing.T) {
	exp := []Expectation{{Pod: "ns/a"}, {Pod: "ns/b"}}
	refused := []Expectation{{Pod: "ns/ra"}}
	tests := []struct {
		name      string
		expected  []Expectation
		refused   []Expectation
		restarted []string
		gone      []string
		want      bool
		verdict   string
	}{
		{name: "restarts as upstream and loses the refused pod", expected: exp, refused: refused, restarted: []string{"ns/a", "ns/b", "ns/ra"}, gone: []string{"ns/ra"},
			want: true, verdict: "pass: restarts as upstream (2/2 expected pods, 3 pods in all); lost as the target refuses them (asserted): ns/ra"},
		{name: "keeps the refused pod", expected: exp, refused: refused, restarted: []string{"ns/a", "ns/b"}, verdict: "FAIL: the control did not lose ns/ra"},
		{name: "nothing else expected: the refused pod lost, nothing else", refused: refused, restarted: []string{"ns/ra"}, gone: []string{"ns/ra"}, want: true,
			verdict: "reported, not asserted: upstream restarts nothing on this step (seen: 0 restarts); lost as the target refuses them (asserted): ns/ra"},
		{name: "restarts what upstream restarts", expected: exp, restarted: []string{"ns/a", "ns/b"}, want: true, verdict: "pass: restarts as upstream (2/2"},
		{name: "misses one: the e2e cannot tell", expected: exp, restarted: []string{"ns/a"}, verdict: "FAIL: the control did not restart ns/b"},
		{name: "upstream restarts nothing on this step", restarted: nil, want: true, verdict: "reported, not asserted: upstream restarts nothing on this step"},
		{name: "nothing expected, something restarted: the expectations miss a change", restarted: []string{"ns/a"}, want: true,
			verdict: "reported, not asserted: no restart expected on this step, yet the control restarted 1 pods (ns/a)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := Run{Expected: tt.expected, Refused: tt.refused, Diff: snapshot.Diff{RestartedPods: tt.restarted}}
			for _, p := range tt.gone {
				run.Diff.Changes = append(run.Diff.Changes, snapshot.Change{Pod: p, Kind: snapshot.PodGone})
			}
			AssertControl(&run)
			assert.Equal(t, run.Passed, tt.want)
			assert.Assert(t, strings.HasPrefix(run.Verdict, tt.verdict), run.Verdict)
		})
	}
}
