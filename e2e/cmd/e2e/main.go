// Command e2e is the real-node end-to-end test of kubelet-compat:
// in-place kubelet upgrades on a local node (containerd, runc, bridge CNI
// from Debian) must restart nothing with the patched kubelet, while the
// unpatched kubelet, as the negative control on the same corpus, restarts
// what upstream is known to restart. Run as root through `make e2e`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/leftovers"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/scenario"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/rootdir"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// modePlan is what a mode of `make e2e E2E=<mode>` runs.
type modePlan struct {
	steps     []scenario.Step
	pods      int
	extras    bool
	controls  bool
	api       bool
	admission bool
	devices   bool
	// fleet: the kind fleet roll-out (its controls are the drain roll's
	// kubelet as released).
	fleet bool
	// capi: the fleet's Cluster API rolls (make capi-images first).
	capi bool
	// runtime: the container runtime swapped under a running kubelet
	// (-runtime-steps, -runtime-kubelet; runtimeSteps once parsed).
	runtime      bool
	runtimeSteps []plan.RuntimeStep
	// runtimeOrder: -runtime-order's kubelet step (zero: none).
	runtimeOrder plan.Step
	// runtimeMoves: -road's runtime moves between its kubelet steps.
	runtimeMoves []plan.RuntimeMove
	// shimFaults: -shim-faults' runs (runtimeSteps are then the
	// runtimes' restarts).
	shimFaults []plan.ShimFaultRun
	// binaries are built patched for the local provider (none: the
	// kubelet alone), released are built as released for every version
	// of the plan (-print-build).
	binaries, released []string
}

// plans are the modes of `make e2e E2E=<mode>`.
var plans = map[string]modePlan{
	"ci":   {steps: []scenario.Step{{From: "1.20.15", To: "1.21.14"}}, pods: 10, extras: true, controls: true},
	"full": {steps: []scenario.Step{{From: "1.18.19", To: "1.19.16"}, {From: "1.19.16", To: "1.20.15"}, {From: "1.20.15", To: "1.21.14"}}, pods: 30, extras: true, controls: true},
	// API mode: kube-apiserver built with the kubelets; the controller
	// manager of the readiness watchers as released.
	"api": {steps: []scenario.Step{{From: "1.20.15", To: "1.21.14"}}, pods: 10, controls: true, api: true,
		binaries: apiBinaries, released: []string{"kube-controller-manager"}},
	// The admission cases: pods upstream rejects when the new kubelet
	// re-admits them (node label removed, cpu reserved, --max-pods lowered).
	"admission": {steps: []scenario.Step{{From: "1.20.15", To: "1.21.14"}}, pods: 4, controls: true, api: true, admission: true, binaries: apiBinaries},
	// The device-plugin case: pods using the e2e's device plugin's
	// extended resource across every step of the chain.
	"devices": {steps: []scenario.Step{{From: "1.18.19", To: "1.19.16"}, {From: "1.19.16", To: "1.20.15"}, {From: "1.20.15", To: "1.21.14"}}, pods: 2, controls: true, api: true, devices: true, binaries: apiBinaries},
	"bench":   {steps: []scenario.Step{{From: "1.20.15", To: "1.21.14"}}, pods: 100, controls: true},
	// Any chain of matrix versions: -versions a,b,c (every a -> b, b -> c)
	// or -steps from:to,...; controls per step, then the patched chain.
	"steps": {pods: 10, controls: true},
	// The fleet roll-out on kind (issue 22 section 4): 1 control-plane node
	// and 4 workers rolled 1.30.14 -> 1.31.14 by system-upgrade-controller's
	// Plans at concurrency 1 and 2, the drain-based roll as the anchor (the
	// target's kubelet as released), and a roll whose gate fails on worker 3.
	"fleet": {steps: []scenario.Step{{From: "1.30.14", To: "1.31.14"}}, controls: true, fleet: true},
	// Cluster API (issue 49): a management cluster on kind with CAPI,
	// CAPD and this project's extension (make capi-images), a workload
	// cluster bumped 1.30.14 -> 1.31.14 in place through the extension
	// (the gate failing on one machine), and one by CAPI's rollout.
	"capi": {steps: []scenario.Step{{From: "1.30.14", To: "1.31.14"}}, fleet: true, capi: true},
	// The container runtime swapped in place under a running kubelet
	// (issue 35 §3): -runtime-steps (default plan.DefaultRuntimeSteps)
	// under -runtime-kubelet, patched then the control per step.
	"runtime": {pods: 10, controls: true, runtime: true},
}

// apiBinaries are what the API modes build patched.
var apiBinaries = []string{"kubelet", "kube-apiserver"}

// releaseVersion says whether v is a release as the matrix names it,
// 1.MINOR.PATCH (-control-plane-version; pkg/versions).
func releaseVersion(v string) bool {
	k, err := versions.ParseKubernetes(v)
	return err == nil && k.Major == 1 && k.PreRelease() == ""
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	// Compared and used cleaned from here on; refused when it could be
	// anything but the e2e's own directory.
	rootPath, err := rootdir.Clean(o.root)
	if err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return 2
	}
	if o.mode == "cleanup" {
		return cleanupMode(rootPath, stdout, stderr)
	}
	if o.printBuild && o.provider == "kind" {
		// kind builds what -mode versions names for the mode's plan, as
		// make kind-images checks it (not as the run: the fleet's rolls).
		o.mode, o.imagesOf = "versions", o.mode
	}
	pl, rolls, err := o.modePlan()
	if err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return 2
	}
	repoRoot, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, "e2e:", err)
		return 1
	}
	p, runner, err := o.planAndRunner(pl, rolls, rootPath, repoRoot, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return 2
	}
	if o.printBuild {
		return printBuild(o, pl, runner, p, stdout, stderr)
	}
	return execute(o, runner, p, stdout, stderr)
}

// execute carries out the plan with the provider: the versions it needs
// (-mode versions), the kind images (-mode images), the node up and down
// (-mode node), or the run, its report and its exit status.
func execute(o *options, runner plan.Runner, p plan.Plan, stdout, stderr io.Writer) int {
	if o.mode == "versions" {
		// make e2e-binaries-kind: every version the plan needs built.
		patched, unpatched, err := runner.Versions(p)
		if err != nil {
			fmt.Fprintf(stderr, "e2e: %v\n", err)
			return 2
		}
		fmt.Fprintln(stdout, strings.Join(plan.Union(patched, unpatched), ","))
		return 0
	}
	stack := cleanup.New(stdout)
	if o.mode == "images" {
		return imagesMode(runner.(*kind.Runner), p, o.save, stack, stdout, stderr)
	}
	if o.mode == "node" {
		return nodeMode(runner.(*scenario.Local), p, stack, stdout, stderr)
	}
	if o.mode == "try" {
		return tryMode(runner.(*kind.Runner), p, stack, stdout, stderr)
	}
	var steps []string
	for _, s := range p.Steps {
		steps = append(steps, s.String())
	}
	for _, s := range p.RuntimeSteps {
		if len(p.ShimFaults) > 0 {
			break
		}
		steps = append(steps, "runtime "+s.String())
	}
	for _, f := range p.ShimFaults {
		steps = append(steps, "shim fault "+f.String())
	}
	fmt.Fprintf(stdout, "e2e %s: %s, %s\n", o.mode, strings.Join(steps, ", "), runner.Describe(p))
	rep := &report.Report{Mode: o.mode, Provider: runner.Name(), StartedAt: time.Now()}
	runErr, cleanErr := cleanup.Guard(stack, func(ctx context.Context) error { return runner.Run(ctx, p, stack, rep) })
	if runErr != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", runErr)
	}
	if cleanErr != nil {
		fmt.Fprintf(stderr, "e2e: cleanup: %v\n", cleanErr)
	}
	rep.Finish(time.Now(), errors.Join(runErr, cleanErr))
	if err := rep.Write(p.ReportDir); err != nil {
		fmt.Fprintf(stderr, "e2e: writing the report: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout)
	rep.Table(stdout)
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(p.ReportDir, "report.json"))
	if !rep.Passed {
		return 1
	}
	return 0
}

func toFeatureGates(value, provider string) (map[string]bool, error) {
	gates, err := kubelet.ParseFeatureGates(value)
	if err == nil && gates != nil && provider != "local" {
		err = errors.New("-to-feature-gates is the local provider's")
	}
	return gates, err
}

// planControls says whether the plan runs (or, -mode images, builds for)
// the unpatched controls: the mode's choice, and -mode images builds them
// for any plan (e.g. the fleet's drain roll) unless -controls=false asks
// for what the patched chain alone needs (its .debs, one node image).
func planControls(mode string, modeControls, controlRuns bool) bool {
	if !controlRuns {
		return false
	}
	return modeControls || mode == "images"
}

// cleanupMode undoes what the journal of a run that could not clean up
// after itself (SIGKILL) lists, and nothing else: `make e2e-cleanup`,
// which .ci/run calls before the e2e.
func cleanupMode(root string, stdout, stderr io.Writer) int {
	if _, err := os.Lstat(root); os.IsNotExist(err) {
		fmt.Fprintf(stdout, "e2e cleanup: %s does not exist: nothing to undo\n", root)
		return 0
	}
	if err := rootdir.Owned(root); err != nil {
		fmt.Fprintf(stderr, "e2e cleanup: %v: not touching it\n", err)
		return 1
	}
	release, err := rootdir.Lock(root)
	if err != nil {
		fmt.Fprintf(stderr, "e2e cleanup: %v\n", err)
		return 1
	}
	defer release()
	// Nothing may interrupt the undo half-way.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, cleanup.Signals...)
	done := make(chan struct{})
	defer func() { signal.Stop(sigs); close(done) }()
	go func() {
		for {
			select {
			case sig := <-sigs:
				fmt.Fprintf(stdout, "e2e cleanup: %v ignored: the undo goes on\n", sig)
			case <-done:
				return
			}
		}
	}()

	st, err := journal.Load(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A run that ended cleanly removes its root; this one had not
		// written its journal yet, so it made nothing outside the root.
		fmt.Fprintf(stdout, "e2e cleanup: %s has no journal: removing it\n", root)
		boot, _ := procfs.Host.BootID()
		st = &journal.State{Format: journal.Format, Root: root, BootID: boot}
	case err != nil:
		fmt.Fprintf(stderr, "e2e cleanup: %v: not guessing, fix or remove it by hand\n", err)
		return 1
	}
	if c, err := rootdir.Clean(st.Root); err != nil || c != root {
		fmt.Fprintf(stderr, "e2e cleanup: the journal in %s names root %q: not touching it\n", root, st.Root)
		return 1
	}
	fmt.Fprintf(stdout, "e2e cleanup: undoing what %s lists (run of %s)\n", journal.Path(root), st.Started.Format(time.RFC3339))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := leftovers.Undo(ctx, *st, leftovers.Machine(stdout)); err != nil {
		fmt.Fprintf(stderr, "e2e cleanup: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "e2e cleanup: done")
	return 0
}
