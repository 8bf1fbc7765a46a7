// Package plan is what an e2e run does, whichever provider carries it out
// (the local node, kind): its upgrade steps, and the versions each step
// needs built. The upstream behaviour the controls are held to is package
// upstream's (pkg/upstream), shared with `kubelet-compat preflight`.
package plan

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// Plan is one e2e run: its steps and which variants run them. The
// workloads and what they are held to are the provider's (the corpus of
// static pods everywhere; API workloads on kind), the upstream behaviour
// the controls are held to is package upstream's.
type Plan struct {
	// Mode names the plan (ci, steps, full, ...) in the report.
	Mode  string
	Steps []Step
	// RuntimeSteps swap the container runtime under a running kubelet
	// RuntimeKubelet instead of swapping kubelets (runtime.go; local
	// provider): per step the patched kubelet, then with Controls the
	// kubelet as released.
	RuntimeSteps   []RuntimeStep
	RuntimeKubelet string
	// RuntimeChain runs the runtime steps as one road on one set of
	// containers (plan.RuntimeRuns).
	RuntimeChain bool
	// RuntimeOrder, when set, measures the one runtime step against this
	// kubelet step in every RuntimeOrder instead (OrderRuns).
	RuntimeOrder Step
	// ShimFaults, when set, make each fault on each containerd instead
	// (ShimFaultRuns): a baseline under the patched RuntimeKubelet, the
	// fault, containerd restarted in place. RuntimeSteps are then the
	// runtimes' restarts (RestartSteps).
	ShimFaults []ShimFaultRun
	// RuntimeMoves move every node's container runtime in place between
	// the kubelet steps, under the kubelet the cluster reached (a road,
	// ParseRoad; kind provider): the patched chain and, with Controls, one
	// control cluster over the same road.
	RuntimeMoves []RuntimeMove
	// Controls runs every step once more with the unpatched kubelet of
	// its target, on a baseline of its own: the negative control.
	Controls bool
	// SkipPatched runs only the controls.
	SkipPatched bool
	// Extras runs, after the patched chain, a genuine change in the
	// compat window, the faults and `kubelet-compat sweep`.
	Extras bool
	// Readiness watches the pods' Ready condition and their Services'
	// EndpointSlices across each swap.
	Readiness bool
	// RecordAfterSwap runs the operators' flow on every swap: `kubelet-compat
	// record` against the NEW kubelet once it has settled, three sync periods
	// before the "after" snapshot, and (patched chain) a static pod born
	// under each kubelet, carried by the later steps (ParseRecordAfterSwap).
	RecordAfterSwap bool
	SyncFrequency   time.Duration
	// Output is the repository's _output: the binaries, the CLI, the
	// packages and images.
	Output string
	// ReportDir receives report.{json,txt} and logs/.
	ReportDir string
	Log       io.Writer
}

// RecordAfterSwapLocalOnly is why a provider refuses Plan.RecordAfterSwap.
const RecordAfterSwapLocalOnly = "-record-after-swap runs with static pods on the local provider only, not with -provider kind nor in API mode"

// ParseRecordAfterSwap reads -record-after-swap: true, false, or auto (""
// too): on for a plan of static pods with a rollback step, where a record
// on the older kubelet must carry forward what the newer one created, off
// otherwise (API mode's pods are API pods; the other modes' figures and
// durations stay as measured).
func ParseRecordAfterSwap(value string, steps []Step, staticPods bool) (bool, error) {
	switch value {
	case "", "auto":
		return staticPods && HasRollback(steps), nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("-record-after-swap is auto, true or false, not %q", value)
}

// RollbackLocalOnly is why a provider refuses rollback steps.
const RollbackLocalOnly = "rollback steps (to older than from) run on the local provider only (-mode steps, ci, full, bench, api), not with -provider kind nor in the admission or device modes"

// Runner carries a plan out on the nodes of one provider (-provider: the
// infrastructure alone, as in kind): the local host as the node (package
// scenario over package local) or kubeadm clusters of kind nodes (package
// kind over its Docker engine).
type Runner interface {
	// Name is its provider's -provider name.
	Name() string
	// Describe is the run's header after its steps: its nodes, its pods,
	// where its state lives.
	Describe(p Plan) string
	// Check refuses, before anything is made, a plan the provider cannot
	// carry out.
	Check(p Plan) error
	// Versions are what the plan needs built on this provider: patched,
	// and unpatched for the controls.
	Versions(p Plan) (patched, unpatched []string, err error)
	// Run carries the plan out, recording into rep; everything it makes
	// is undone through stack.
	Run(ctx context.Context, p Plan, stack *cleanup.Stack, rep *report.Report) error
}

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
	f, fok := kubernetes(s.From)
	t, tok := kubernetes(s.To)
	return fok && tok && t.Less(f)
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
		f, fok := kubernetes(st.From)
		t, tok := kubernetes(st.To)
		if !fok || !tok {
			return nil, fmt.Errorf("step %s: versions must be 1.<minor>.<patch>", st)
		}
		if f.Compare(t) == 0 {
			return nil, fmt.Errorf("step %s goes nowhere: from and to are the same version", st)
		}
	}
	return steps, nil
}

// VersionLess says whether MAJOR.MINOR.PATCH version a is older than b,
// by number (1.5.3 before 1.10.0, 1.38.0-rc.1 before 1.38.0); a version
// that does not parse sorts first.
func VersionLess(a, b string) bool {
	ka, aok := kubernetes(a)
	kb, bok := kubernetes(b)
	if !aok || !bok {
		return !aok && bok
	}
	return ka.Less(kb)
}

// kubernetes reads a kubelet version of a plan, e.g. 1.21.14 or
// 1.38.0-rc.1 (versions.ParseKubernetes: a pre-release sorts before its
// release); ok is false when it does not parse.
func kubernetes(v string) (versions.Version, bool) {
	k, err := versions.ParseKubernetes(v)
	return k, err == nil
}

// Run is one run of a plan on a baseline of its own: a control (one step,
// its target's kubelet as released) or the patched chain (every step).
type Run struct {
	Steps   []Step
	Patched bool
}

// Runs expands a plan's steps, for every provider: with controls, each
// step's control first, then (unless skipped) the patched chain.
func Runs(steps []Step, controls, skipPatched bool) []Run {
	var out []Run
	if controls {
		for _, st := range steps {
			out = append(out, Run{Steps: []Step{st}})
		}
	}
	if !skipPatched && len(steps) > 0 {
		out = append(out, Run{Steps: steps, Patched: true})
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
		if !contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// SkipLevel says whether the step goes up more than one minor: on a kubeadm
// cluster the control plane cannot (kubeadm upgrade apply moves one minor
// at a time), so it goes through ControlPlanePath while the other nodes'
// kubelets stay at From, and then swap From -> To once: the skip-level
// kubelet flow (a kubelet may be 3 minors older than the API server from
// 1.28 on, 2 before).
func (s Step) SkipLevel() bool {
	f, fok := kubernetes(s.From)
	t, tok := kubernetes(s.To)
	return fok && tok && f.Major == t.Major && t.Minor > f.Minor+1
}

// ControlPlanePath is the versions the control plane is upgraded to, in
// order, on a step: To alone, or on a skip-level step the matrix release
// of every minor after From's, then To.
func ControlPlanePath(s Step) ([]string, error) {
	if !s.SkipLevel() {
		return []string{s.To}, nil
	}
	f, _ := kubernetes(s.From)
	t, _ := kubernetes(s.To)
	var path []string
	for m := f.Minor + 1; m < t.Minor; m++ {
		rel, err := matrix.Releases([]string{fmt.Sprintf("%d.%d", f.Major, m)})
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", s, err)
		}
		path = append(path, rel[0])
	}
	return append(path, s.To), nil
}

// ControlPlaneVersions are the versions the control planes of steps pass
// through that no step names (the minors a skip-level step skips on its
// kubelets): a kubeadm provider needs them built too.
func ControlPlaneVersions(steps []Step) ([]string, error) {
	var named, out []string
	for _, s := range steps {
		named = appendNew(named, s.From, s.To)
	}
	for _, s := range steps {
		path, err := ControlPlanePath(s)
		if err != nil {
			return nil, err
		}
		for _, v := range path {
			if !contains(named, v) {
				out = appendNew(out, v)
			}
		}
	}
	return out, nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Union is a's versions, then b's that a lacks, in order.
func Union(a, b []string) []string {
	return appendNew(append([]string(nil), a...), b...)
}
