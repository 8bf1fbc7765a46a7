package plan

import (
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/runtimecompat"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimeroad"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// Runtime is a container runtime release, as make runtime names it:
// containerd@1.7.35.
type Runtime struct{ Name, Version string }

func (r Runtime) String() string { return r.Name + "@" + r.Version }

// release is the runtime's version, which ParseRuntime checked.
func (r Runtime) release() versions.Version {
	v, _ := versions.ParseRelease(r.Version)
	return v
}

// RuntimeStep swaps the node's container runtime in place under a running
// kubelet (Plan.RuntimeKubelet, the same binary across the step): the
// running containerd stopped (its shims and containers keep running), the
// next one started on the same root and state.
type RuntimeStep struct{ From, To Runtime }

// String is "containerd@1.6.20 -> containerd@1.7.35".
func (s RuntimeStep) String() string { return s.From.String() + " -> " + s.To.String() }

// DefaultRuntimeSteps is make e2e E2E=runtime's road: Debian's containerd
// 1.6.20 to the builds of make runtime, one line at a time.
const DefaultRuntimeSteps = "containerd@1.6.20:containerd@1.7.35,containerd@1.7.35:containerd@2.4.2"

// DefaultRuntimeKubelet runs on every runtime of the default road
// (pkg/runtimecompat: CRI v1, which 1.6, 1.7 and 2.x serve).
const DefaultRuntimeKubelet = "1.37.2"

// ParseRuntime reads name@MAJOR.MINOR.PATCH (pkg/versions, the v
// optional); only containerd is swapped.
func ParseRuntime(s string) (Runtime, error) {
	name, version, ok := versions.SplitRef(s)
	if !ok {
		return Runtime{}, fmt.Errorf("runtime %q: want name@version, e.g. containerd@1.7.35", s)
	}
	if name != "containerd" {
		return Runtime{}, fmt.Errorf("runtime %q: only containerd is swapped", s)
	}
	v, err := versions.ParseRelease(version)
	if err != nil {
		return Runtime{}, fmt.Errorf("runtime %q: version must be MAJOR.MINOR.PATCH", s)
	}
	return Runtime{Name: name, Version: v.String()}, nil
}

// ParseRuntimeSteps reads from:to,... (e.g. DefaultRuntimeSteps). A step
// goes up, or is a step back of the road (pkg/runtimeroad: one minor or a
// patch release down, the rollback an operator makes), but not from 2.x
// down to 1.x, which the project refuses once 2.x started a shim.
func ParseRuntimeSteps(list string) ([]RuntimeStep, error) {
	var steps []RuntimeStep
	for _, st := range strings.Split(list, ",") {
		from, to, ok := strings.Cut(st, ":")
		if !ok {
			return nil, fmt.Errorf("bad -runtime-steps entry %q (want from:to, e.g. containerd@1.6.20:containerd@1.7.35)", st)
		}
		f, err := ParseRuntime(from)
		if err != nil {
			return nil, err
		}
		t, err := ParseRuntime(to)
		if err != nil {
			return nil, err
		}
		if !f.release().Less(t.release()) {
			back := runtimeroad.Step{From: f.release(), To: t.release()}
			if t.release().Less(f.release()) && back.Check() == nil && !back.LeavesTaskAPIv3() {
				steps = append(steps, RuntimeStep{From: f, To: t})
				continue
			}
			return nil, fmt.Errorf("runtime step %s does not go up and is not a step back of the road (one minor or a patch release down, not from 2.x to 1.x)", RuntimeStep{f, t})
		}
		steps = append(steps, RuntimeStep{From: f, To: t})
	}
	return steps, nil
}

// CheckRuntimeKubelet refuses a kubelet that a runtime of steps does not
// serve (pkg/runtimecompat, as preflight judges the pair): the kubelet
// stays the same binary across every step, so each runtime must run it.
func CheckRuntimeKubelet(kubelet string, steps []RuntimeStep) error {
	k, ok := kubernetes(kubelet)
	if !ok {
		return fmt.Errorf("-runtime-kubelet %q: want 1.<minor>.<patch>", kubelet)
	}
	for _, st := range steps {
		for _, r := range []Runtime{st.From, st.To} {
			line, ok := runtimecompat.LineOf(r.Name, r.Version)
			if !ok {
				return fmt.Errorf("runtime %s is not in pkg/runtimecompat's matrix", r)
			}
			if ok, why := line.Serves(k.Minor); !ok {
				return fmt.Errorf("runtime step %s: %s", st, why)
			}
		}
	}
	return nil
}

// RuntimeRun is one run of runtime steps on a baseline of its own: the
// patched kubelet, or the kubelet as released (the control).
type RuntimeRun struct {
	Steps   []RuntimeStep
	Patched bool
	// KillShims makes the run the negative control of the runtime swap:
	// containerd stopped as a unit without KillMode=process stops it, its
	// shims killed with it. The kubelet as released loses nothing on a
	// runtime step done right, so this is what shows that the step's
	// zero-restart assertion can fail: it must fail here.
	KillShims bool
	// SplitShimGroup makes the run the negative control of the shim-group
	// check: before the swap one pod's shim group is split in two (its
	// socket removed, a container of it restarted: the new container's
	// shim takes the address), as a loaded node's shim start can do. A
	// containerd that kills shims whose task it cannot reach (1.7 and
	// later) kills the stranded one at its start; the check made before
	// every swap must name it, and the zero-restart assertion must fail.
	SplitShimGroup bool
}

// RuntimeRuns expands the runtime steps: per step the patched kubelet,
// then (with controls) the unpatched one, each from the same start (the
// step's From runtime on an empty root, a fresh baseline of the corpus).
// With chain, the steps are one road on ONE set of containers (each step
// starts where the one before ended): the patched kubelet over the whole
// road, then the control over it. With controls and the patched kubelet,
// the negative controls run last, on the last step alone: KillShims, and
// SplitShimGroup when the last step's runtime kills unreachable shims.
func RuntimeRuns(steps []RuntimeStep, chain, controls, skipPatched bool) []RuntimeRun {
	var out []RuntimeRun
	if chain {
		if !skipPatched {
			out = append(out, RuntimeRun{Steps: steps, Patched: true})
		}
		if controls {
			out = append(out, RuntimeRun{Steps: steps})
		}
	} else {
		for _, st := range steps {
			if !skipPatched {
				out = append(out, RuntimeRun{Steps: []RuntimeStep{st}, Patched: true})
			}
			if controls {
				out = append(out, RuntimeRun{Steps: []RuntimeStep{st}})
			}
		}
	}
	if controls && !skipPatched && len(steps) > 0 {
		last := steps[len(steps)-1:]
		out = append(out, RuntimeRun{Steps: last, Patched: true, KillShims: true})
		if runtimecompat.KillsShimsWithoutProcesses(last[0].To.Name, last[0].To.Version) {
			out = append(out, RuntimeRun{Steps: last, Patched: true, SplitShimGroup: true})
		}
	}
	return out
}

// CheckRuntimeChain refuses steps that are not one road: each step must
// start at the runtime the one before ended at.
func CheckRuntimeChain(steps []RuntimeStep) error {
	for i := 1; i < len(steps); i++ {
		if steps[i].From != steps[i-1].To {
			return fmt.Errorf("-runtime-chain: step %s does not start where %s ended", steps[i], steps[i-1])
		}
	}
	return nil
}

// RuntimeVersions are what a runtime plan needs built: its kubelet
// patched, and as released for the controls.
func RuntimeVersions(kubelet string, controls bool) (patched, unpatched []string) {
	if controls {
		unpatched = []string{kubelet}
	}
	return []string{kubelet}, unpatched
}

// RuntimeOrder is where a runtime step goes against a kubelet step
// (Plan.RuntimeOrder, -runtime-order): which order operators should run,
// measured rather than assumed (issue 35 §3).
type RuntimeOrder string

const (
	// RuntimeFirst swaps the runtime under the old kubelet, then the
	// kubelet.
	RuntimeFirst RuntimeOrder = "runtime-first"
	// KubeletFirst swaps the kubelet, then the runtime under the new one.
	KubeletFirst RuntimeOrder = "kubelet-first"
	// OneWindow swaps the runtime while no kubelet runs, between the old
	// kubelet's stop and the new one's start.
	OneWindow RuntimeOrder = "one-window"
)

// RuntimeOrders are the orders -runtime-order measures, in this order.
var RuntimeOrders = []RuntimeOrder{RuntimeFirst, KubeletFirst, OneWindow}

// OrderRun is one order of the runtime step against the kubelet step from
// one start: both kubelets patched, or both as released (the control).
type OrderRun struct {
	Order   RuntimeOrder
	Patched bool
}

// OrderRuns expands the orders: per order the patched kubelets, then with
// controls the kubelets as released.
func OrderRuns(controls, skipPatched bool) []OrderRun {
	var out []OrderRun
	for _, o := range RuntimeOrders {
		if !skipPatched {
			out = append(out, OrderRun{Order: o, Patched: true})
		}
		if controls {
			out = append(out, OrderRun{Order: o})
		}
	}
	return out
}

// CheckRuntimeOrder refuses what -runtime-order cannot measure: one
// runtime step, one kubelet step up, and both kubelets served by both
// runtimes (every order runs each kubelet on each runtime but one).
func CheckRuntimeOrder(kubelet Step, steps []RuntimeStep) error {
	if len(steps) != 1 {
		return fmt.Errorf("-runtime-order measures one runtime step against the kubelet step, not %d", len(steps))
	}
	if kubelet.Rollback() || kubelet.From == kubelet.To {
		return fmt.Errorf("-runtime-order %s: the kubelet step must go up", kubelet)
	}
	for _, k := range []string{kubelet.From, kubelet.To} {
		if err := CheckRuntimeKubelet(k, steps); err != nil {
			return fmt.Errorf("-runtime-order %s: kubelet %s: %w", kubelet, k, err)
		}
	}
	return nil
}

// OrderVersions are what -runtime-order needs built: both kubelets
// patched, and as released for the controls.
func OrderVersions(kubelet Step, controls bool) (patched, unpatched []string) {
	patched = []string{kubelet.From, kubelet.To}
	if controls {
		unpatched = patched
	}
	return patched, unpatched
}
