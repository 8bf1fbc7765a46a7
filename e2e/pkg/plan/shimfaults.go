package plan

import (
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/runtimecompat"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// ShimFault is a fault of a pod's runc shim that this project's containerd
// (runtime/patches/containerd) survives and containerd as released does
// not: made on a real node, it is the negative control of one fix of the
// series (-shim-faults; docs/runtime.md).
type ShimFault string

const (
	// FrozenShimGroup: the pod's shim is stopped (SIGSTOP) with its
	// socket's accept queue full while the kubelet starts the pod's next
	// container, then continued, and containerd restarts. The next
	// container's shim cannot connect to the pod's socket: as released it
	// removes the socket and listens there itself (the group splits) and
	// the restarted containerd drops the first shim's tasks; ours waits
	// and keeps the socket of the live shim (fix 2).
	FrozenShimGroup ShimFault = "frozen-shim-group"
	// PidsError: containerd restarts while the shim of a running container
	// cannot list its processes (the container's runc state moved aside
	// until containerd answers again: the shim's `runc ps` fails). As
	// released, containerd takes the live task for leaked and drops it;
	// ours keeps it (fix 1, containerd#13790).
	PidsError ShimFault = "pids-error"
)

// ShimFaults are what -shim-faults all runs, in this order.
var ShimFaults = []ShimFault{FrozenShimGroup, PidsError}

// DefaultShimFaultRuntimes are containerd 1.7 as released and ours: the
// same run compares them.
const DefaultShimFaultRuntimes = "containerd@1.7.35,containerd@1.7.36+compat.1"

// ShimFaultRun is one fault made on one containerd, from a baseline of
// its own, under the patched kubelet.
type ShimFaultRun struct {
	Fault   ShimFault
	Runtime Runtime
	// Keeps: the runtime carries the fix, so the pod must come through
	// the restart untouched; else it must lose it (the fault is real).
	Keeps bool
}

func (r ShimFaultRun) String() string { return fmt.Sprintf("%s on %s", r.Fault, r.Runtime) }

// ParseShimFaults reads -shim-faults: all, or fault,...
func ParseShimFaults(s string) ([]ShimFault, error) {
	if strings.TrimSpace(s) == "all" {
		return append([]ShimFault{}, ShimFaults...), nil
	}
	var out []ShimFault
	for _, f := range strings.Split(s, ",") {
		f := ShimFault(strings.TrimSpace(f))
		known := false
		for _, k := range ShimFaults {
			known = known || k == f
		}
		if !known {
			return nil, fmt.Errorf("unknown shim fault %q (%s, or all)", f, shimFaultNames())
		}
		out = append(out, f)
	}
	return out, nil
}

func shimFaultNames() string {
	var names []string
	for _, f := range ShimFaults {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}

// ParseShimFaultRuntimes reads -shim-fault-runtimes: containerds that kill
// a shim they take for leaked at their start (1.7 and later), the only
// ones either fault can cost a pod.
func ParseShimFaultRuntimes(s string) ([]Runtime, error) {
	var out []Runtime
	for _, r := range strings.Split(s, ",") {
		rt, err := ParseRuntime(r)
		if err != nil {
			return nil, err
		}
		if !runtimecompat.KillsShimsWithoutProcesses(rt.Name, rt.Version) {
			return nil, fmt.Errorf("runtime %s: a shim fault costs a pod only on containerd 1.7 and later", rt)
		}
		out = append(out, rt)
	}
	return out, nil
}

// ShimFaultRuns are every fault on every runtime: per fault, the runtimes
// in the order given.
func ShimFaultRuns(faults []ShimFault, runtimes []Runtime) []ShimFaultRun {
	var out []ShimFaultRun
	for _, f := range faults {
		for _, rt := range runtimes {
			out = append(out, ShimFaultRun{Fault: f, Runtime: rt, Keeps: KeepsUnder(f, rt)})
		}
	}
	return out
}

// KeepsUnder says whether containerd rt keeps the pod under fault f: this
// project's build (+compat.N) carries both fixes; containerd as released
// carries fix 1 from v2.3.4 (read in the module proxy's sources: v2.2.10
// does not), and fix 2 in no release (v2.4.2 makes the same single
// attempt).
func KeepsUnder(f ShimFault, rt Runtime) bool {
	v, err := versions.ParseRelease(rt.Version)
	if err != nil {
		return false
	}
	if strings.HasPrefix(v.Build, "compat.") {
		return true
	}
	fixed, _ := versions.ParseRelease("2.3.4")
	return f == PidsError && !v.Less(fixed)
}

// RestartSteps are the runtime steps of a shim-fault plan: each runtime
// restarted in place (From is To), so that the checks of runtime steps
// (the kubelet served by each runtime) hold for it.
func RestartSteps(runtimes []Runtime) []RuntimeStep {
	out := make([]RuntimeStep, 0, len(runtimes))
	for _, rt := range runtimes {
		out = append(out, RuntimeStep{From: rt, To: rt})
	}
	return out
}
