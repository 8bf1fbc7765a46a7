// Package plan is what an e2e run does, whichever provider carries it out
// (the local node, kind): its upgrade steps, and the versions each step
// needs built. The upstream behaviour the controls are held to is package
// upstream's (pkg/upstream), shared with `kubelet-compat preflight`.
package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// Step is one in-place swap of the kubelet binary (and, on kind, of the
// control plane before it): an upgrade, or a rollback when To is older
// than From (a newer kubelet swapped back to an older one).
type Step struct{ From, To string }

// String is "from -> to", with " (rollback)" for a step that goes down:
// reports and logs name rollback steps as such.
func (s Step) String() string {
	if s.Rollback() {
		return s.From + " -> " + s.To + " (rollback)"
	}
	return s.From + " -> " + s.To
}

// Rollback says whether the step goes down: To is an older version than
// From (by major, minor, patch). False for versions that do not parse.
func (s Step) Rollback() bool {
	f, t := versionKey(s.From), versionKey(s.To)
	return f != nil && t != nil && compareKeys(t, f) < 0
}

// HasRollback says whether any of steps goes down.
func HasRollback(steps []Step) bool {
	for _, s := range steps {
		if s.Rollback() {
			return true
		}
	}
	return false
}

// ParseSteps reads a chain (versions: every consecutive pair is a step)
// and explicit steps (from:to pairs, e.g. skip-level 1.28.15:1.31.14);
// both may be given: the chain's steps come first. A step goes up (an
// upgrade) or down (a rollback, e.g. 1.31.14:1.30.14: the newer kubelet
// swapped back to the older one); from and to must differ.
func ParseSteps(versions, stepsList string) ([]Step, error) {
	var steps []Step
	if versions != "" {
		vs := strings.Split(versions, ",")
		if len(vs) < 2 {
			return nil, fmt.Errorf("-versions %q: at least two versions", versions)
		}
		for i := 1; i < len(vs); i++ {
			steps = append(steps, Step{From: strings.TrimSpace(vs[i-1]), To: strings.TrimSpace(vs[i])})
		}
	}
	if stepsList != "" {
		for _, st := range strings.Split(stepsList, ",") {
			from, to, ok := strings.Cut(st, ":")
			if !ok {
				return nil, fmt.Errorf("bad -steps entry %q (want from:to)", st)
			}
			steps = append(steps, Step{From: strings.TrimSpace(from), To: strings.TrimSpace(to)})
		}
	}
	for _, st := range steps {
		f, t := versionKey(st.From), versionKey(st.To)
		if f == nil || t == nil {
			return nil, fmt.Errorf("step %s: versions must be 1.<minor>.<patch>", st)
		}
		if compareKeys(f, t) == 0 {
			return nil, fmt.Errorf("step %s goes nowhere: from and to are the same version", st)
		}
	}
	return steps, nil
}

// compareKeys is -1, 0 or 1 as version key a sorts before, with or after b.
func compareKeys(a, b []int) int {
	for i := range a {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return 1
		}
	}
	return 0
}

// versionKey is major, minor, patch of a version such as 1.21.14, or nil.
func versionKey(v string) []int {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return nil
	}
	out := make([]int, 3)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil
		}
		out[i] = n
	}
	return out
}

// Versions are what steps need built: every version they name (patched),
// and with controls each step's target unpatched. A rollback step is no
// different: its from (newer) kubelet runs the baseline patched, its to
// (older) kubelet is swapped in patched, and as released for the control.
func Versions(steps []Step, controls bool) (patched, unpatched []string) {
	for _, s := range steps {
		patched = appendNew(patched, s.From, s.To)
		if controls {
			unpatched = appendNew(unpatched, s.To)
		}
	}
	return patched, unpatched
}

func appendNew(list []string, vs ...string) []string {
	for _, v := range vs {
		found := false
		for _, x := range list {
			found = found || x == v
		}
		if !found {
			list = append(list, v)
		}
	}
	return list
}
