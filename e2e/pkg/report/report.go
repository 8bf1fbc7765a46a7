// Package report holds the e2e's results and renders them as JSON and as a
// table (markdown, for the README and the terminal).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// Variants of a run on one step.
const (
	Patched   = "patched"
	Unpatched = "unpatched"
)

// Expectation is a pod upstream restarts on a step, and why.
type Expectation struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
}

// Run is one kubelet swap: a step done by one variant of the new kubelet.
type Run struct {
	Step string `json:"step"` // "1.20.15 -> 1.21.14"
	From string `json:"from"`
	To   string `json:"to"`
	// Rollback: the step goes down (To is older than From), a newer
	// kubelet swapped back to an older one; Step says "(rollback)" too.
	Rollback bool   `json:"rollback,omitempty"`
	Variant  string `json:"variant"`
	// Faults injected during the swap, if any.
	Faults []string `json:"faults,omitempty"`
	Pods   int      `json:"pods"`
	// Containers counts the running containers before the swap.
	Containers    int     `json:"containers"`
	Restarts      int     `json:"restarts"`
	RecreatedPods int     `json:"recreatedPods"`
	WindowSeconds float64 `json:"windowSeconds"`
	// RuntimeDownSeconds is, on a runtime step, how long the node's CRI
	// did not answer: from the old containerd's SIGTERM until the new one
	// answered.
	RuntimeDownSeconds float64 `json:"runtimeDownSeconds,omitempty"`
	// KeptLogLines counts the new kubelet's "Keeping container" lines: the
	// containers the compat path kept (their hash differs from its own).
	KeptLogLines int `json:"keptLogLines"`
	// Expected lists what upstream restarts on this step (controls only).
	Expected []Expectation `json:"expected,omitempty"`
	// Unrepresentable lists, on a patched rollback, the pods a container of
	// which sets a field the older kubelet does not know: it restarts them,
	// and only them.
	Unrepresentable []Expectation `json:"unrepresentable,omitempty"`
	// Refused lists the pods the target kubelet refuses at its start,
	// patched or not (a node feature it does not declare: its feature
	// gates): both variants must lose them (no ready sandbox after), and
	// they count for nothing else.
	Refused []Expectation `json:"refused,omitempty"`
	Diff    snapshot.Diff `json:"diff"`
	// Node names the node of a multi-node provider (kind).
	Node string `json:"node,omitempty"`
	// ByDesign lists the pods that restarted for a reason outside the
	// kubelet swap (kubeadm rewrote their manifest, a controller rolled
	// them out): reported apart, not asserted.
	ByDesign []Expectation `json:"byDesign,omitempty"`
	Passed   bool          `json:"passed"`
	// Verdict says what was asserted and how it went, in one line.
	Verdict string `json:"verdict"`
	// Readiness is what the readiness watchers saw across the swap, per
	// group of pods (API mode; empty: not watched).
	Readiness []ReadyGroup `json:"readiness,omitempty"`
}

// ReadyGroup is what the readiness watchers (pods' Ready conditions and the
// Service's EndpointSlices, through the API) saw across one kubelet swap
// for a group of pods.
type ReadyGroup struct {
	Group string `json:"group"`
	// PeriodSeconds is the group's readiness probe period.
	PeriodSeconds int32 `json:"periodSeconds"`
	// Failing: the probe starts failing right at the swap (the negative
	// case).
	Failing bool `json:"failing,omitempty"`
	// Endpoints: the pods are behind the Service.
	Endpoints bool           `json:"endpoints"`
	Pods      []PodReadiness `json:"pods"`
}

// PodReadiness is one pod across one swap.
type PodReadiness struct {
	Pod string `json:"pod"`
	// Transitions counts Ready -> NotReady in the API.
	Transitions int `json:"transitions"`
	// EndpointRemovals counts a ready endpoint becoming not ready or gone.
	EndpointRemovals int `json:"endpointRemovals"`
	// LongestGapSeconds is the longest time NotReady; LongestEndpointGapSeconds
	// the longest without a ready endpoint.
	LongestGapSeconds         float64 `json:"longestGapSeconds"`
	LongestEndpointGapSeconds float64 `json:"longestEndpointGapSeconds"`
	// FirstNotReadySeconds is when the first Ready -> NotReady was seen,
	// counted from the new kubelet's start (-1: none).
	FirstNotReadySeconds float64 `json:"firstNotReadySeconds"`
	ReadyAtEnd           bool    `json:"readyAtEnd"`
	EndpointReadyAtEnd   bool    `json:"endpointReadyAtEnd"`
}

// Sum is the group's total: transitions and removals summed, the longest
// gaps.
func (g ReadyGroup) Sum() PodReadiness {
	var s PodReadiness
	for _, p := range g.Pods {
		s.Transitions += p.Transitions
		s.EndpointRemovals += p.EndpointRemovals
		s.LongestGapSeconds = max(s.LongestGapSeconds, p.LongestGapSeconds)
		s.LongestEndpointGapSeconds = max(s.LongestEndpointGapSeconds, p.LongestEndpointGapSeconds)
	}
	return s
}

// Check is one extra assertion (genuine change, sweep, ...).
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// Report is the whole e2e result.
type Report struct {
	Mode        string    `json:"mode"`
	Provider    string    `json:"provider"`
	StartedAt   time.Time `json:"startedAt"`
	WallSeconds float64   `json:"wallSeconds"`
	Passed      bool      `json:"passed"`
	Error       string    `json:"error,omitempty"`
	Runs        []Run     `json:"runs"`
	Checks      []Check   `json:"checks,omitempty"`
	// Fleet holds the rolls of whole clusters (make e2e E2E=fleet).
	Fleet []FleetRoll `json:"fleet,omitempty"`
}

// Finish computes Passed from the runs and checks.
func (r *Report) Finish(end time.Time, err error) {
	r.WallSeconds = end.Sub(r.StartedAt).Seconds()
	r.Passed = err == nil && (len(r.Runs) > 0 || len(r.Fleet) > 0)
	if err != nil {
		r.Error = err.Error()
	}
	for _, run := range r.Runs {
		r.Passed = r.Passed && run.Passed
	}
	for _, c := range r.Checks {
		r.Passed = r.Passed && c.Passed
	}
}

// Table renders a summary per step (patched against unpatched, without
// faults), every run, then the checks, as markdown tables.
func (r *Report) Table(w io.Writer) {
	// A fleet's report has rolls, not swaps.
	if len(r.Runs) > 0 || len(r.Fleet) == 0 {
		r.runsTable(w)
	}
	r.readinessTable(w)
	r.fleetTable(w)
	if len(r.Checks) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "| check | result | detail |\n| --- | --- | --- |\n")
		for _, c := range r.Checks {
			res := "pass"
			if !c.Passed {
				res = "FAIL"
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", c.Name, res, c.Detail)
		}
	}
	fmt.Fprintln(w)
	status := "PASSED"
	if !r.Passed {
		status = "FAILED"
	}
	fmt.Fprintf(w, "e2e %s on the %s provider: %s in %.0fs\n", r.Mode, r.Provider, status, r.WallSeconds)
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
}

// runsTable renders the summary per step and every run.
func (r *Report) runsTable(w io.Writer) {
	r.summary(w)
	fmt.Fprintln(w)
	perNode := false
	for _, run := range r.Runs {
		perNode = perNode || run.Node != ""
	}
	nodeHead, nodeSep := "", ""
	if perNode {
		nodeHead, nodeSep = " node |", " --- |"
	}
	fmt.Fprintf(w, "| step | variant |%s pods | containers | restarts | recreated pods | kept by the compat path | upgrade window (s) | result |\n", nodeHead)
	fmt.Fprintf(w, "| --- | --- |%s ---: | ---: | ---: | ---: | ---: | ---: | --- |\n", nodeSep)
	var byDesign []string
	for _, run := range r.Runs {
		variant := run.Variant
		if len(run.Faults) > 0 {
			variant += " + " + strings.Join(run.Faults, " + ")
		}
		node := ""
		if perNode {
			node = " " + run.Node + " |"
		}
		fmt.Fprintf(w, "| %s | %s |%s %d | %d | %d | %d | %d | %.1f | %s |\n", run.Step, variant, node, run.Pods, run.Containers,
			run.Restarts, run.RecreatedPods, run.KeptLogLines, run.WindowSeconds, run.Verdict)
		for _, e := range run.ByDesign {
			byDesign = append(byDesign, fmt.Sprintf("| %s | %s | %s | %s | %s |", run.Step, run.Variant, run.Node, e.Pod, e.Reason))
		}
	}
	if len(byDesign) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "| step | variant | node | restarted by design (not the kubelet swap) | why |\n| --- | --- | --- | --- | --- |\n")
		for _, l := range byDesign {
			fmt.Fprintln(w, l)
		}
	}
}

// readinessTable renders the readiness watchers' figures per run and group
// (nothing when no run has them), with the run's node for a multi-node
// provider.
func (r *Report) readinessTable(w io.Writer) {
	head := false
	perNode := false
	for _, run := range r.Runs {
		perNode = perNode || (run.Node != "" && len(run.Readiness) > 0)
	}
	nodeHead, nodeSep := "", ""
	if perNode {
		nodeHead, nodeSep = " node |", " --- |"
	}
	for _, run := range r.Runs {
		node := ""
		if perNode {
			node = " " + run.Node + " |"
		}
		for _, g := range run.Readiness {
			if !head {
				fmt.Fprintln(w)
				fmt.Fprintf(w, "| step | variant |%s pods | readiness probe | Ready->NotReady | endpoints removed | longest NotReady (s) | longest without ready endpoint (s) |\n", nodeHead)
				fmt.Fprintf(w, "| --- | --- |%s ---: | --- | ---: | ---: | ---: | ---: |\n", nodeSep)
				head = true
			}
			sum := g.Sum()
			probe := fmt.Sprintf("period %ds", g.PeriodSeconds)
			if g.Failing {
				probe += ", fails from the swap on"
			}
			removed, gap := "-", "-"
			if g.Endpoints {
				removed, gap = fmt.Sprint(sum.EndpointRemovals), fmt.Sprintf("%.1f", sum.LongestEndpointGapSeconds)
			}
			fmt.Fprintf(w, "| %s | %s |%s %d %s | %s | %d | %s | %.1f | %s |\n", run.Step, run.Variant, node, len(g.Pods), g.Group, probe,
				sum.Transitions, removed, sum.LongestGapSeconds, gap)
		}
	}
}

type stepSummary struct {
	patched, unpatched *Run
}

func (r *Report) summary(w io.Writer) {
	var order []string
	steps := map[string]*stepSummary{}
	for i := range r.Runs {
		run := &r.Runs[i]
		s, ok := steps[run.Step]
		if !ok {
			s = &stepSummary{}
			steps[run.Step] = s
			order = append(order, run.Step)
		}
		if len(run.Faults) > 0 {
			continue
		}
		// A multi-node provider has one run per node: the step's row sums
		// them and shows the longest window.
		add := func(sum **Run) {
			if *sum == nil {
				c := *run
				*sum = &c
				return
			}
			(*sum).Pods += run.Pods
			(*sum).Containers += run.Containers
			(*sum).Restarts += run.Restarts
			if run.WindowSeconds > (*sum).WindowSeconds {
				(*sum).WindowSeconds = run.WindowSeconds
			}
		}
		switch run.Variant {
		case Patched:
			add(&s.patched)
		case Unpatched:
			add(&s.unpatched)
		}
	}
	cell := func(run *Run, f func(*Run) string) string {
		if run == nil {
			return "-"
		}
		return f(run)
	}
	restarts := func(run *Run) string { return fmt.Sprint(run.Restarts) }
	window := func(run *Run) string { return fmt.Sprintf("%.1f", run.WindowSeconds) }
	fmt.Fprintf(w, "| step | pods | containers | restarts patched | restarts unpatched | window patched (s) | window unpatched (s) |\n")
	fmt.Fprintf(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, step := range order {
		s := steps[step]
		counted := s.patched
		if counted == nil {
			counted = s.unpatched
		}
		pods, containers := 0, 0
		if counted != nil {
			pods, containers = counted.Pods, counted.Containers
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s |\n", step, pods, containers,
			cell(s.patched, restarts), cell(s.unpatched, restarts), cell(s.patched, window), cell(s.unpatched, window))
	}
}

// Write writes report.json and report.txt into dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var sb strings.Builder
	r.Table(&sb)
	return os.WriteFile(filepath.Join(dir, "report.txt"), []byte(sb.String()), 0o644)
}

// AssertPatched: the patched kubelet restarts nothing, recreates no pod,
// keeps every pod's UID (static pods: the recorded one) and runs no init
// container again; upgrade and rollback steps alike. On a rollback the
// pods of run.Unrepresentable restart a container, exactly those. The pods
// of run.Refused must be gone, and are not counted as restarts.
func AssertPatched(run *Run) {
	rerun := 0
	for _, c := range run.Diff.Changes {
		if c.Kind == snapshot.InitRerun {
			rerun++
		}
	}
	uids := run.Diff.UIDChanges
	expected := make([]string, 0, len(run.Unrepresentable))
	for _, e := range run.Unrepresentable {
		expected = append(expected, e.Pod)
	}
	restarted := withoutPods(run.Diff.RestartedPods, run.Refused)
	sort.Strings(expected)
	sort.Strings(restarted)
	onlyExpected := run.Restarts == 0
	if len(expected) > 0 || len(run.Refused) > 0 {
		onlyExpected = strings.Join(restarted, " ") == strings.Join(expected, " ")
	}
	kept := NotGone(run)
	run.Passed = onlyExpected && len(kept) == 0 && run.RecreatedPods == 0 && uids == 0 && rerun == 0 && run.Pods > 0
	refused := ""
	if len(run.Refused) > 0 {
		refused = fmt.Sprintf("; lost as the target refuses them, as upstream (asserted): %s", strings.Join(podsOf(run.Refused), " "))
	}
	switch {
	case run.Passed && len(expected) == 0 && len(run.Refused) > 0:
		run.Verdict = "pass: 0 restarts of the pods the target admits" + refused
		return
	case run.Passed && len(expected) == 0:
		run.Verdict = "pass: 0 restarts"
		return
	case run.Passed:
		run.Verdict = fmt.Sprintf("pass: restarts only %s (fields the older kubelet does not know)%s", strings.Join(expected, " "), refused)
		return
	case len(kept) > 0:
		run.Verdict = fmt.Sprintf("FAIL: %s still running, though the target refuses it (the e2e could not see the refusal)", strings.Join(kept, " "))
		return
	case len(expected) > 0:
		run.Verdict = fmt.Sprintf("FAIL: %d restarts, %d pods recreated, %d pod UIDs changed, %d init reruns: restarted %s, expected only %s", run.Restarts, run.RecreatedPods, uids, rerun, strings.Join(restarted, " "), strings.Join(expected, " "))
		return
	}
	run.Verdict = fmt.Sprintf("FAIL: %d restarts, %d pods recreated, %d pod UIDs changed, %d init reruns: %s", run.Restarts, run.RecreatedPods, uids, rerun, strings.Join(restarted, " "))
}

// NotGone lists the pods of run.Refused that still have a ready sandbox
// after the swap (no PodGone change in the diff), sorted.
func NotGone(run *Run) []string {
	gone := map[string]bool{}
	for _, c := range run.Diff.Changes {
		if c.Kind == snapshot.PodGone {
			gone[c.Pod] = true
		}
	}
	var out []string
	for _, e := range run.Refused {
		if !gone[e.Pod] {
			out = append(out, e.Pod)
		}
	}
	sort.Strings(out)
	return out
}

func podsOf(es []Expectation) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Pod)
	}
	sort.Strings(out)
	return out
}

// withoutPods is pods without those of es.
func withoutPods(pods []string, es []Expectation) []string {
	drop := map[string]bool{}
	for _, e := range es {
		drop[e.Pod] = true
	}
	var out []string
	for _, p := range pods {
		if !drop[p] {
			out = append(out, p)
		}
	}
	return out
}

// AssertControl: the unpatched kubelet restarts at least what upstream is
// known to restart, and loses the pods of run.Refused; a step where
// upstream restarts nothing is reported.
func AssertControl(run *Run) {
	restarted := map[string]bool{}
	for _, p := range run.Diff.RestartedPods {
		restarted[p] = true
	}
	var missed []string
	for _, e := range run.Expected {
		if !restarted[e.Pod] {
			missed = append(missed, e.Pod)
		}
	}
	others := withoutPods(run.Diff.RestartedPods, run.Refused)
	kept := NotGone(run)
	refused := ""
	if len(run.Refused) > 0 {
		refused = fmt.Sprintf("; lost as the target refuses them (asserted): %s", strings.Join(podsOf(run.Refused), " "))
	}
	switch {
	case len(kept) > 0:
		run.Verdict = fmt.Sprintf("FAIL: the control did not lose %s, which the target refuses: this e2e could not see the refusal", strings.Join(kept, " "))
	case len(run.Expected) == 0 && len(others) == 0:
		run.Passed = true
		run.Verdict = fmt.Sprintf("reported, not asserted: upstream restarts nothing on this step (seen: %d restarts)%s", run.Restarts, refused)
	case len(run.Expected) == 0:
		// The expectations missed a change upstream makes: not the
		// patch's failure, but they need fixing.
		run.Passed = true
		run.Verdict = fmt.Sprintf("reported, not asserted: no restart expected on this step, yet the control restarted %d pods (%s): corpus.UpstreamRestarts misses a change%s", len(others), strings.Join(others, " "), refused)
	case len(missed) > 0:
		run.Verdict = fmt.Sprintf("FAIL: the control did not restart %s: this e2e could not tell the patch from upstream", strings.Join(missed, " "))
	default:
		run.Passed = true
		run.Verdict = fmt.Sprintf("pass: restarts as upstream (%d/%d expected pods, %d pods in all)%s", len(run.Expected), len(run.Expected), len(run.Diff.RestartedPods), refused)
	}
}

// LastLine is the last non-empty line of a command's output, for a
// check's detail.
func LastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		return s[i+1:]
	}
	return s
}
