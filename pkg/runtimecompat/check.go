package runtimecompat

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// Steps are the runtimes a runtime step can select: the containerd builds
// of pkg/runtimebuild (`make runtime`), as NAME@VERSION: ours (+compat.N,
// with the fixes upstream lacks), which a refusal recommends, and the
// stock releases they are compared with. Kept here, not
// imported, so that the CLI does not link the build code;
// TestStepsAreBuildable keeps them in step.
var Steps = []string{"containerd@1.7.35", "containerd@1.7.36+compat.1", "containerd@2.0.14+compat.1", "containerd@2.1.9+compat.1",
	"containerd@2.2.10+compat.1", "containerd@2.3.7+compat.1", "containerd@2.4.2", "containerd@2.4.2+compat.1"}

// Verdict says whether a runtime serves a kubelet upgrade's target.
type Verdict struct {
	// Known: the runtime is in the matrix (containerd). Another runtime is
	// not checked (one note says so).
	Known bool
	// Problems say why the target kubelet does not run on the runtime.
	Problems []string
	// Notes are what the operator should know either way.
	Notes []string
	// Step is the runtime to move to before the kubelet, as NAME@VERSION
	// of pkg/runtimebuild (empty: none needed, or none serves both).
	Step string
	// NoStep says why no runtime step exists (both kubelets are served by
	// no runtime of the matrix).
	NoStep string
}

// Check judges the runtime for an upgrade (or rollback) of the kubelet
// from 1.<from> to 1.<to>. The runtime's probed APIs win over the matrix;
// the matrix adds what a probe cannot see (RuntimeConfig, which needs a
// newer CRI client than this module's). cgroupV1 says the host runs cgroup v1.
func Check(from, to int, rt Runtime, cgroupV1 bool) Verdict {
	var v Verdict
	line, known := LineOf(rt.Name, rt.Version)
	if !known {
		v.Notes = append(v.Notes, fmt.Sprintf("%s is not in the runtime matrix (containerd): not checked", rt))
		return v
	}
	v.Known = true
	apis, probed := rt.APIs, true
	if apis == nil {
		apis, probed = lineAPIs(line), false
	}
	runtimeConfig := line.RuntimeConfig
	if rt.RuntimeConfig != nil {
		runtimeConfig = *rt.RuntimeConfig
	}
	if p := problem(to, rt.String(), apis, runtimeConfig); p != "" {
		v.Problems = append(v.Problems, p)
	}
	fromProblem := problem(from, rt.String(), apis, runtimeConfig)
	if len(v.Problems) > 0 {
		v.Step, v.NoStep = step(from, to, rt.Version)
		if cur, ok := versions.Leading(rt.Version); ok && v.Step != "" && versions.MustParseRef(v.Step).Version.Compare(cur) == 0 {
			// The probe contradicts the matrix for this very release.
			v.Step, v.NoStep = "", fmt.Sprintf("the matrix says %s serves it (%s): check how the runtime is configured", line.Label, line.Source)
		}
	} else {
		how := "answers"
		if !probed {
			how = "serves, per the matrix,"
		}
		v.Notes = append(v.Notes, fmt.Sprintf("%s (%s CRI %s) serves kubelet 1.%d and 1.%d", rt, how, strings.Join(apis, ", "), from, to))
		if fromProblem != "" {
			v.Notes[len(v.Notes)-1] = fmt.Sprintf("%s (%s CRI %s) serves kubelet 1.%d", rt, how, strings.Join(apis, ", "), to)
		}
	}
	if fromProblem != "" {
		v.Notes = append(v.Notes, "--from: "+fromProblem+": is the running kubelet on another runtime endpoint?")
	}
	if n := recommended(to, rt.Version); n != "" {
		v.Notes = append(v.Notes, n)
	}
	if cgroupV1 && KubeletNeeds(to).FailsOnCgroupV1 {
		v.Notes = append(v.Notes, fmt.Sprintf("kubelet 1.%d refuses to start on this cgroup v1 host unless its config sets failCgroupV1: false (KEP-5573)", to))
	}
	return v
}

// Err is the refusal, one line: nil when the target runs on the runtime.
func (v Verdict) Err() error {
	if len(v.Problems) == 0 {
		return nil
	}
	msg := strings.Join(v.Problems, "; ")
	switch {
	case v.Step != "":
		ref := versions.MustParseRef(v.Step)
		msg += fmt.Sprintf(": first move the runtime to %s %s (make runtime RUNTIME_COMPONENTS=%s)", ref.Name, ref.Version, v.Step)
	case v.NoStep != "":
		msg += ": " + v.NoStep
	}
	return errors.New(msg)
}

// step picks the runtime to move to first: of Steps that serve both
// kubelets, the oldest not older than the current runtime (the smallest
// upgrade, the next step of the road), else the newest older one (a
// rollback's downgrade); of this project's builds when one serves.
func step(from, to int, current string) (string, string) {
	type cand struct {
		step  string
		patch versions.Version
	}
	var cands []cand
	for _, s := range Steps {
		ref := versions.MustParseRef(s)
		l, ok := LineOf(ref.Name, ref.Version.String())
		if !ok {
			continue
		}
		if ok1, _ := l.Serves(from); !ok1 {
			continue
		}
		if ok2, _ := l.Serves(to); !ok2 {
			continue
		}
		cands = append(cands, cand{step: s, patch: ref.Version})
	}
	if len(cands) == 0 {
		return "", fmt.Sprintf("no runtime of the matrix serves both kubelet 1.%d and 1.%d: upgrade the kubelet in steps", from, to)
	}
	var ours []cand
	for _, c := range cands {
		if c.patch.Build != "" {
			ours = append(ours, c)
		}
	}
	if len(ours) > 0 {
		cands = ours
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].patch.Less(cands[j].patch) })
	cur, ok := versions.Leading(current)
	for _, c := range cands {
		if !ok || !c.patch.Less(cur) {
			return c.step, ""
		}
	}
	return cands[len(cands)-1].step, ""
}

// Recommended are the containerd releases containerd's own RELEASES.md
// (v2.4.2, "Kubernetes Support") lists per kubelet minor: what upstream
// tests, not a hard limit (the CRI is what decides whether it runs).
var Recommended = map[int][]string{
	32: {"2.1.0", "2.0.1", "1.7.24", "1.6.36"},
	33: {"2.1.0", "2.0.4", "1.7.24", "1.6.36"},
	34: {"2.1.3", "2.0.6", "1.7.28", "1.6.39"},
	35: {"2.2.0", "2.1.5", "1.7.28"},
	36: {"2.3.0", "2.2.0"},
	37: {"2.4.0", "2.3.0"},
}

// recommended is a note when containerd's table does not list the
// runtime's version for kubelet 1.<minor>.
func recommended(minor int, version string) string {
	mins, ok := Recommended[minor]
	if !ok {
		return ""
	}
	have, ok := versions.Leading(version)
	if !ok {
		return ""
	}
	// "2.2.0+" is 2.2.0 and later: a version of a listed line at or past
	// its minimum, or past the newest listed minimum, is listed.
	newest := versions.Version{}
	for _, m := range mins {
		want, _ := versions.ParseRelease(m)
		if want.Major == have.Major && want.Minor == have.Minor && !have.Less(want) {
			return ""
		}
		if newest.Less(want) {
			newest = want
		}
	}
	if !have.Less(newest) {
		return ""
	}
	return fmt.Sprintf("containerd's RELEASES.md (v2.4.2) lists %s+ for kubelet 1.%d, not %s: it runs over CRI v1 but is not what upstream tests", strings.Join(mins, "+, "), minor, version)
}
