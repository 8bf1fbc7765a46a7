// Package report holds the e2e's results and renders them as JSON and as a
// table (markdown, for the README and the terminal).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/snapshot"
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
	Step    string `json:"step"` // "1.20.15 -> 1.21.14"
	From    string `json:"from"`
	To      string `json:"to"`
	Variant string `json:"variant"`
	// Faults injected during the swap, if any.
	Faults []string `json:"faults,omitempty"`
	Pods   int      `json:"pods"`
	// Containers counts the running containers before the swap.
	Containers    int     `json:"containers"`
	Restarts      int     `json:"restarts"`
	RecreatedPods int     `json:"recreatedPods"`
	WindowSeconds float64 `json:"windowSeconds"`
	// KeptLogLines counts the new kubelet's "Keeping container" lines: the
	// containers the compat path kept (their hash differs from its own).
	KeptLogLines int `json:"keptLogLines"`
	// Expected lists what upstream restarts on this step (controls only).
	Expected []Expectation `json:"expected,omitempty"`
	Diff     snapshot.Diff `json:"diff"`
	Passed   bool          `json:"passed"`
	// Verdict says what was asserted and how it went, in one line.
	Verdict string `json:"verdict"`
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
}

// Finish computes Passed from the runs and checks.
func (r *Report) Finish(end time.Time, err error) {
	r.WallSeconds = end.Sub(r.StartedAt).Seconds()
	r.Passed = err == nil && len(r.Runs) > 0
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
	r.summary(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| step | variant | pods | containers | restarts | recreated pods | kept by the compat path | upgrade window (s) | result |\n")
	fmt.Fprintf(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, run := range r.Runs {
		variant := run.Variant
		if len(run.Faults) > 0 {
			variant += " + " + strings.Join(run.Faults, " + ")
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d | %d | %.1f | %s |\n", run.Step, variant, run.Pods, run.Containers,
			run.Restarts, run.RecreatedPods, run.KeptLogLines, run.WindowSeconds, run.Verdict)
	}
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

type stepSummary struct {
	pods, containers   int
	patched, unpatched *Run
}

func (r *Report) summary(w io.Writer) {
	var order []string
	steps := map[string]*stepSummary{}
	for i := range r.Runs {
		run := &r.Runs[i]
		s, ok := steps[run.Step]
		if !ok {
			s = &stepSummary{pods: run.Pods, containers: run.Containers}
			steps[run.Step] = s
			order = append(order, run.Step)
		}
		if len(run.Faults) > 0 {
			continue
		}
		switch {
		case run.Variant == Patched && s.patched == nil:
			s.patched = run
		case run.Variant == Unpatched && s.unpatched == nil:
			s.unpatched = run
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
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s |\n", step, s.pods, s.containers,
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
