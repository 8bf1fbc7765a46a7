// Package statuscheck asserts what `kubelet-compat status -o json` says
// right after a patched kubelet kept every container: its decision (the
// library's Decider on the file it reads, with the running kubelet's hash)
// must be keep for every legacy container, as the kubelet's was. Both
// providers' scenarios use it.
package statuscheck

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
)

// Check reads status's JSON output (out; runErr is how the command ended).
// wantLegacy says the step must have legacy containers (their hash
// differs between the two minors); without it, none is also right.
func Check(name string, out []byte, runErr error, wantLegacy bool) report.Check {
	c := report.Check{Name: name}
	if runErr != nil {
		c.Detail = fmt.Sprintf("status: %v: %s", runErr, report.LastLine(string(out)))
		return c
	}
	var st struct {
		Legacy []struct {
			Pod, Container, Decision string
			Keep                     *bool
		} `json:"legacyContainers"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		c.Detail = fmt.Sprintf("status -o json: %v", err)
		return c
	}
	var disagree []string
	for _, l := range st.Legacy {
		if strings.HasPrefix(l.Decision, "init container") {
			continue // not hash-checked, by the kubelet either
		}
		if l.Keep == nil || !*l.Keep {
			disagree = append(disagree, fmt.Sprintf("%s/%s: %s", l.Pod, l.Container, l.Decision))
		}
	}
	c.Passed = (len(st.Legacy) > 0 || !wantLegacy) && len(disagree) == 0
	c.Detail = fmt.Sprintf("%d legacy containers, status keeps %d", len(st.Legacy), len(st.Legacy)-len(disagree))
	if len(disagree) > 0 {
		c.Detail += "; not kept by status although the kubelet kept them: " + strings.Join(disagree, "; ")
	}
	return c
}
