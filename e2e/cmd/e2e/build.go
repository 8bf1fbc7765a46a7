package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/fleet"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
)

// What the e2e has built before it runs (-print-build, make
// e2e-binaries): the mode table (plans) and the plan say which versions;
// these say which binaries and which runtime builds.
var (
	// localBinaries are the patched binaries of a local plan whose mode
	// names none (modePlan.binaries).
	localBinaries = []string{"kubelet"}
	// runtimeWith move with the containerds of the local provider: runc
	// and the CNI plugins.
	runtimeWith = []string{"runc@1.5.3", "cni-plugins@1.10.0"}
	// runtimeComponents are what -mode runtime builds first (make
	// runtime: cached once built, about 33 minutes cold): the containerds
	// of its default road with what moves with them; Debian's containerd
	// 1.6.20 needs no build.
	runtimeComponents = append([]string{"containerd@1.7.35", "containerd@2.4.2"}, runtimeWith...)
	// kindPatched and kindReleased are what a kind plan's versions are
	// built with, patched (the node packages) and as released (the
	// control plane's images, and the controls' kubelets).
	kindPatched  = []string{"kubelet", "kubeadm", "kubectl"}
	kindReleased = []string{"kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"}
	// roadRunc moves with a road's runtimes (make runtime-deb).
	roadRunc = "runc@1.5.3"
)

// buildList is what make e2e-binaries runs for the plan, one make
// invocation a line: "build VERSIONS=... [PATCHED=false] BINARIES=...",
// "runtime RUNTIME_COMPONENTS=..." or "runtime-deb RUNTIME_COMPONENTS=...".
func buildList(provider string, pl modePlan, runner plan.Runner, p plan.Plan) ([]string, error) {
	patched, unpatched, err := runner.Versions(p)
	if err != nil {
		return nil, err
	}
	build := func(versions []string, released bool, binaries []string) string {
		s := "build VERSIONS=" + strings.Join(versions, ",")
		if released {
			s += " PATCHED=false"
		}
		return s + " BINARIES=" + strings.Join(binaries, ",")
	}
	if provider == "kind" {
		all := plan.Union(patched, unpatched)
		out := []string{build(all, false, kindPatched), build(all, true, kindReleased)}
		if pl.capi {
			out = append(out, fmt.Sprintf("capi-images CAPI_NAMESPACES=%s CAPI_SETTINGS=%s", fleet.CAPINamespace, strings.Join(fleet.CAPISettings, ",")))
		}
		if len(p.RuntimeMoves) > 0 {
			var rts []string
			for _, m := range p.RuntimeMoves {
				rts = append(rts, m.Step.To.String())
			}
			out = append(out, "runtime-deb RUNTIME_COMPONENTS="+strings.Join(append(rts, roadRunc), ","))
		}
		return out, nil
	}
	binaries := pl.binaries
	if len(binaries) == 0 {
		binaries = localBinaries
	}
	out := []string{build(patched, false, binaries)}
	if len(unpatched) > 0 {
		out = append(out, build(unpatched, true, []string{"kubelet"}))
	}
	if len(pl.released) > 0 {
		out = append(out, build(patched, true, pl.released))
	}
	if pl.runtime {
		components := runtimeComponents
		if len(p.ShimFaults) > 0 {
			components = shimFaultComponents(p.ShimFaults)
		}
		out = append(out, "runtime RUNTIME_COMPONENTS="+strings.Join(components, ","))
	}
	return out, nil
}

// shimFaultComponents are the containerds of -shim-faults' runs, with
// what moves with them.
func shimFaultComponents(runs []plan.ShimFaultRun) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range runs {
		if s := r.Runtime.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return append(out, runtimeWith...)
}

// printBuild prints buildList (-print-build).
func printBuild(o *options, pl modePlan, runner plan.Runner, p plan.Plan, stdout, stderr io.Writer) int {
	list, err := buildList(o.provider, pl, runner, p)
	if err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return 2
	}
	for _, l := range list {
		fmt.Fprintln(stdout, l)
	}
	return 0
}
