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

// Step is one in-place upgrade of the kubelet (and, on kind, of the
// control plane before it).
type Step struct{ From, To string }

func (s Step) String() string { return s.From + " -> " + s.To }

// ParseSteps reads a chain (versions: every consecutive pair is a step)
// and explicit steps (from:to pairs, e.g. skip-level 1.28.15:1.31.14);
// both may be given: the chain's steps come first. A step must go up.
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
		if !(f[0] < t[0] || f[0] == t[0] && (f[1] < t[1] || f[1] == t[1] && f[2] < t[2])) {
			return nil, fmt.Errorf("step %s does not go up", st)
		}
	}
	return steps, nil
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
// and with controls each step's target unpatched.
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
