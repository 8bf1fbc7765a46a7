package scenario

// Node declared features (KEP-5328, issue 32 item 6): a target kubelet
// whose feature gates leave a node feature off refuses the pods that need
// it, patched or not. The corpus's restartall pod (a restartPolicyRules
// action RestartAllContainers) is refused by a target with
// RestartAllContainersOnContainerExits=false (-to-feature-gates). Before
// the swap `kubelet-compat preflight` is asked with the node's flags and
// the target's; after it, the pods it names in its declared-features check
// must be exactly those the e2e saw lost.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	osexec "os/exec"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// preflightDeclaredCheck is preflight's CHECK for these pods
// (cmd/kubelet-compat/internal/preflight/declared.go).
const preflightDeclaredCheck = "declared-features"

// refusals is what one swap's target refuses: expected by the corpus, and
// predicted by preflight (asked: preflight ran).
type refusals struct {
	step      Step
	variant   string
	expected  []corpus.Expectation
	asked     bool
	predicted []string
	// restarts are the pods preflight says this variant's kubelet
	// restarts or recreates (its unpatched or patched column).
	restarts []string
	// preflightErr is preflight's failure (its output), if any.
	preflightErr string
}

// minKubeletMinor is the oldest kubelet minor of steps (0: none).
func minKubeletMinor(steps []Step) int {
	m := 0
	for _, st := range steps {
		for _, v := range []string{st.From, st.To} {
			if n := kubelet.Minor(v); m == 0 || n < m {
				m = n
			}
		}
	}
	return m
}

// hasRestartAll says whether the corpus holds a pod that needs a declared
// node feature.
func (s *Scenario) hasRestartAll() bool {
	for _, p := range s.corpus.Pods {
		if p.Kind == corpus.KindRestartAll {
			return true
		}
	}
	return false
}

// refusalsBefore runs, while kubelet st.From still runs, preflight with
// the target's flags (when the corpus has such a pod), and marks the pods
// the target refuses as not waited for.
func (s *Scenario) refusalsBefore(ctx context.Context, st Step, patched bool) *refusals {
	r := &refusals{step: st, variant: report.Unpatched}
	if patched {
		r.variant = report.Patched
	}
	to := kubelet.Minor(st.To)
	gates := kubelet.MergeFeatureGates(s.featureGates(to), s.opts.ToFeatureGates)
	r.expected = s.corpus.TargetRefuses(to, gates)
	if s.hasRestartAll() && !s.opts.API {
		r.asked = true
		out, err := s.preflight(ctx, st, patched)
		if err == nil {
			r.predicted, err = parsePreflightRefusals(out)
		}
		if err == nil {
			r.restarts, err = parsePreflightRestarts(out, patched)
		}
		if err != nil {
			r.preflightErr = fmt.Sprintf("%v: %.600s", err, out)
		}
		s.logf("preflight %s (%s), %s: names %v %s", st, r.variant, preflightDeclaredCheck, r.predicted, r.preflightErr)
	}
	for _, e := range r.expected {
		if s.refused == nil {
			s.refused = map[string]bool{}
		}
		s.refused[e.Pod] = true
		s.logf("swap %s (%s): the target refuses %s (%s): not waited for; it must be lost", st, r.variant, e.Pod, e.Reason)
	}
	return r
}

// preflight runs `kubelet-compat preflight --node` against the running
// kubelet's node, with the flags the target kubelet will get.
func (s *Scenario) preflight(ctx context.Context, st Step, patched bool) (string, error) {
	saved := s.asTarget
	s.asTarget = true
	cfg, err := s.kubeletConfig(st.To, patched)
	s.asTarget = saved
	if err != nil {
		return "", err
	}
	args := []string{"preflight", "--from", "v" + st.From, "--to", "v" + st.To, "--node", "-o", "json",
		"--manifest-dir", s.manifestDir(), "--root-dir", s.kubeletDir(), "--runtime-endpoint", s.node.RuntimeEndpoint(),
		"--node-name", s.opts.NodeName, "--target-flags", shellQuote(cfg.Plan().Args),
		"--kubelet-config", filepath.Join(s.opts.Root, "no-kubelet-config.yaml")}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(cctx, s.cli(), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

// shellQuote is args as one string of single-quoted words (preflight's
// --target-flags).
func shellQuote(args []string) string {
	q := make([]string, 0, len(args))
	for _, a := range args {
		q = append(q, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	return strings.Join(q, " ")
}

// parsePreflightRefusals is the pods preflight's JSON report names in its
// declared-features check, sorted.
func parsePreflightRefusals(out string) ([]string, error) {
	var rep struct {
		Killers []struct {
			Pod   string `json:"pod"`
			Check string `json:"check"`
		} `json:"podKillers"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return nil, fmt.Errorf("preflight's JSON: %w", err)
	}
	var pods []string
	for _, k := range rep.Killers {
		if k.Check == preflightDeclaredCheck {
			pods = append(pods, k.Pod)
		}
	}
	sort.Strings(pods)
	return pods, nil
}

// parsePreflightRestarts is the pods preflight's JSON report says the
// patched (or the unpatched) kubelet restarts a container of or recreates
// (a verdict other than keep), sorted.
func parsePreflightRestarts(out string, patched bool) ([]string, error) {
	var rep struct {
		Rows []struct {
			Pod       string `json:"pod"`
			Unpatched string `json:"unpatched"`
			Patched   string `json:"patched"`
		} `json:"containers"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return nil, fmt.Errorf("preflight's JSON: %w", err)
	}
	seen := map[string]bool{}
	var pods []string
	for _, row := range rep.Rows {
		verdict := row.Unpatched
		if patched {
			verdict = row.Patched
		}
		if verdict != "keep" && !seen[row.Pod] {
			seen[row.Pod] = true
			pods = append(pods, row.Pod)
		}
	}
	sort.Strings(pods)
	return pods, nil
}

// changedPods are the pods of which the swap restarted or replaced
// anything, lost, or recreated, sorted.
func changedPods(d snapshot.Diff) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range d.Changes {
		if !seen[c.Pod] {
			seen[c.Pod] = true
			out = append(out, c.Pod)
		}
	}
	sort.Strings(out)
	return out
}

// refusalsAfter puts the expected refusals into the run (its assertions
// hold both variants to losing them) and checks preflight's prediction
// against the pods the swap lost (no ready sandbox after it).
func (s *Scenario) refusalsAfter(r *refusals, run *report.Run) {
	for _, e := range r.expected {
		run.Refused = append(run.Refused, report.Expectation{Pod: e.Pod, Reason: e.Reason})
	}
	if !r.asked {
		return
	}
	lost := lostPods(run.Diff)
	c := report.Check{Name: fmt.Sprintf("%s %s: preflight's %s names exactly the pods lost", r.step, r.variant, preflightDeclaredCheck)}
	c.Passed = r.preflightErr == "" && strings.Join(r.predicted, " ") == strings.Join(lost, " ")
	c.Detail = fmt.Sprintf("preflight named [%s], the swap lost [%s]", strings.Join(r.predicted, " "), strings.Join(lost, " "))
	if r.preflightErr != "" {
		c.Detail += "; preflight failed: " + r.preflightErr
	}
	c.Detail += s.refusalLogLines(r.expected)
	s.check(c)

	// Every pod preflight says this kubelet restarts or recreates (or
	// refuses), and no other, is one the swap changed.
	predicted := append(append([]string(nil), r.restarts...), r.predicted...)
	sort.Strings(predicted)
	predicted = slices.Compact(predicted)
	changed := changedPods(run.Diff)
	pc := report.Check{Name: fmt.Sprintf("%s %s: preflight names exactly the pods the swap restarted, recreated or lost", r.step, r.variant)}
	pc.Passed = r.preflightErr == "" && strings.Join(predicted, " ") == strings.Join(changed, " ")
	pc.Detail = fmt.Sprintf("preflight named [%s], the swap changed [%s]", strings.Join(predicted, " "), strings.Join(changed, " "))
	if r.preflightErr != "" {
		pc.Detail += "; preflight failed: " + r.preflightErr
	}
	s.check(pc)
}

// lostPods are the pods without a ready sandbox after the swap, sorted.
func lostPods(d snapshot.Diff) []string {
	var out []string
	for _, c := range d.Changes {
		if c.Kind == snapshot.PodGone {
			out = append(out, c.Pod)
		}
	}
	sort.Strings(out)
	return out
}

// refusalLogLines says how the target's log shows each refused static pod:
// its manifest refused ("Could not process manifest file"), the first such
// line.
func (s *Scenario) refusalLogLines(expected []corpus.Expectation) string {
	var out string
	for _, e := range expected {
		p, ok := s.corpus.Find(e.Pod)
		if !ok || s.kubelet == nil {
			continue
		}
		lines, err := s.kubelet.Lines("Could not process manifest file")
		var mine []string
		for _, l := range lines {
			if strings.Contains(l, p.Name+".yaml") {
				mine = append(mine, l)
			}
		}
		out += fmt.Sprintf("; kubelet log: %d \"Could not process manifest file\" lines for %s.yaml", len(mine), p.Name)
		if err != nil {
			out += fmt.Sprintf(" (reading it: %v)", err)
		}
		if len(mine) > 0 {
			out += fmt.Sprintf(", first: %.400s", mine[0])
		}
	}
	return out
}
