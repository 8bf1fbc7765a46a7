package roll

import "strings"

// gateVerdicts are how the gate's log line of a failed verdict reads
// (gate.go): the gate's reason, which the Job's last word does not repeat.
var gateVerdicts = []string{
	" not Ready with kubelet ",                      // the node never Ready with the new kubelet
	" not Ready again after ",                       // pods Ready at the picture
	" rejected or gone across the swap",             // judgeGone
	" restarted, recreated or lost across the swap", // kubelet-compat gate, lost
	" has not synced every pod of the picture",      // kubelet-compat gate, not synced
	"kubelet-compat gate failed (exit ",             // kubelet-compat gate, another exit
}

// maxEvidence is how many of the verdict's indented lines a reason keeps:
// a reason is a condition's message, not the log.
const maxEvidence = 3

// FailureReason is why a failed Job's roll failed, read from the log of a
// kc-roll that ended with status 1 (its last line of its own is then its
// last word; a killed kc-roll's last line is any line of its log): the last
// word (a refusal, a failed step and its rollback, a failed gate and its
// rollback) and, for a failed gate, the gate's verdict that came before the
// rollback with its first lines of evidence. It is "" when the log has no
// line of kc-roll's.
func FailureReason(log string) string {
	all := lines(log)
	last := -1
	for i := len(all) - 1; i >= 0; i-- {
		if strings.HasPrefix(all[i], Prog+": ") {
			last = i
			break
		}
	}
	if last < 0 {
		return ""
	}
	reason := strings.TrimPrefix(all[last], Prog+": ")
	if !strings.Contains(reason, "health gate failed") {
		return reason
	}
	for i := last - 1; i >= 0; i-- {
		verdict, ok := strings.CutPrefix(all[i], Prog+": gate: ")
		if !ok || !isGateVerdict(verdict) {
			continue
		}
		var evidence []string
		for _, l := range all[i+1:] {
			if !strings.HasPrefix(l, "  ") || len(evidence) == maxEvidence {
				break
			}
			evidence = append(evidence, strings.TrimSpace(l))
		}
		verdict = strings.TrimSuffix(verdict, ":")
		if len(evidence) > 0 {
			verdict += ": " + strings.Join(evidence, "; ")
		}
		return reason + " (gate: " + verdict + ")"
	}
	return reason
}

func isGateVerdict(line string) bool {
	for _, v := range gateVerdicts {
		if strings.Contains(line, v) {
			return true
		}
	}
	return false
}
