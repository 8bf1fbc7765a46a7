package roll

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestFailureReason reads the reason of every failing roll case's Job log
// (the engine's real output on the fake node): the last word, and for a
// gate that failed in this Job the gate's verdict and evidence.
func TestFailureReason(t *testing.T) {
	gates := 0
	for _, tc := range rollCases() {
		if tc.wantErr == "" || tc.die != "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			f, env := newCaseNode(t, tc)
			j := runJob(t, f, env, tc.args, nil)
			assert.Assert(t, j.err != nil, "the case did not fail:\n%s", j.out)
			reason := FailureReason(j.out)
			assert.Check(t, is.Contains(reason, tc.wantErr))
			assert.Check(t, strings.HasPrefix(reason, j.err.Error()), "the reason %q does not start with the last word %q", reason, j.err.Error())
			if strings.Contains(j.err.Error(), "health gate failed: node ") {
				gates++
				assert.Check(t, is.Contains(reason, " (gate: "), "no verdict in the reason of a failed gate; the log:\n%s", j.out)
			}
		})
	}
	assert.Check(t, gates >= 5, "only %d failed gates among the cases", gates)
}

func TestFailureReasonOfALog(t *testing.T) {
	for _, tc := range []struct{ name, log, want string }{
		{"no last word of kc-roll's", "exec /bin/kc-roll: no such file or directory\n", ""},
		{"a refusal", Prog + ": node node-1 (worker): 1.30.14 -> 1.31.14\n" + Prog + ": kubelet-compat preflight refused this step: x: nothing changed\n",
			"kubelet-compat preflight refused this step: x: nothing changed"},
		{"a failed gate, its verdict and at most three lines of evidence",
			Prog + ": gate: node node-1 Ready with kubelet v1.31.14 (3s)\n" +
				Prog + ": gate: pods of node-1 restarted, recreated or lost across the swap (kubelet-compat gate):\n" +
				"  lost: a\n  lost: b\n  lost: c\n  lost: d\n" +
				Prog + ": rollback: stage2 1.30.14\n" +
				Prog + ": the health gate failed: node node-1 is back on 1.30.14; the Job fails, which stops the Plan\n",
			"the health gate failed: node node-1 is back on 1.30.14; the Job fails, which stops the Plan (gate: pods of node-1 restarted, recreated or lost across the swap (kubelet-compat gate): lost: a; lost: b; lost: c)"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Check(t, is.Equal(FailureReason(tc.log), tc.want)) })
	}
}
