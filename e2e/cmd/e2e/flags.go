package main

// The e2e's flags, and from them the plan and the provider that carries it
// out: run (main.go) reads the flags here and hands the plan over.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/fleet"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/scenario"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
)

// options are the e2e's flags.
type options struct {
	mode, provider, output, reportDir, root, nodeName string
	steps, versions                                   string
	kindImages, imagesOf, save                        string
	resizePending, cpVersion, fleetRuns               string
	recordAfterSwap, toGates, cliPath                 string
	runtimeSteps, runtimeKubelet, runtimeOrder, road  string
	shimFaults, shimFaultRuntimes                     string
	api, faults, patched, controls, runtimeChain      bool
	admissionRace, resizeGate, readiness, printBuild  bool
	pods                                              int
	syncFreq, pluginGap                               time.Duration
}

// parseFlags reads args; flag's own message goes to stderr.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fl := flag.NewFlagSet("e2e", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&o.mode, "mode", "ci", "ci (1.20 -> 1.21, 10 pods), steps (the chain of -versions or the -steps, 10 pods), full (1.18 -> 1.19 -> 1.20 -> 1.21, 30 pods), api (ci against etcd and kube-apiserver), admission (API pods upstream rejects at re-admission: node label removed, cpu reserved, --max-pods lowered), devices (API pods using the e2e's device plugin's extended resource, 1.18 -> 1.19 -> 1.20 -> 1.21), bench (1.20 -> 1.21, 100 pods), node (the node up and down), try (with -provider kind: a cluster of the first step's from version held until Ctrl-C, for upgrading a node by hand; make e2e-try), cleanup (undo what a killed run's journal under -root lists), or with -provider kind: images (build the kind images of -images-of's plan or of -steps/-versions) and versions (print, comma-separated, every version that plan needs built)")
	fl.BoolVar(&o.api, "api", false, "API mode for any mode: etcd and kube-apiserver, pods through the API")
	fl.IntVar(&o.pods, "pods", 0, "pods in the corpus (default: the mode's)")
	fl.StringVar(&o.provider, "provider", "local", "local (the host is the node), or kind (kubeadm clusters of kind nodes: the Docker engine that answers, else a private dockerd from Debian)")
	fl.StringVar(&o.output, "output", "_output", "the repository's _output: kubelets in <ver>/ and <ver>-unpatched/, the CLI")
	fl.StringVar(&o.reportDir, "report-dir", "_output/e2e", "where report.json, report.txt and logs/ go")
	fl.StringVar(&o.root, "root", "/var/lib/kubelet-compat-e2e", "private state directory of the node (removed afterwards)")
	fl.StringVar(&o.nodeName, "node-name", "kc-e2e-node", "the kubelet's --hostname-override")
	fl.StringVar(&o.steps, "steps", "", "override the mode's steps: from:to,from:to (e.g. 1.18.19:1.21.14); a step that goes down is a rollback (e.g. 1.31.14:1.30.14: the newer kubelet swapped back to the older one; static pods, local provider)")
	fl.StringVar(&o.versions, "versions", "", "override the mode's steps with a chain: v1,v2,v3 means v1 -> v2 and v2 -> v3 (e.g. 1.21.14,1.22.17,1.23.17; a pair that goes down is a rollback step)")
	fl.BoolVar(&o.faults, "faults", false, "kind provider: also run the first step patched on a cluster of its own with faults (containerd restarted between the kubelets on worker 1, the new kubelet SIGKILLed during its first sync on worker 2); always in the modes with extras (ci, full)")
	fl.BoolVar(&o.printBuild, "print-build", false, "print what make e2e-binaries builds for the mode's plan (or -versions, -steps, -runtime-kubelet, -runtime-order, -road) on -provider, one make invocation a line (build VERSIONS=... [PATCHED=false] BINARIES=..., runtime or runtime-deb RUNTIME_COMPONENTS=...), and exit")
	fl.BoolVar(&o.patched, "patched", true, "run the patched chain (false: only the unpatched controls)")
	fl.BoolVar(&o.controls, "controls", true, "run the mode's unpatched controls (-mode runtime: also the negative control, the last step with containerd's shims killed; false: only the patched chain, e.g. while a target's unpatched build is missing; -mode images: only what that chain needs, its .debs and its first node image)")
	fl.DurationVar(&o.syncFreq, "sync-frequency", 10*time.Second, "the kubelet's --sync-frequency")
	fl.StringVar(&o.kindImages, "kind-images", "build", "kind provider: build (the images the plan needs, incrementally, before the clusters) or use (those the engine holds, e.g. docker load-ed from -mode images -save)")
	fl.StringVar(&o.imagesOf, "images-of", "ci", "-mode images: the plan whose versions to build (ci, full)")
	fl.StringVar(&o.save, "save", "", "-mode images: also write the node images to this docker-archive file (docker save), for machines with Docker but no build tools")
	fl.BoolVar(&o.admissionRace, "admission-race", false, "-mode admission: leave the node's pod capacity to the new kubelet's first status update, which races its first admissions (default: set through the API between the kubelets)")
	fl.BoolVar(&o.resizeGate, "resize-gate", false, "API mode: InPlacePodVerticalScaling=true on kube-apiserver and kubelet 1.27 .. 1.32 (alpha, off by default; on from 1.33), so the old API server keeps the resize pod's resizePolicy")
	fl.StringVar(&o.resizePending, "resize-pending", "", "API mode, a step to 1.33+: raise the resize pod's cpu limit by 100m (100m -> 200m; a chain's next step 200m -> 300m) through the running kube-apiserver (pods/resize) before the new kubelet starts: while-old-kubelet (kubelet vN still runs) or between-kubelets (none runs); the patched kubelet must then run that container, not restarted, at 200m (the control's outcome is reported)")
	fl.BoolVar(&o.readiness, "readiness", true, "API mode (not admission, devices), local provider: run kube-controller-manager (endpointslice only), pods with readiness probes of period 10 s and 30 s behind a Service, and watch every pod's Ready condition and the Service's EndpointSlices across each swap (patched: no Ready->NotReady, no endpoint removed before 1.35; a probe failing from the swap on: NotReady within a period); kind provider: watch the Ready condition of the workloads' pods and the EndpointSlices of their Services across each node's swap, counting each pod for its own node's swap (patched: no Ready->NotReady of a static pod at any step, and no Ready->NotReady, no endpoint removed for API pods before 1.35; the control reported); false: without them")
	fl.StringVar(&o.cpVersion, "control-plane-version", "", "API mode (not admission, devices), local provider: hold kube-apiserver and kube-controller-manager at this version for every step instead of upgrading them to the step's (for a step whose control plane the harness cannot build; a kubelet newer than kube-apiserver is outside upstream's skew policy)")
	fl.StringVar(&o.fleetRuns, "fleet-runs", "", "-mode fleet (default "+strings.Join(fleet.Runs, ",")+") and -mode capi (default "+strings.Join(fleet.CAPIRuns, ",")+"): the rolls to run, each on a cluster of its own (concurrency-1, concurrency-2: our roll by system-upgrade-controller's Plans; drain: the anchor; naive: the second anchor, SUC's Plans with the released kubelets and no drain, the in-place roll k3s/rke2 users run; fault: the control plane's Job killed after its swap, the gate failing on worker 3, the operator's retry; runtime, not in the default: our roll whose Plans carry KC_RUNTIME "+fleet.FleetRuntime.String()+", each node's Job moving containerd first (make runtime-deb); runtime-2.0, not in the default: every node moved to containerd 1.7.36+compat.1 first, then Plans whose KC_RUNTIME is 2.0.14+compat.1, the canary failing under 2.0 on worker 3 (its runtime rolled back to 1.7.36); minors, alone and with -versions: one cluster of 2 workers born at the chain's first version rolled Plan after Plan through the chain, e.g. -versions 1.33.13,1.34.12,1.35.8,1.36.5,1.37.2, the etcd bridge on the step to etcd 3.7; no controls; capi: a Cluster API workload cluster (CAPD) bumped in place through this project's extension, the gate failing on md-1's machine; capi-replace: the same bump by CAPI's default rollout; both on a management cluster of make capi-images)")
	fl.DurationVar(&o.pluginGap, "device-plugin-gap", 0, "-mode devices: stop the device plugin before each swap and start it again this long after the new kubelet started (0: it runs throughout)")
	fl.StringVar(&o.recordAfterSwap, "record-after-swap", "auto", "local provider, static pods: after each swap's settling, `kubelet-compat record` against the NEW kubelet and three more sync periods before the snapshot (as an operator records after every swap), and in the patched chain a static pod born under each kubelet but the last, carried by the later steps; auto: on when a step goes down (a rollback), true, false")
	fl.StringVar(&o.toGates, "to-feature-gates", "", "local provider: feature gates of the kubelet each step swaps in (patched and control), e.g. RestartAllContainersOnContainerExits=false: that target refuses the corpus's restartall pod (plans whose kubelets are all 1.36+), and both variants must lose it")
	fl.StringVar(&o.cliPath, "cli", "", "local provider: the kubelet-compat the scenario runs (default: <output>/kubelet-compat), e.g. one built from an older commit as a negative control")
	fl.StringVar(&o.runtimeSteps, "runtime-steps", "", "local provider, static pods: swap the container runtime under a running kubelet instead of the kubelet: from:to,... (e.g. "+plan.DefaultRuntimeSteps+", the default of -mode runtime; -mode steps takes them instead of kubelet steps); builds of make runtime in <output>/runtime, else Debian's containerd at its version")
	fl.StringVar(&o.runtimeKubelet, "runtime-kubelet", plan.DefaultRuntimeKubelet, "the kubelet the runtime steps run under (patched, and as released for the controls), the same binary across each step; every runtime of the steps must serve it (pkg/runtimecompat)")
	fl.StringVar(&o.runtimeOrder, "runtime-order", "", "-mode runtime with one runtime step: the kubelet step from:to (e.g. 1.36.5:1.37.2) to measure the runtime step against, in every order (runtime first under the old kubelet, kubelet first, both in one window while no kubelet runs), each from one start, patched then as released; replaces -runtime-kubelet")
	fl.StringVar(&o.shimFaults, "shim-faults", "", "-mode runtime, local provider: instead of the runtime steps, the negative controls of this project's containerd patch series (docs/runtime.md): each fault (all, or "+strings.Join(shimFaultNames(), ", ")+") made on each of -shim-fault-runtimes from a baseline of its own under the patched -runtime-kubelet, then containerd restarted in place; a containerd with the fix must keep every pod, one without it must lose the faulted pod")
	fl.StringVar(&o.shimFaultRuntimes, "shim-fault-runtimes", plan.DefaultShimFaultRuntimes, "-shim-faults: the containerds (1.7 and later; builds of make runtime) each fault is made on, e.g. containerd as released and ours")
	fl.BoolVar(&o.runtimeChain, "runtime-chain", false, "the runtime steps as one road on ONE set of containers (each step starts where the one before ended, e.g. 1.6.20 -> 1.7.35 -> 2.4.2 on the containers 1.6.20 started): the patched kubelet over the road, then the control; default: each step from a fresh baseline on its From runtime")
	fl.StringVar(&o.road, "road", "", "-mode steps, kind provider: a road instead of -versions, the kubelet versions and the runtimes in the order the cluster reaches them, e.g. 1.30.14,1.31.14,containerd@1.7.35,1.32.13,containerd@2.4.2,1.33.13: born on "+plan.KindRuntime.String()+" (Debian's, the node image's), each runtime moved in place on every node under the kubelet before it with the project's runtime packages (make runtime-deb; runtime-select --restart-containerd), 0 restarts asserted on the patched cluster; with controls ONE control cluster over the same road (its first move after its first kubelet step); every kubelet must be served by its runtime (pkg/runtimecompat)")
	if err := fl.Parse(args); err != nil {
		return nil, err
	}
	return o, nil
}

// modePlan is the mode's plan with the flags that change it, and the
// fleet's rolls; an error for a mode, a provider or a combination of
// flags the e2e cannot run.
func (o *options) modePlan() (modePlan, []string, error) {
	pl, ok := plans[o.mode]
	if o.mode == "images" || o.mode == "versions" {
		// The kind images only (make kind-images), or the versions they
		// need built: those of -images-of's plan, or of -steps.
		pl, ok = plans[o.imagesOf]
		ok = ok && o.provider == "kind"
	}
	if o.mode == "node" {
		// Brings the local node up and down again: a quick check of the
		// provider and its cleanup, without kubelets.
		ok = o.provider == "local"
		pl.steps = []scenario.Step{{}}
	}
	if o.mode == "try" {
		// A kind cluster of the CI step's from version (or -steps'
		// first), held for a person until SIGINT: patched, no controls.
		pl, ok = plans["ci"], o.provider == "kind"
		pl.controls, pl.extras = false, false
	}
	if !ok {
		return pl, nil, fmt.Errorf("unknown mode %q (ci, steps, full, api, admission, devices, bench, fleet, capi, node, try, cleanup; node with -provider local; fleet, capi, try, images and versions with -provider kind)", o.mode)
	}
	if o.pods > 0 {
		pl.pods = o.pods
	}
	if o.api {
		pl.api = true
	}
	if o.steps != "" || o.versions != "" {
		steps, err := plan.ParseSteps(o.versions, o.steps)
		if err != nil {
			return pl, nil, err
		}
		pl.steps = steps
	}
	if err := o.runtimePlan(&pl); err != nil {
		return pl, nil, err
	}
	if err := o.roadPlan(&pl); err != nil {
		return pl, nil, err
	}
	if len(pl.steps) == 0 && o.mode != "node" && len(pl.runtimeSteps) == 0 {
		return pl, nil, fmt.Errorf("mode %s needs -versions v1,v2,... or -steps from:to,...", o.mode)
	}
	if !o.controls {
		pl.controls = false
	}
	if !o.patched {
		if !o.controls {
			return pl, nil, errors.New("-patched=false and -controls=false leave nothing to run")
		}
		pl.extras = false
		pl.controls = true
	}
	if err := o.checkModeFlags(pl); err != nil {
		return pl, nil, err
	}
	var rolls []string
	if pl.fleet && (o.mode == "fleet" || o.mode == "capi") {
		runs := o.fleetRuns
		if runs == "" {
			runs = strings.Join(fleet.Runs, ",")
			if pl.capi {
				runs = strings.Join(fleet.CAPIRuns, ",")
			}
		}
		var err error
		if rolls, err = fleet.ParseRuns(runs); err != nil {
			return pl, nil, err
		}
		if len(rolls) == 1 && rolls[0] == fleet.Minors {
			// Our roll alone: nothing to build or run as released.
			pl.controls = false
		}
	}
	if pl.devices && o.provider != "local" {
		return pl, nil, errors.New("-mode devices runs on the local provider only")
	}
	if o.provider != "local" && o.provider != "kind" {
		return pl, nil, fmt.Errorf("unknown provider %q", o.provider)
	}
	return pl, rolls, nil
}

// checkModeFlags refuses the flags that only some modes or one provider
// take.
func (o *options) checkModeFlags(pl modePlan) error {
	local := o.provider == "local"
	switch {
	case o.resizeGate && (!pl.api || !local):
		return errors.New("-resize-gate needs API mode (-mode api, or -api) on the local provider")
	case o.resizePending != "" && (!pl.api || !local || pl.admission || pl.devices):
		return errors.New("-resize-pending needs API mode (-mode api, or -api) on the local provider")
	case o.resizePending != "" && o.resizePending != scenario.ResizeWhileOldKubelet && o.resizePending != scenario.ResizeBetweenKubelets:
		return fmt.Errorf("-resize-pending is %s or %s", scenario.ResizeWhileOldKubelet, scenario.ResizeBetweenKubelets)
	case o.cpVersion != "" && (!pl.api || !local || pl.admission || pl.devices || !releaseVersion(o.cpVersion)):
		return errors.New("-control-plane-version 1.<minor>.<patch> needs API mode (-mode api, or -api) on the local provider, not admission or devices")
	case pl.fleet && o.provider != "kind" && (o.mode == "fleet" || o.mode == "capi"):
		return fmt.Errorf("-mode %s runs on the kind provider only (-provider kind)", o.mode)
	}
	return nil
}

// planAndRunner is the one plan and the runner of the provider asked for
// (-provider: the infrastructure), checked against each other.
func (o *options) planAndRunner(pl modePlan, rolls []string, rootPath, repoRoot string, log io.Writer) (plan.Plan, plan.Runner, error) {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(repoRoot, p)
	}
	p := plan.Plan{Mode: o.mode, Steps: pl.steps, Controls: planControls(o.mode, pl.controls, o.controls), SkipPatched: !o.patched, Extras: pl.extras,
		SyncFrequency: o.syncFreq, Output: abs(o.output), ReportDir: abs(o.reportDir), Log: log}
	p.RuntimeMoves = pl.runtimeMoves
	if len(pl.runtimeSteps) > 0 {
		p.RuntimeSteps, p.RuntimeKubelet, p.RuntimeChain, p.RuntimeOrder = pl.runtimeSteps, o.runtimeKubelet, o.runtimeChain, pl.runtimeOrder
		p.ShimFaults = pl.shimFaults
	}
	var err error
	if p.RecordAfterSwap, err = plan.ParseRecordAfterSwap(o.recordAfterSwap, p.Steps, !pl.api); err != nil {
		return p, nil, err
	}
	cli := o.cliPath
	if cli != "" {
		cli = abs(cli)
	}
	gates, err := toFeatureGates(o.toGates, o.provider)
	if err != nil {
		return p, nil, fmt.Errorf("-to-feature-gates: %w", err)
	}
	var runner plan.Runner
	switch o.provider {
	case "kind":
		if cli != "" {
			return p, nil, errors.New("-cli is the local provider's (the kind node images carry the CLI the harness builds)")
		}
		if o.kindImages != "build" && o.kindImages != "use" {
			return p, nil, fmt.Errorf("-kind-images must be build or use, not %q", o.kindImages)
		}
		p.Readiness = o.readiness
		k := &kind.Runner{Root: rootPath, CacheDir: cachedir.Resolve(os.Getenv(cachedir.Env)), RepoRoot: repoRoot,
			BuildImages: o.kindImages == "build", Faults: o.patched && (pl.extras || o.faults), Workers: 2}
		runner = k
		if len(rolls) > 0 {
			// The fleet: kind's runner, its clusters of fleet.Workers.
			k.Workers = fleet.Workers
			if fleet.NeedsCAPI(rolls) {
				// CAPD's containers go on the network named "kind"; its
				// replacement machines boot the target's node image.
				k.NetworkName = kind.CAPDNetwork
				for _, st := range pl.steps {
					k.MoreNodeImages = append(k.MoreNodeImages, st.To)
				}
			}
			runner = &fleet.Runner{Runner: k, Runs: rolls}
		}
	default:
		p.Readiness = o.readiness && pl.api && !pl.admission && !pl.devices
		runner = &scenario.Local{Options: scenario.Options{Pods: pl.pods, Root: rootPath, RepoRoot: repoRoot, NodeName: o.nodeName,
			API: pl.api, Admission: pl.admission, AdmissionRace: o.admissionRace, Devices: pl.devices, DevicePluginGap: o.pluginGap,
			ResizeGate: o.resizeGate, ResizePending: o.resizePending, ControlPlaneVersion: o.cpVersion, CLI: cli, ToFeatureGates: gates}}
	}
	if err := runner.Check(p); err != nil {
		return p, nil, err
	}
	return p, runner, nil
}

// runtimePlan reads -runtime-steps (-mode runtime: the default road) into
// pl: runtime steps replace the kubelet steps, on the local provider.
func (o *options) runtimePlan(pl *modePlan) error {
	if o.shimFaults != "" {
		return o.shimFaultPlan(pl)
	}
	list := o.runtimeSteps
	if list == "" && pl.runtime {
		list = plan.DefaultRuntimeSteps
	}
	if list == "" {
		return nil
	}
	if o.provider != "local" {
		return errors.New("-runtime-steps run on the local provider only")
	}
	if o.mode != "runtime" && o.mode != "steps" {
		return fmt.Errorf("-runtime-steps go with -mode runtime or steps, not %s", o.mode)
	}
	if o.steps != "" || o.versions != "" {
		return errors.New("-runtime-steps replace the kubelet steps: not with -steps or -versions")
	}
	steps, err := plan.ParseRuntimeSteps(list)
	if err != nil {
		return err
	}
	pl.runtimeSteps, pl.steps, pl.extras = steps, nil, false
	if o.runtimeOrder == "" {
		return nil
	}
	if o.runtimeChain {
		return errors.New("-runtime-order runs each order from one start: not with -runtime-chain")
	}
	order, err := plan.ParseSteps("", o.runtimeOrder)
	if err != nil {
		return fmt.Errorf("-runtime-order: %w", err)
	}
	if len(order) != 1 {
		return errors.New("-runtime-order takes one kubelet step from:to")
	}
	pl.runtimeOrder = order[0]
	return plan.CheckRuntimeOrder(order[0], steps)
}

// shimFaultPlan reads -shim-faults and -shim-fault-runtimes into pl: the
// faults' runs replace the runtime steps, which become the runtimes'
// restarts.
func (o *options) shimFaultPlan(pl *modePlan) error {
	switch {
	case o.provider != "local":
		return errors.New("-shim-faults run on the local provider only")
	case o.mode != "runtime":
		return fmt.Errorf("-shim-faults go with -mode runtime, not %s", o.mode)
	case o.runtimeSteps != "" || o.runtimeOrder != "" || o.runtimeChain:
		return errors.New("-shim-faults replace the runtime steps: not with -runtime-steps, -runtime-order or -runtime-chain")
	}
	faults, err := plan.ParseShimFaults(o.shimFaults)
	if err != nil {
		return err
	}
	rts, err := plan.ParseShimFaultRuntimes(o.shimFaultRuntimes)
	if err != nil {
		return fmt.Errorf("-shim-fault-runtimes: %w", err)
	}
	pl.runtimeSteps, pl.steps, pl.extras = plan.RestartSteps(rts), nil, false
	pl.shimFaults = plan.ShimFaultRuns(faults, rts)
	return nil
}

func shimFaultNames() []string {
	var out []string
	for _, f := range plan.ShimFaults {
		out = append(out, string(f))
	}
	return out
}

// roadPlan reads -road into pl: the kubelet steps of its chain and the
// runtime moves between them (kind provider, -mode steps).
func (o *options) roadPlan(pl *modePlan) error {
	if o.road == "" {
		return nil
	}
	switch {
	case o.provider != "kind" || (o.mode != "steps" && o.imagesOf != "steps"):
		return errors.New("-road runs with -mode steps on the kind provider (-provider kind); the local provider swaps the runtime with -runtime-steps")
	case o.steps != "" || o.versions != "" || o.runtimeSteps != "":
		return errors.New("-road is the whole plan: not with -steps, -versions or -runtime-steps")
	}
	steps, moves, err := plan.ParseRoad(o.road, plan.KindRuntime)
	if err != nil {
		return fmt.Errorf("-road: %w", err)
	}
	pl.steps, pl.runtimeMoves = steps, moves
	return nil
}
