// Command e2e is the real-node end-to-end test of kubelet-compat:
// in-place kubelet upgrades on a local node (containerd, runc, bridge CNI
// from Debian) must restart nothing with the patched kubelet, while the
// unpatched kubelet, as the negative control on the same corpus, restarts
// what upstream is known to restart. Run as root through `make e2e`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/leftovers"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/rootdir"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/scenario"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
)

// plans are the modes of `make e2e E2E=<mode>`.
var plans = map[string]struct {
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
}{
	"ci":   {steps: []scenario.Step{{From: "1.20.15", To: "1.21.14"}}, pods: 10, extras: true, controls: true},
	"full": {steps: []scenario.Step{{From: "1.18.19", To: "1.19.16"}, {From: "1.19.16", To: "1.20.15"}, {From: "1.20.15", To: "1.21.14"}}, pods: 30, extras: true, controls: true},
	"api":  {steps: []scenario.Step{{From: "1.20.15", To: "1.21.14"}}, pods: 10, controls: true, api: true},
	// The admission cases: pods upstream rejects when the new kubelet
	// re-admits them (node label removed, cpu reserved, --max-pods lowered).
	"admission": {steps: []scenario.Step{{From: "1.20.15", To: "1.21.14"}}, pods: 4, controls: true, api: true, admission: true},
	// The device-plugin case: pods using the e2e's device plugin's
	// extended resource across every step of the chain.
	"devices": {steps: []scenario.Step{{From: "1.18.19", To: "1.19.16"}, {From: "1.19.16", To: "1.20.15"}, {From: "1.20.15", To: "1.21.14"}}, pods: 2, controls: true, api: true, devices: true},
	"bench":   {steps: []scenario.Step{{From: "1.20.15", To: "1.21.14"}}, pods: 100, controls: true},
	// Any chain of matrix versions: -versions a,b,c (every a -> b, b -> c)
	// or -steps from:to,...; controls per step, then the patched chain.
	"steps": {pods: 10, controls: true},
	// The fleet roll-out on kind (issue 22 section 4): 1 control-plane node
	// and 4 workers rolled 1.30.14 -> 1.31.14 by system-upgrade-controller's
	// Plans at concurrency 1 and 2, the drain-based roll as the anchor (the
	// target's kubelet as released), and a roll whose gate fails on worker 3.
	"fleet": {steps: []scenario.Step{{From: "1.30.14", To: "1.31.14"}}, controls: true, fleet: true},
}

// releaseVersion is a version as the matrix names it (-control-plane-version).
var releaseVersion = regexp.MustCompile(`^1\.[0-9]+\.[0-9]+$`)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("e2e", flag.ContinueOnError)
	fl.SetOutput(stderr)
	mode := fl.String("mode", "ci", "ci (1.20 -> 1.21, 10 pods), steps (the chain of -versions or the -steps, 10 pods), full (1.18 -> 1.19 -> 1.20 -> 1.21, 30 pods), api (ci against etcd and kube-apiserver), admission (API pods upstream rejects at re-admission: node label removed, cpu reserved, --max-pods lowered), devices (API pods using the e2e's device plugin's extended resource, 1.18 -> 1.19 -> 1.20 -> 1.21), bench (1.20 -> 1.21, 100 pods), node (the node up and down), cleanup (undo what a killed run's journal under -root lists), or with -provider kind: images (build the kind images of -images-of's plan or of -steps/-versions) and versions (print, comma-separated, every version that plan needs built)")
	api := fl.Bool("api", false, "API mode for any mode: etcd and kube-apiserver, pods through the API")
	pods := fl.Int("pods", 0, "pods in the corpus (default: the mode's)")
	provider := fl.String("provider", "local", "local (the host is the node), or kind (kubeadm clusters of kind nodes: the Docker engine that answers, else a private dockerd from Debian)")
	output := fl.String("output", "_output", "the repository's _output: kubelets in <ver>/ and <ver>-unpatched/, the CLI")
	reportDir := fl.String("report-dir", "_output/e2e", "where report.json, report.txt and logs/ go")
	root := fl.String("root", "/var/lib/kubelet-compat-e2e", "private state directory of the node (removed afterwards)")
	nodeName := fl.String("node-name", "kc-e2e-node", "the kubelet's --hostname-override")
	stepsFlag := fl.String("steps", "", "override the mode's steps: from:to,from:to (e.g. 1.18.19:1.21.14); a step that goes down is a rollback (e.g. 1.31.14:1.30.14: the newer kubelet swapped back to the older one; static pods, local provider)")
	versionsFlag := fl.String("versions", "", "override the mode's steps with a chain: v1,v2,v3 means v1 -> v2 and v2 -> v3 (e.g. 1.21.14,1.22.17,1.23.17; a pair that goes down is a rollback step)")
	faults := fl.Bool("faults", false, "kind provider: also run the first step patched on a cluster of its own with faults (containerd restarted between the kubelets on worker 1, the new kubelet SIGKILLed during its first sync on worker 2); always in the modes with extras (ci, full)")
	patchedRuns := fl.Bool("patched", true, "run the patched chain (false: only the unpatched controls)")
	controlRuns := fl.Bool("controls", true, "run the mode's unpatched controls (false: only the patched chain, e.g. while a target's unpatched build is missing; -mode images: only what that chain needs, its .debs and its first node image)")
	syncFreq := fl.Duration("sync-frequency", 10*time.Second, "the kubelet's --sync-frequency")
	kindImages := fl.String("kind-images", "build", "kind provider: build (the images the plan needs, incrementally, before the clusters) or use (those the engine holds, e.g. docker load-ed from -mode images -save)")
	imagesOf := fl.String("images-of", "ci", "-mode images: the plan whose versions to build (ci, full)")
	save := fl.String("save", "", "-mode images: also write the node images to this docker-archive file (docker save), for machines with Docker but no build tools")
	admissionRace := fl.Bool("admission-race", false, "-mode admission: leave the node's pod capacity to the new kubelet's first status update, which races its first admissions (default: set through the API between the kubelets)")
	resizeGate := fl.Bool("resize-gate", false, "API mode: InPlacePodVerticalScaling=true on kube-apiserver and kubelet 1.27 .. 1.32 (alpha, off by default; on from 1.33), so the old API server keeps the resize pod's resizePolicy")
	resizePending := fl.String("resize-pending", "", "API mode, a step to 1.33+: raise the resize pod's cpu limit (100m -> 200m) through the new kube-apiserver (pods/resize) before the new kubelet starts: while-old-kubelet (kubelet vN still runs) or between-kubelets (none runs); the patched kubelet must then run that container, not restarted, at 200m (the control's outcome is reported)")
	readiness := fl.Bool("readiness", true, "API mode (not admission, devices), local provider: run kube-controller-manager (endpointslice only), pods with readiness probes of period 10 s and 30 s behind a Service, and watch every pod's Ready condition and the Service's EndpointSlices across each swap (patched: no Ready->NotReady, no endpoint removed before 1.35; a probe failing from the swap on: NotReady within a period); kind provider: watch the Ready condition of the workloads' pods and the EndpointSlices of their Services across each node's swap, counting each pod for its own node's swap (patched: no Ready->NotReady of a static pod at any step, and no Ready->NotReady, no endpoint removed for API pods before 1.35; the control reported); false: without them")
	cpVersion := fl.String("control-plane-version", "", "API mode (not admission, devices), local provider: hold kube-apiserver and kube-controller-manager at this version for every step instead of upgrading them to the step's (for a step whose control plane the harness cannot build; a kubelet newer than kube-apiserver is outside upstream's skew policy)")
	fleetRuns := fl.String("fleet-runs", strings.Join(kind.FleetRuns, ","), "-mode fleet: the rolls to run, each on a cluster of its own (concurrency-1, concurrency-2: our roll by system-upgrade-controller's Plans; drain: the anchor; naive: the second anchor, SUC's Plans with the released kubelets and no drain, the in-place roll k3s/rke2 users run; fault: the gate fails on worker 3)")
	pluginGap := fl.Duration("device-plugin-gap", 0, "-mode devices: stop the device plugin before each swap and start it again this long after the new kubelet started (0: it runs throughout)")
	recordAfterSwap := fl.String("record-after-swap", "auto", "local provider, static pods: after each swap's settling, `kubelet-compat record` against the NEW kubelet and three more sync periods before the snapshot (as an operator records after every swap), and in the patched chain a static pod born under each kubelet but the last, carried by the later steps; auto: on when a step goes down (a rollback), true, false")
	toGates := fl.String("to-feature-gates", "", "local provider: feature gates of the kubelet each step swaps in (patched and control), e.g. RestartAllContainersOnContainerExits=false: that target refuses the corpus's restartall pod (plans whose kubelets are all 1.36+), and both variants must lose it")
	cliPath := fl.String("cli", "", "local provider: the kubelet-compat the scenario runs (default: <output>/kubelet-compat), e.g. one built from an older commit as a negative control")
	if err := fl.Parse(args); err != nil {
		return 2
	}

	// Compared and used cleaned from here on; refused when it could be
	// anything but the e2e's own directory.
	rootPath, err := rootdir.Clean(*root)
	if err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return 2
	}
	if *mode == "cleanup" {
		return cleanupMode(rootPath, stdout, stderr)
	}

	pl, ok := plans[*mode]
	if *mode == "images" || *mode == "versions" {
		// The kind images only (make kind-images), or the versions they
		// need built: those of -images-of's plan, or of -steps.
		pl, ok = plans[*imagesOf]
		ok = ok && *provider == "kind"
	}
	if *mode == "node" {
		// Brings the local node up and down again: a quick check of the
		// provider and its cleanup, without kubelets.
		ok = *provider == "local"
		pl.steps = []scenario.Step{{}}
	}
	if !ok {
		fmt.Fprintf(stderr, "e2e: unknown mode %q (ci, steps, full, api, admission, devices, bench, fleet, node, cleanup; node with -provider local; fleet, images and versions with -provider kind)\n", *mode)
		return 2
	}
	if *pods > 0 {
		pl.pods = *pods
	}
	if *api {
		pl.api = true
	}
	if *stepsFlag != "" || *versionsFlag != "" {
		steps, err := plan.ParseSteps(*versionsFlag, *stepsFlag)
		if err != nil {
			fmt.Fprintf(stderr, "e2e: %v\n", err)
			return 2
		}
		pl.steps = steps
	}
	if len(pl.steps) == 0 && *mode != "node" {
		fmt.Fprintf(stderr, "e2e: mode %s needs -versions v1,v2,... or -steps from:to,...\n", *mode)
		return 2
	}
	if !*controlRuns {
		pl.controls = false
	}
	if !*patchedRuns {
		if !*controlRuns {
			fmt.Fprintln(stderr, "e2e: -patched=false and -controls=false leave nothing to run")
			return 2
		}
		pl.extras = false
		pl.controls = true
	}
	if *resizeGate && (!pl.api || *provider != "local") {
		fmt.Fprintln(stderr, "e2e: -resize-gate needs API mode (-mode api, or -api) on the local provider")
		return 2
	}
	if *resizePending != "" && (!pl.api || *provider != "local" || pl.admission || pl.devices) {
		fmt.Fprintln(stderr, "e2e: -resize-pending needs API mode (-mode api, or -api) on the local provider")
		return 2
	}
	if *resizePending != "" && *resizePending != scenario.ResizeWhileOldKubelet && *resizePending != scenario.ResizeBetweenKubelets {
		fmt.Fprintf(stderr, "e2e: -resize-pending is %s or %s\n", scenario.ResizeWhileOldKubelet, scenario.ResizeBetweenKubelets)
		return 2
	}
	if *cpVersion != "" && (!pl.api || *provider != "local" || pl.admission || pl.devices || !releaseVersion.MatchString(*cpVersion)) {
		fmt.Fprintln(stderr, "e2e: -control-plane-version 1.<minor>.<patch> needs API mode (-mode api, or -api) on the local provider, not admission or devices")
		return 2
	}
	if pl.fleet && *provider != "kind" && *mode == "fleet" {
		fmt.Fprintln(stderr, "e2e: -mode fleet runs on the kind provider only (-provider kind)")
		return 2
	}
	var rolls []string
	if pl.fleet && *mode == "fleet" {
		if rolls, err = kind.ParseFleetRuns(*fleetRuns); err != nil {
			fmt.Fprintf(stderr, "e2e: %v\n", err)
			return 2
		}
	}
	if pl.devices && *provider != "local" {
		fmt.Fprintln(stderr, "e2e: -mode devices runs on the local provider only")
		return 2
	}
	if *provider != "local" && *provider != "kind" {
		fmt.Fprintf(stderr, "e2e: unknown provider %q\n", *provider)
		return 2
	}
	repoRoot, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, "e2e:", err)
		return 1
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(repoRoot, p)
	}
	// One plan, carried out by the provider asked for.
	p := plan.Plan{Mode: *mode, Steps: pl.steps, Controls: planControls(*mode, pl.controls, *controlRuns), SkipPatched: !*patchedRuns, Extras: pl.extras,
		SyncFrequency: *syncFreq, Output: abs(*output), ReportDir: abs(*reportDir), Log: stdout}
	if p.RecordAfterSwap, err = plan.ParseRecordAfterSwap(*recordAfterSwap, p.Steps); err == nil && *cliPath != "" {
		*cliPath = abs(*cliPath)
	}
	if err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return 2
	}
	gates, err := toFeatureGates(*toGates, *provider)
	if err != nil {
		fmt.Fprintf(stderr, "e2e: -to-feature-gates: %v\n", err)
		return 2
	}
	var prov plan.Provider
	switch *provider {
	case "kind":
		if *cliPath != "" {
			fmt.Fprintln(stderr, "e2e: -cli is the local provider's (the kind node images carry the CLI the harness builds)")
			return 2
		}
		if *kindImages != "build" && *kindImages != "use" {
			fmt.Fprintf(stderr, "e2e: -kind-images must be build or use, not %q\n", *kindImages)
			return 2
		}
		p.Readiness = *readiness
		k := &kind.Runner{Root: rootPath, CacheDir: cachedir.Resolve(os.Getenv(cachedir.Env)), RepoRoot: repoRoot,
			BuildImages: *kindImages == "build", Faults: *patchedRuns && (pl.extras || *faults), Workers: 2, FleetRuns: rolls}
		if len(rolls) > 0 {
			k.Workers = kind.FleetWorkers
		}
		prov = k
	default:
		p.Readiness = *readiness && pl.api && !pl.admission && !pl.devices
		prov = &scenario.Local{Options: scenario.Options{Pods: pl.pods, Root: rootPath, RepoRoot: repoRoot, NodeName: *nodeName,
			API: pl.api, Admission: pl.admission, AdmissionRace: *admissionRace, Devices: pl.devices, DevicePluginGap: *pluginGap,
			ResizeGate: *resizeGate, ResizePending: *resizePending, ControlPlaneVersion: *cpVersion, CLI: *cliPath, ToFeatureGates: gates}}
	}
	if err := prov.Check(p); err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return 2
	}
	if *mode == "versions" {
		// make e2e-binaries-kind: every version the plan needs built.
		patched, unpatched, err := prov.Versions(p)
		if err != nil {
			fmt.Fprintf(stderr, "e2e: %v\n", err)
			return 2
		}
		fmt.Fprintln(stdout, strings.Join(plan.Union(patched, unpatched), ","))
		return 0
	}
	stack := cleanup.New(stdout)
	if *mode == "images" {
		return imagesMode(prov.(*kind.Runner), p, *save, stack, stdout, stderr)
	}
	if *mode == "node" {
		return nodeMode(prov.(*scenario.Local), p, stack, stdout, stderr)
	}
	var steps []string
	for _, s := range p.Steps {
		steps = append(steps, s.String())
	}
	fmt.Fprintf(stdout, "e2e %s: %s, %s\n", *mode, strings.Join(steps, ", "), prov.Describe(p))
	rep := &report.Report{Mode: *mode, Provider: prov.Name(), StartedAt: time.Now()}
	runErr, cleanErr := cleanup.Guard(stack, func(ctx context.Context) error { return prov.Run(ctx, p, stack, rep) })
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

// toFeatureGates reads -to-feature-gates: the local provider's only.
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
