// Package scenario drives the e2e: baselines on kubelet vN, `kubelet-compat
// record`, the swap to vN+1 (patched, or unpatched as the negative
// control), snapshots through the CRI and the assertions.
package scenario

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	osexec "os/exec"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/mounts"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/node"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/swap"
	"github.com/kubelet-compat/kubelet-compat/pkg/controlplane"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/proc"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// Step is one in-place upgrade: the plan's (package plan).
type Step = plan.Step

// Options configure a scenario: the plan (package plan; Readiness needs
// API here) and what the local node adds to it.
type Options struct {
	plan.Plan
	Pods     int
	Root     string
	RepoRoot string
	NodeName string
	// API runs the kubelets against etcd and the harness's kube-apiserver
	// (upgraded before the kubelet) with API pods instead of static pods.
	API bool
	// Admission runs the admission cases (admission.go) on each step
	// instead of the restart comparison; needs API.
	Admission bool
	// AdmissionRace leaves the node's pod capacity to the new kubelet's
	// first status update (it races the first admissions) instead of
	// setting it through the API between the two kubelets.
	AdmissionRace bool
	// Devices runs the device-plugin case (devices.go): controls per step,
	// then the patched chain; needs API.
	Devices bool
	// DevicePluginGap stops the device plugin before each swap and starts
	// it again that long after the new kubelet started (0: it runs
	// throughout).
	DevicePluginGap time.Duration
	// ResizeGate turns InPlacePodVerticalScaling on in kube-apiserver and
	// kubelet wherever it is off by default (corpus.ResizeFeatureGates), so
	// the resize pods keep their resizePolicy; needs API.
	ResizeGate bool
	// ResizePending resizes the resize pod's cpu limit through the new
	// kube-apiserver before the new kubelet starts (resize.go):
	// ResizeWhileOldKubelet or ResizeBetweenKubelets ("": no resize); needs
	// API and a step to 1.33 or later.
	ResizePending string
	// ControlPlaneVersion holds kube-apiserver and kube-controller-manager
	// at this version for every step instead of the step's ("": the
	// step's, upgraded before the kubelet): for a step whose control plane
	// the harness cannot build. A kubelet newer than kube-apiserver is
	// outside upstream's skew policy; the report says so.
	ControlPlaneVersion string
	// CLI is the kubelet-compat the scenario runs ("": <Output>/kubelet-compat),
	// e.g. one built from an older commit as a negative control of a fix.
	CLI string
	// ToFeatureGates are feature gates of the kubelet every step swaps in
	// (its target, patched and control alike), on top of the e2e's own:
	// e.g. RestartAllContainersOnContainerExits=false, which makes the
	// target refuse the corpus's restartall pod (declared.go).
	ToFeatureGates map[string]bool
}

// Scenario is one e2e run on one node.
type Scenario struct {
	opts  Options
	stack *cleanup.Stack
	node  *local.Node
	// host is node as the Node every provider implements.
	host *local.HostNode
	// betweenKubelets is a fault run between stopping the old kubelet
	// and starting the new one (nil: none).
	betweenKubelets func(context.Context) error
	// runtimeBetween, when set, is the containerd the next kubelet swap
	// starts between the two kubelets (-runtime-order one-window).
	runtimeBetween *local.RuntimeDist
	rt             *snapshot.Runtime
	corpus         *corpus.Corpus
	kubelet        *kubelet.Kubelet
	cp             *controlplane.ControlPlane
	phase          int
	// nextKubeletArgs are extra flags of the next kubelet started (the
	// admission cases lower --max-pods); cleared once used.
	nextKubeletArgs []string
	// helps caches what each kubelet binary's --help lists.
	helps map[string]*kubelet.Help
	// asTarget: the kubelets started now are a step's target (they get
	// Options.ToFeatureGates); false from a reset on.
	asTarget bool
	// refused are the pods (runtime names) the running target refuses
	// (declared.go): no longer waited for; cleared by a reset.
	refused map[string]bool
	// extraPods are pods created besides the corpus (admission cases,
	// readiness pods); waitReady covers them with the corpus.
	extraPods []corpus.Pod
	// readyPods are the readiness pods (Options.Readiness).
	readyPods []readyPod
	// plugin is the e2e's device plugin (mode devices), logging to
	// pluginLog.
	plugin    *proc.Process
	pluginBin string
	pluginLog string
	// patchedErrs are the patched steps that failed their assertions.
	patchedErrs []error
	Report      *report.Report
}

func (s *Scenario) logf(format string, args ...interface{}) {
	fmt.Fprintf(s.opts.Log, "%s e2e: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (s *Scenario) kubeletDir() string   { return filepath.Join(s.opts.Root, "kubelet") }
func (s *Scenario) manifestDir() string  { return filepath.Join(s.opts.Root, "manifests") }
func (s *Scenario) hostPathRoot() string { return filepath.Join(s.opts.Root, "hostpath") }
func (s *Scenario) logDir() string       { return filepath.Join(s.opts.ReportDir, "logs") }
func (s *Scenario) cli() string {
	if s.opts.CLI != "" {
		return s.opts.CLI
	}
	return filepath.Join(s.opts.Output, "kubelet-compat")
}

// Binary is the kubelet of a version, patched or as released.
func (s *Scenario) Binary(version string, patched bool) string {
	dir := version
	if !patched {
		dir += "-unpatched"
	}
	return filepath.Join(s.opts.Output, dir, "kubelet")
}

// APIServer is the harness's kube-apiserver of a version: the one built
// with the kubelet, else the one built as released (the patches change
// only the kubelet).
func (s *Scenario) APIServer(version string) string {
	p := filepath.Join(s.opts.Output, version, "kube-apiserver")
	if _, err := os.Stat(p); err != nil {
		if alt := filepath.Join(s.opts.Output, version+"-unpatched", "kube-apiserver"); fileExists(alt) {
			return alt
		}
	}
	return p
}

// ControlBaselineBinary is the kubelet a control's baseline runs on: the
// patched build of version (no compat file: it behaves as upstream), or,
// while that is not built yet, the build as released.
func (s *Scenario) ControlBaselineBinary(version string) string {
	if p := s.Binary(version, true); fileExists(p) || !fileExists(s.Binary(version, false)) {
		return p
	}
	return s.Binary(version, false)
}

// ControllerManager is the harness's kube-controller-manager of a version:
// the one built as released (the patches change only the kubelet), else
// the one built with the kubelet.
func (s *Scenario) ControllerManager(version string) string {
	p := filepath.Join(s.opts.Output, version+"-unpatched", "kube-controller-manager")
	if alt := filepath.Join(s.opts.Output, version, "kube-controller-manager"); !fileExists(p) && fileExists(alt) {
		return alt
	}
	return p
}

// cpVersion is the control plane's version for a step's kubelet version.
func (s *Scenario) cpVersion(version string) string {
	if s.opts.ControlPlaneVersion != "" {
		return s.opts.ControlPlaneVersion
	}
	return version
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Preflight checks that every binary the plan needs was built.
func Preflight(o Options) error {
	s := &Scenario{opts: o}
	need := map[string]bool{s.cli(): true}
	for i, st := range o.Steps {
		if i == 0 && !o.SkipPatched {
			need[s.Binary(st.From, true)] = true
		}
		if o.Controls {
			need[s.ControlBaselineBinary(st.From)] = true
		}
		if !o.SkipPatched {
			need[s.Binary(st.To, true)] = true
		}
		if o.Controls {
			need[s.Binary(st.To, false)] = true
		}
		if o.API {
			need[s.APIServer(s.cpVersion(st.From))] = true
			need[s.APIServer(s.cpVersion(st.To))] = true
		}
		if o.Readiness {
			need[s.ControllerManager(s.cpVersion(st.From))] = true
			need[s.ControllerManager(s.cpVersion(st.To))] = true
			if m := kubelet.Minor(s.cpVersion(st.To)); m < readinessMinMinor {
				return fmt.Errorf("step %s: the local provider runs the readiness watchers from kube-apiserver 1.%d on, not against 1.%d (kube-apiserver 1.20 and older serve EndpointSlices as discovery.k8s.io/v1beta1 only: the watchers read them, but not measured on this provider); -readiness=false runs without them", st, readinessMinMinor, m)
			}
		}
	}
	var missing []string
	for p := range need {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		return fmt.Errorf("missing binaries (make build VERSIONS=... [PATCHED=false]; go build -o _output/kubelet-compat ./cmd/kubelet-compat): %s", strings.Join(missing, ", "))
	}
	return nil
}

// Run runs the whole plan. Everything it starts is undone by stack.
func Run(ctx context.Context, o Options, stack *cleanup.Stack, rep *report.Report) error {
	if err := Preflight(o); err != nil {
		return err
	}
	s := &Scenario{opts: o, stack: stack, Report: rep}
	minMinor := minKubeletMinor(o.Steps)
	if len(o.RuntimeSteps) > 0 {
		minMinor = kubelet.Minor(o.RuntimeKubelet)
	}
	s.corpus = corpus.New(corpus.Options{Pods: o.Pods, NodeName: o.NodeName, HostPathRoot: s.hostPathRoot(), FirstHostPort: 19100, API: o.API, ResizeGate: o.ResizeGate,
		MinKubeletMinor: minMinor})
	// Logs of an earlier run would mix with this run's.
	if err := os.RemoveAll(s.logDir()); err != nil {
		return err
	}
	if err := os.MkdirAll(s.logDir(), 0o755); err != nil {
		return err
	}
	var extra []hostdeps.Path
	if o.API {
		extra = []hostdeps.Path{hostdeps.LocalAPI}
	}
	ln, err := local.Up(ctx, local.Options{Root: o.Root, LogDir: s.logDir(), RepoRoot: o.RepoRoot, Log: o.Log, ExtraPaths: extra}, stack)
	if err != nil {
		return fmt.Errorf("local node: %w", err)
	}
	s.node = ln
	s.host = &local.HostNode{Node: ln, NodeName: o.NodeName, Swap: s.swapKubelet}
	rt, err := s.host.Runtime(ctx)
	if err != nil {
		return err
	}
	s.rt = rt
	stack.Push("close the CRI connection", func(context.Context) error { return rt.Close() })
	stack.Push("remove the e2e's pods through the CRI", func(ctx context.Context) error {
		n, err := rt.RemoveAll(ctx, "")
		s.logf("cleanup: removed %d sandboxes", n)
		return err
	})
	if o.API {
		cpo := controlplane.Options{Dir: filepath.Join(o.Root, "controlplane"), LogDir: s.logDir(), APIServer: s.APIServer, Recorder: ln.Journal,
			FeatureGates: s.featureGates}
		if o.Readiness {
			cpo.ControllerManager, cpo.Controllers = s.ControllerManager, readyControllers
		}
		cp, err := controlplane.New(cpo)
		if err != nil {
			return err
		}
		s.cp = cp
		stack.Push("stop the control plane", func(ctx context.Context) error { return cp.Stop(ctx) })
	}
	stack.Push("stop the kubelet", func(ctx context.Context) error { return s.stopKubelet(ctx) })
	s.logf("corpus: %d pods, %d containers; node %s; sync frequency %s", len(s.corpus.Pods), s.corpus.Containers(), o.NodeName, o.SyncFrequency)
	if o.API && o.ControlPlaneVersion != "" {
		s.check(report.Check{Name: "control plane held at " + o.ControlPlaneVersion + " (-control-plane-version)", Passed: true,
			Detail: "kube-apiserver and kube-controller-manager " + o.ControlPlaneVersion + " for every step, not upgraded to the step's: a kubelet newer than kube-apiserver is outside upstream's skew policy"})
	}
	if o.ResizeGate {
		s.logf("-resize-gate: InPlacePodVerticalScaling=true on kube-apiserver and kubelet 1.27 .. 1.32 (on by default from 1.33)")
	}

	if len(o.RuntimeSteps) > 0 {
		return s.runtimeRuns(ctx)
	}
	if o.Devices {
		return s.devicesRuns(ctx)
	}
	if o.Admission {
		for _, st := range o.Steps {
			if err := s.admissionRuns(ctx, st); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range plan.Runs(o.Steps, o.Controls, o.SkipPatched) {
		if !r.Patched {
			if err := s.controlRun(ctx, r.Steps[0]); err != nil {
				return err
			}
			continue
		}
		if err := s.patchedChain(ctx); err != nil {
			return err
		}
	}
	return errors.Join(s.patchedErrs...)
}

// patchedChain is one baseline on the first version, then every step in
// place; with RecordAfterSwap a static pod is born under each kubelet but
// the last, and the later steps carry it. A step that fails its assertions
// goes to patchedErrs, the chain goes on.
func (s *Scenario) patchedChain(ctx context.Context) error {
	o := s.opts
	if err := s.baseline(ctx, o.Steps[0].From); err != nil {
		return err
	}
	for i, st := range o.Steps {
		run, err := s.swap(ctx, st, true, nil)
		if err != nil {
			return err
		}
		for _, e := range s.corpus.PatchedRollbackRestarts(kubelet.Minor(st.From), kubelet.Minor(st.To)) {
			run.Unrepresentable = append(run.Unrepresentable, report.Expectation{Pod: e.Pod, Reason: e.Reason})
		}
		report.AssertPatched(run)
		s.Report.Runs = append(s.Report.Runs, *run)
		if !run.Passed {
			s.patchedErrs = append(s.patchedErrs, fmt.Errorf("%s patched: %s", st, run.Verdict))
		}
		if o.RecordAfterSwap && i < len(o.Steps)-1 {
			if err := s.bornPod(ctx, st.To, i+1); err != nil {
				return err
			}
		}
	}
	if o.Extras && !o.API {
		return s.extras(ctx, o.Steps[len(o.Steps)-1])
	}
	return nil
}

// NodeOnly brings the local node up (containerd, images) and lists what
// the CRI sees; the caller's cleanup takes it down.
func NodeOnly(ctx context.Context, o Options, stack *cleanup.Stack) error {
	ln, err := local.Up(ctx, local.Options{Root: o.Root, LogDir: filepath.Join(o.ReportDir, "logs"), RepoRoot: o.RepoRoot, Log: o.Log}, stack)
	if err != nil {
		return err
	}
	rt, err := (&local.HostNode{Node: ln, NodeName: o.NodeName}).Runtime(ctx)
	if err != nil {
		return err
	}
	defer rt.Close()
	snap, err := rt.Take(ctx, corpus.Namespace)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "node is up: CRI answers, %d sandboxes of %s\n", len(snap.Sandboxes), corpus.Namespace)
	return nil
}

// controlRun is the negative control of one step: a fresh baseline on the
// old kubelet, then the UNPATCHED new one. On a rollback step the baseline
// runs on the newer kubelet (st.From) and the control is the older one as
// released, held to what upstream does going down (corpus.UpstreamRestarts).
func (s *Scenario) controlRun(ctx context.Context, st Step) error {
	patchedFrom := s.ControlBaselineBinary(st.From) == s.Binary(st.From, true)
	if !patchedFrom {
		s.logf("control %s: no patched %s built yet: the baseline runs on %s as released", st, st.From, st.From)
	}
	if err := s.baselineOn(ctx, st.From, patchedFrom); err != nil {
		return err
	}
	run, err := s.swap(ctx, st, false, nil)
	if err != nil {
		return err
	}
	s.judgeKubeletStep(run, st, false)
	s.Report.Runs = append(s.Report.Runs, *run)
	if !run.Passed {
		return fmt.Errorf("%s unpatched control: %s", st, run.Verdict)
	}
	return nil
}

// judgeKubeletStep holds a kubelet step's run as the chain's (patched: 0
// restarts) or the control's (what upstream restarts on that step).
func (s *Scenario) judgeKubeletStep(run *report.Run, st Step, patched bool) {
	if patched {
		report.AssertPatched(run)
		return
	}
	for _, e := range s.corpus.UpstreamRestarts(kubelet.Minor(st.From), kubelet.Minor(st.To)) {
		run.Expected = append(run.Expected, report.Expectation{Pod: e.Pod, Reason: e.Reason})
	}
	report.AssertControl(run)
}

// reset removes every pod and the kubelet's state: the next baseline
// starts from an empty node.
func (s *Scenario) reset(ctx context.Context) error {
	if err := s.stopKubelet(ctx); err != nil {
		return err
	}
	n, err := s.rt.RemoveAll(ctx, "")
	if err != nil {
		return err
	}
	s.extraPods = nil
	s.asTarget, s.refused = false, nil
	s.logf("reset: removed %d sandboxes, the kubelet's root dir, manifests, pod logs and the device checkpoint the run made", n)
	for _, d := range []string{s.kubeletDir(), s.manifestDir(), s.hostPathRoot()} {
		if err := mounts.UnmountUnder(d); err != nil {
			return err
		}
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	if err := s.node.RemoveDeviceCheckpoint(); err != nil {
		return err
	}
	return s.node.RemovePodLogs()
}

func (s *Scenario) stopKubelet(ctx context.Context) error {
	if s.kubelet == nil {
		return nil
	}
	err := s.kubelet.Stop(ctx)
	s.kubelet = nil
	return err
}

// swapKubelet is the local node's kubelet swap (local.HostNode.Swap): stop
// the running kubelet, run the fault injected between the two if any,
// start k.
func (s *Scenario) swapKubelet(ctx context.Context, k node.Kubelet) error {
	if err := s.stopKubelet(ctx); err != nil {
		return err
	}
	if s.betweenKubelets != nil {
		if err := s.betweenKubelets(ctx); err != nil {
			return err
		}
	}
	s.asTarget = true
	return s.startKubelet(k.Version, k.Patched)
}

func (s *Scenario) startKubelet(version string, patched bool) error {
	s.phase++
	cfg, err := s.kubeletConfig(version, patched)
	if err != nil {
		return err
	}
	if plan := cfg.Plan(); len(plan.Dropped) > 0 {
		s.logf("kubelet %s: dropped (not listed by its --help, no configuration field): %s", version, strings.Join(plan.Dropped, " "))
	}
	if len(cfg.FeatureGates) > 0 {
		s.logf("kubelet %s: feature gates %s (-resize-gate, -to-feature-gates)", version, kubelet.FeatureGatesFlag(cfg.FeatureGates))
	}
	if plan := cfg.Plan(); plan.Config != nil {
		s.logf("kubelet %s: flags it no longer lists set in %s: %s", version, cfg.ConfigFile, strings.Join(plan.Fields(), " "))
	}
	k, err := kubelet.Start(cfg)
	if err != nil {
		return err
	}
	s.kubelet = k
	s.nextKubeletArgs = nil
	s.logf("kubelet %s started, pid %d, log %s %s", cfg.Version, k.PID, k.LogFile, strings.Join(k.ExtraArgs, " "))
	return nil
}

// kubeletConfig is how startKubelet runs kubelet version (phase s.phase):
// a step's target (s.asTarget) also gets Options.ToFeatureGates.
func (s *Scenario) kubeletConfig(version string, patched bool) (kubelet.Config, error) {
	variant := "patched"
	if !patched {
		variant = "unpatched"
	}
	kubeconfig := ""
	if s.cp != nil {
		kubeconfig = s.cp.PKI.Kubeconfig()
	}
	binary := s.Binary(version, patched)
	help, err := s.help(binary)
	if err != nil {
		return kubelet.Config{}, err
	}
	gates := s.kubeletGates(kubelet.Minor(version))
	return kubelet.Config{
		Binary: binary, Version: version + " " + variant, Minor: kubelet.Minor(version), Help: help,
		ConfigFile: filepath.Join(s.opts.Root, "kubelet-config.json"),
		RootDir:    s.kubeletDir(), ManifestDir: s.manifestDir(), NodeName: s.opts.NodeName,
		RuntimeEndpoint: s.node.RuntimeEndpoint(), PauseImage: corpus.PauseImage, SyncFrequency: s.opts.SyncFrequency,
		Kubeconfig: kubeconfig, Recorder: s.node.Journal, ExtraArgs: s.nextKubeletArgs,
		LogFile:      filepath.Join(s.logDir(), fmt.Sprintf("%02d-kubelet-%s-%s.log", s.phase, version, variant)),
		FeatureGates: gates,
	}, nil
}

// featureGates are the gates of kube-apiserver and kubelet 1.minor (nil:
// none): only -resize-gate sets any.
func (s *Scenario) featureGates(minor int) map[string]bool {
	if !s.opts.ResizeGate {
		return nil
	}
	return corpus.ResizeFeatureGates(minor)
}

// kubeletGates are the feature gates of the kubelet 1.minor started now:
// -resize-gate's, and for a step's target (s.asTarget) -to-feature-gates'.
func (s *Scenario) kubeletGates(minor int) map[string]bool {
	gates := s.featureGates(minor)
	if s.asTarget {
		gates = kubelet.MergeFeatureGates(gates, s.opts.ToFeatureGates)
	}
	return gates
}

// help asks binary for its flags once per run.
func (s *Scenario) help(binary string) (*kubelet.Help, error) {
	if h, ok := s.helps[binary]; ok {
		return h, nil
	}
	h, err := kubelet.AskHelp(context.Background(), binary)
	if err != nil {
		return nil, err
	}
	if s.helps == nil {
		s.helps = map[string]*kubelet.Help{}
	}
	s.helps[binary] = &h
	return &h, nil
}

// baseline starts from an empty node: the corpus on kubelet version
// (patched build, no compat file: behaves as upstream), all pods running,
// ready and serving, and stable for one sync period.
func (s *Scenario) baseline(ctx context.Context, version string) error {
	return s.baselineOn(ctx, version, true)
}

// baselineOn is baseline on the patched build of version or, for a
// control whose patched build is missing, on the build as released.
func (s *Scenario) baselineOn(ctx context.Context, version string, patched bool) error {
	if err := s.reset(ctx); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	if s.cp != nil {
		if err := s.startControlPlane(ctx, s.cpVersion(version)); err != nil {
			return err
		}
	} else if err := s.corpus.Write(s.manifestDir()); err != nil {
		return err
	}
	if err := os.MkdirAll(s.manifestDir(), 0o755); err != nil {
		return err
	}
	if err := s.startKubelet(version, patched); err != nil {
		return err
	}
	start := time.Now()
	if _, err := s.waitReady(ctx, 4*time.Minute, false); err != nil {
		return fmt.Errorf("baseline on %s: %w", version, err)
	}
	s.logf("baseline on %s: all %d pods ready and serving after %.1fs; checking it is stable", version, len(s.pods()), time.Since(start).Seconds())
	return s.waitStable(ctx, "baseline on "+version)
}

// waitStable waits until one sync period passes with no restart and no
// pod recreated (four tries).
func (s *Scenario) waitStable(ctx context.Context, what string) error {
	for attempt := 0; ; attempt++ {
		a, err := s.rt.Take(ctx, corpus.Namespace)
		if err != nil {
			return err
		}
		if err := ctxtime.Sleep(ctx, s.opts.SyncFrequency+2*time.Second); err != nil {
			return err
		}
		b, err := s.rt.Take(ctx, corpus.Namespace)
		if err != nil {
			return err
		}
		d := snapshot.Compare(a, b)
		if d.Restarts == 0 && d.RecreatedPods == 0 && d.Pods == len(s.pods()) {
			return nil
		}
		if attempt == 3 {
			return fmt.Errorf("%s never became stable: %d restarts in one sync period (%s)", what, d.Restarts, strings.Join(d.RestartedPods, " "))
		}
		s.logf("%s: not stable yet (%d restarts: %s); waiting", what, d.Restarts, strings.Join(d.RestartedPods, " "))
	}
}

// Fault names.
const (
	FaultContainerdRestart = "containerd restart"
	FaultSigkillMidSync    = "SIGKILL mid-first-sync"
)

// swap records, snapshots, replaces the running kubelet with st.To and
// snapshots again after the window and three sync periods.
func (s *Scenario) swap(ctx context.Context, st Step, patched bool, faults []string) (*report.Run, error) {
	variant := report.Unpatched
	if patched {
		variant = report.Patched
	}
	// A rollback step (st.To older than st.From) runs the same way: the
	// running (newer) kubelet records, the older one takes over.
	run := &report.Run{Step: st.String(), From: st.From, To: st.To, Rollback: st.Rollback(), Variant: variant, Faults: faults}
	var refused *refusals
	var watch *readiness.Watch
	var pending *pendingResize
	h := swap.Hooks{
		Prepare: func(ctx context.Context, before *snapshot.Snapshot) error {
			refused = s.refusalsBefore(ctx, st, patched)
			var err error
			if watch, pending, err = s.beforeStop(ctx, st, before); err != nil {
				return err
			}
			s.logf("swap %s (%s): stopping kubelet %s", st, variant, st.From)
			s.setBetweenKubelets(st, faults, watch != nil, before, &pending)
			return nil
		},
		Started: func(ctx context.Context, _ time.Time) error {
			if has(faults, FaultSigkillMidSync) {
				return s.killMidFirstSync(ctx, st.To, patched)
			}
			return nil
		},
		Wait: func(ctx context.Context, _ *snapshot.Snapshot, _ time.Time) (time.Time, error) {
			return s.waitReady(ctx, 4*time.Minute, true)
		},
		WaitFailed: swap.FailPatched(patched, s.logf, fmt.Sprintf("after the swap to %s %s: ", st.To, variant)),
		Settle: func(ctx context.Context, window time.Duration) error {
			return s.settle(ctx, st, variant, window.Seconds())
		},
		Alive: func(ctx context.Context) error {
			if watch != nil {
				s.readinessObserve(ctx, watch, run, s.kubelet.Started)
				watch = nil
			}
			return s.kubelet.Alive()
		},
		// Whatever ends the swap early stops the informers.
		Cleanup: func() {
			if watch != nil {
				watch.End()
			}
		},
	}
	res, err := swap.Run(ctx, s.swapNode(), s.swapKubeletTo(node.Kubelet{Version: st.To, Patched: patched}), h)
	if err != nil {
		return nil, err
	}
	if err := s.serving(ctx, res.After); err != nil && patched {
		return nil, fmt.Errorf("pods not serving after the swap: %w", err)
	}
	fill(run, res)
	// A recreated pod may look ready while its old sandbox still runs: the
	// window also lasts until the last container this kubelet started.
	if last := lastStartAfter(res.After, res.Started); last.Sub(res.Started).Seconds() > run.WindowSeconds {
		run.WindowSeconds = last.Sub(res.Started).Seconds()
	}
	if run.KeptLogLines, err = s.kubelet.CountLines(kubelet.KeptMessage); err != nil {
		return nil, err
	}
	if pending != nil {
		s.check(pending.check(ctx, s, variant, res.After))
	}
	s.check(s.syncRecordCheck(st.String(), variant, recordedKubelet{PID: s.kubelet.PID, Patched: patched}, res.Before, res.After, run.KeptLogLines))
	s.check(s.compatMetricsCheck(ctx, st.String(), variant, recordedKubelet{PID: s.kubelet.PID, Patched: patched}))
	if s.cp != nil {
		s.check(s.keptEventsCheck(ctx, st.String(), variant, recordedKubelet{PID: s.kubelet.PID, Patched: patched}, res.Started))
	}
	s.refusalsAfter(refused, run)
	s.logf("swap %s (%s): %d pods, %d containers, %d restarts, %d pods recreated, %d pod UIDs changed, %d containers kept by the compat path", st, variant, run.Pods, run.Containers, run.Restarts, run.RecreatedPods, run.Diff.UIDChanges, run.KeptLogLines)
	return run, nil
}

// beforeStop is what runs between the picture before and the old
// kubelet's stop: as upstream's upgrade order, the control plane first,
// while the old kubelet keeps running against it (a supported skew); the
// readiness watchers; a resize the new kubelet must find pending.
func (s *Scenario) beforeStop(ctx context.Context, st Step, before *snapshot.Snapshot) (*readiness.Watch, *pendingResize, error) {
	if s.cp != nil && st.Rollback() {
		// Upstream downgrades the kubelet alone: a kubelet older than the
		// API server is a supported skew, an API server is not rolled back.
		s.logf("swap %s (rollback): the control plane stays at %s, the kubelet goes back to %s", st, s.cp.Version, st.To)
	} else if s.cp != nil && s.cpVersion(st.To) != s.cp.Version {
		s.logf("swap %s: upgrading kube-apiserver first (%s -> %s), kubelet %s still running", st, s.cp.Version, st.To, st.From)
		if err := s.cp.UpgradeAPIServer(ctx, st.To); err != nil {
			return nil, nil, err
		}
	} else if s.cp != nil {
		s.logf("swap %s: the control plane stays at %s (-control-plane-version)", st, s.cp.Version)
	}
	var watch *readiness.Watch
	var err error
	if s.cp != nil && s.opts.Readiness {
		if watch, err = s.readinessPrepare(ctx); err != nil {
			return nil, nil, err
		}
	}
	var pending *pendingResize
	if s.cp != nil && s.opts.ResizePending == ResizeWhileOldKubelet {
		if pending, err = s.resizeBeforeNewKubelet(ctx, st, before, ResizeWhileOldKubelet); err != nil {
			if watch != nil {
				watch.End()
			}
			return nil, nil, err
		}
	}
	return watch, pending, nil
}

// localNode is the host as the swap sequence's node.
type localNode struct{ s *Scenario }

func (n localNode) Record(ctx context.Context) error { return n.s.record(ctx) }

func (n localNode) Snapshot(ctx context.Context) (*snapshot.Snapshot, error) {
	return n.s.rt.Take(ctx, corpus.Namespace)
}

func (s *Scenario) swapNode() swap.Node { return localNode{s} }

// swapKubeletTo swaps the host's kubelet for k: the new kubelet's process
// start is the sequence's start.
func (s *Scenario) swapKubeletTo(k node.Kubelet) swap.Swapper {
	return func(ctx context.Context) (time.Time, error) {
		if err := s.host.SwapKubelet(ctx, k); err != nil {
			return time.Time{}, err
		}
		return s.kubelet.Started, nil
	}
}

// fill sets run's figures from what the sequence saw.
func fill(run *report.Run, res *swap.Result) {
	run.WindowSeconds = res.Window.Seconds()
	run.Diff = res.Diff
	run.Pods, run.Containers, run.Restarts, run.RecreatedPods = run.Diff.Pods, run.Diff.Containers, run.Diff.Restarts, run.Diff.RecreatedPods
}

func (s *Scenario) setBetweenKubelets(st Step, faults []string, watched bool, before *snapshot.Snapshot, pending **pendingResize) {
	s.betweenKubelets = nil
	if has(faults, FaultContainerdRestart) {
		s.betweenKubelets = func(ctx context.Context) error {
			s.logf("fault: restarting containerd between the two kubelets")
			return s.node.RestartContainerd(ctx)
		}
	}
	if to := s.runtimeBetween; to != nil {
		s.betweenKubelets = func(ctx context.Context) error {
			_, down, err := s.node.SwapRuntime(ctx, *to, false)
			s.logf("swap %s: containerd swapped for %s between the two kubelets (CRI down %.1fs)", st, to, down.Seconds())
			return err
		}
	}
	if watched {
		fault := s.betweenKubelets
		s.betweenKubelets = func(ctx context.Context) error {
			if fault != nil {
				if err := fault(ctx); err != nil {
					return err
				}
			}
			return s.failReadinessProbes()
		}
	}
	if s.cp != nil && s.opts.ResizePending == ResizeBetweenKubelets {
		fault := s.betweenKubelets
		s.betweenKubelets = func(ctx context.Context) error {
			if fault != nil {
				if err := fault(ctx); err != nil {
					return err
				}
			}
			var err error
			*pending, err = s.resizeBeforeNewKubelet(ctx, st, before, ResizeBetweenKubelets)
			return err
		}
	}
}

// settle waits three sync periods (and PLEG relists) after the window;
// with Plan.RecordAfterSwap it then runs the operators' record against the
// new kubelet and waits three sync periods again, so that a restart the
// running kubelet does because of that file (a patched kubelet reloads it)
// is in this step's snapshot.
func (s *Scenario) settle(ctx context.Context, st Step, variant string, window float64) error {
	settle := 3*s.opts.SyncFrequency + 3*time.Second
	s.logf("swap %s (%s): all pods synced and serving %.1fs after the kubelet started; waiting %s (three sync periods and PLEG relists)", st, variant, window, settle)
	if err := ctxtime.Sleep(ctx, settle); err != nil {
		return err
	}
	if !s.opts.RecordAfterSwap {
		return nil
	}
	out, err := s.cliRun(ctx, "record")
	if err != nil {
		return fmt.Errorf("kubelet-compat record after the swap to %s: %w: %s", st.To, err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "  "+corpus.Namespace+"/") { // not the static pods' list
			s.logf("record after the swap: %s", strings.TrimSpace(line))
		}
	}
	s.logf("swap %s (%s): recorded against kubelet %s; waiting %s (three sync periods) before the snapshot", st, variant, st.To, settle)
	return ctxtime.Sleep(ctx, settle)
}

// bornPod writes the manifest of one more static pod (kind web, no
// metadata.uid) while kubelet version runs, after step n
// (Plan.RecordAfterSwap): that kubelet creates its containers, the later
// steps' snapshots and diffs carry it (extraPods).
func (s *Scenario) bornPod(ctx context.Context, version string, n int) error {
	name := fmt.Sprintf("born-s%d-%s", n, strings.ReplaceAll(version, ".", "-"))
	p := corpus.WebPod(name, nil, corpus.Options{NodeName: s.opts.NodeName, HostPathRoot: s.hostPathRoot(), FirstHostPort: 19100})
	if err := corpus.WritePod(s.manifestDir(), p.Spec); err != nil {
		return err
	}
	s.extraPods = append(s.extraPods, p)
	start := time.Now()
	if _, err := s.waitReadyOf(ctx, 2*time.Minute, false, []corpus.Pod{p}); err != nil {
		return fmt.Errorf("pod %s born under kubelet %s: %w", p.RuntimeName, version, err)
	}
	s.logf("pod %s born under kubelet %s: running and serving after %.1fs; the later steps carry it", p.RuntimeName, version, time.Since(start).Seconds())
	return nil
}

// killMidFirstSync SIGKILLs the new kubelet as soon as its log shows the
// first pod sync, then starts it again.
func (s *Scenario) killMidFirstSync(ctx context.Context, version string, patched bool) error {
	refs := s.podRefs()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		synced, err := s.kubelet.SyncedPods(refs)
		if err != nil {
			return err
		}
		if len(synced) > 0 {
			s.logf("fault: SIGKILL kubelet pid %d after it synced %d of %d pods", s.kubelet.PID, len(synced), len(refs))
			if err := s.kubelet.Kill(ctx); err != nil {
				return err
			}
			s.kubelet = nil
			return s.startKubelet(version, patched)
		}
		if err := s.kubelet.Alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the kubelet synced no pod within 2 minutes")
		}
		if err := ctxtime.Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// pods are the corpus and the pods created after the baseline, but those
// the running target refuses.
func (s *Scenario) pods() []corpus.Pod {
	var out []corpus.Pod
	for _, p := range append(append([]corpus.Pod(nil), s.corpus.Pods...), s.extraPods...) {
		if !s.refused[p.RuntimeName] {
			out = append(out, p)
		}
	}
	return out
}

func (s *Scenario) podRefs() []kubelet.PodRef { return podRefs(s.pods()) }

func podRefs(pods []corpus.Pod) []kubelet.PodRef {
	var refs []kubelet.PodRef
	for _, p := range pods {
		refs = append(refs, kubelet.ParsePodRef(p.RuntimeName))
	}
	return refs
}

// record runs `kubelet-compat record` against the running kubelet.
func (s *Scenario) record(ctx context.Context) error {
	out, err := s.cliRun(ctx, "record")
	if err != nil {
		return fmt.Errorf("kubelet-compat record: %w: %s", err, out)
	}
	s.logf("%s", strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]))
	return nil
}

// cliRun runs the CLI with the node's flags and returns its combined output;
// an *exec.ExitError carries its exit code.
func (s *Scenario) cliRun(ctx context.Context, command string, extra ...string) (string, error) {
	args := []string{command, "--manifest-dir", s.manifestDir(), "--root-dir", s.kubeletDir(),
		"--runtime-endpoint", s.node.RuntimeEndpoint(), "--node-name", s.opts.NodeName}
	if s.kubelet != nil {
		// The CLI runs only the configured binary, which the process
		// must run: the node has no /usr/bin/kubelet.
		args = append(args, "--kubelet-pid", fmt.Sprint(s.kubelet.PID), "--kubelet-binary", s.kubelet.Binary)
	}
	return s.cliExec(ctx, append(args, extra...)...)
}

// cliExec runs the CLI with args alone (a minute at most) and returns its
// combined output; an *exec.ExitError carries its exit code.
func (s *Scenario) cliExec(ctx context.Context, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := osexec.CommandContext(cctx, s.cli(), args...).CombinedOutput()
	return string(out), err
}

// waitReady waits until every pod of the corpus has a ready sandbox with
// all its containers running and serves HTTP; with synced, also until the
// running kubelet has synced every pod. It returns when that was first seen.
func (s *Scenario) waitReady(ctx context.Context, timeout time.Duration, synced bool) (time.Time, error) {
	return s.waitReadyOf(ctx, timeout, synced, s.pods())
}

// waitReadyOf is waitReady for some pods only.
func (s *Scenario) waitReadyOf(ctx context.Context, timeout time.Duration, synced bool, pods []corpus.Pod) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	refs := podRefs(pods)
	lastReport := time.Now()
	for {
		var why string
		if err := s.kubelet.Alive(); err != nil {
			return time.Time{}, err
		}
		snap, err := s.rt.Take(ctx, corpus.Namespace)
		switch {
		case err != nil:
			why = err.Error() // containerd may be restarting
		default:
			why = notReady(snap, pods)
			if why == "" {
				if err := servingOf(ctx, snap, pods); err != nil {
					why = err.Error()
				}
			}
		}
		if why == "" && synced {
			done, err := s.kubelet.SyncedPods(refs)
			if err != nil {
				return time.Time{}, err
			}
			if len(done) < len(refs) {
				why = fmt.Sprintf("the kubelet has synced %d of %d pods", len(done), len(refs))
			}
		}
		if why == "" {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not ready after %s: %s", timeout, why)
		}
		if time.Since(lastReport) > 15*time.Second {
			s.logf("waiting: %s", why)
			lastReport = time.Now()
		}
		if err := ctxtime.Sleep(ctx, 200*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

// notReady says which pod is not running all its containers, or "".
func notReady(snap *snapshot.Snapshot, pods []corpus.Pod) string {
	var missing []string
	for _, p := range pods {
		if n := len(snap.Running(p.RuntimeName)); n != p.Containers {
			missing = append(missing, fmt.Sprintf("%s (%d/%d running)", p.RuntimeName, n, p.Containers))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	if len(missing) > 3 {
		return fmt.Sprintf("%d pods not running: %s ...", len(missing), strings.Join(missing[:3], ", "))
	}
	return "not running: " + strings.Join(missing, ", ")
}

var httpClient = &http.Client{Timeout: 2 * time.Second}

// serving GETs every pod's HTTP server (pod IP on the bridge, 127.0.0.1
// for hostNetwork pods).
func (s *Scenario) serving(ctx context.Context, snap *snapshot.Snapshot) error {
	return servingOf(ctx, snap, s.pods())
}

func servingOf(ctx context.Context, snap *snapshot.Snapshot, pods []corpus.Pod) error {
	for _, p := range pods {
		host := "127.0.0.1"
		if !p.HostNetwork {
			sb, ok := snap.ReadySandbox(p.RuntimeName)
			if !ok || sb.IP == "" {
				return fmt.Errorf("%s has no pod IP", p.RuntimeName)
			}
			host = sb.IP
		}
		url := fmt.Sprintf("http://%s:%d/", host, p.Port)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			return fmt.Errorf("%s not serving: %v", p.RuntimeName, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: GET %s: %s", p.RuntimeName, url, resp.Status)
		}
	}
	return nil
}

// lastStartAfter is the latest start of a running container started
// after t (t itself when none was).
func lastStartAfter(snap *snapshot.Snapshot, t time.Time) time.Time {
	last := t
	for _, c := range snap.Containers {
		if c.State == "RUNNING" && c.StartedAt.After(last) {
			last = c.StartedAt
		}
	}
	return last
}

func has(list []string, x string) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}
