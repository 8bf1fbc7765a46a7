package scenario

// The readiness watchers (API mode, Options.Readiness): whether a kubelet
// swap drops pods from Ready and their endpoints from a Service although
// nothing restarts. Kubelets before 1.35 report every container NotReady
// when they start, until its readiness probe passes again; patch 5 (and
// upstream from 1.35, KEP-4781) keeps a container that was Ready and still
// runs Ready until a probe fails.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

const (
	// readyControllers is kube-controller-manager's --controllers: only
	// the EndpointSlices of the readiness Service; nothing else of a
	// controller manager acts on the e2e's pods.
	readyControllers = "endpointslice"
	// ReadyService selects the readiness pods.
	ReadyService = "kc-e2e-ready"
	// readyServiceLabel is the Service's selector.
	readyServiceLabel = "e2e.kubelet-compat.io/service"
	// readyFile is what the readiness pods' probe GETs, in their hostPath
	// web root: the e2e removes it on the host to fail the probe.
	readyFile = "ready"
	// corpusGroup names the corpus pods (period 5 s, not behind the
	// Service) in the readiness report.
	corpusGroup = "corpus"
	// readinessMinMinor: the watchers read discovery.k8s.io/v1
	// EndpointSlices, served from kube-apiserver 1.21.
	readinessMinMinor = 21
	// upstreamKeepsReadyMinor: from 1.35 upstream keeps Ready across a
	// kubelet restart (KEP-4781): reported, not asserted.
	upstreamKeepsReadyMinor = 35
	// readyStatusSlack is the time allowed, past one probe period after
	// the new kubelet has synced every pod, for a failed probe to reach
	// the API (status manager, API write, watch).
	readyStatusSlack = 3 * time.Second
)

// readyProbePeriods are the readiness probe periods of the two groups.
var readyProbePeriods = []int32{10, 30}

// readyPod is one pod of the readiness workloads.
type readyPod struct {
	corpus.Pod
	Period int32
	// Failing: its probe's file is removed between the two kubelets.
	Failing bool
}

func readyGroupName(period int32, failing bool) string {
	if failing {
		return fmt.Sprintf("probefail-p%d", period)
	}
	return fmt.Sprintf("ready-p%d", period)
}

// readinessPods are, per probe period, two pods that keep passing their
// probe and one whose probe starts failing at the swap: web pods whose web
// root is a hostPath directory holding readyFile, probed by HTTP GET with
// failureThreshold 3 (a running kubelet tolerates 2 failures of a Ready
// container; a kubelet that keeps one Ready across its start tolerates none).
func readinessPods(o corpus.Options) []readyPod {
	var out []readyPod
	for _, period := range readyProbePeriods {
		for i, failing := range []bool{false, false, true} {
			name := fmt.Sprintf("%s-%d", readyGroupName(period, false), i)
			if failing {
				name = readyGroupName(period, true)
			}
			p := corpus.WebPod(name, nil, o)
			spec := p.Spec
			spec.Labels[readyServiceLabel] = ReadyService
			dirType := v1.HostPathDirectoryOrCreate
			spec.Spec.Volumes = append(spec.Spec.Volumes, v1.Volume{Name: "www", VolumeSource: v1.VolumeSource{
				HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(o.HostPathRoot, name), Type: &dirType}}})
			c := &spec.Spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: "www", MountPath: "/www"})
			c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/" + readyFile, Port: intstr.FromInt(8080)}},
				PeriodSeconds: period, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
			out = append(out, readyPod{Pod: p, Period: period, Failing: failing})
		}
	}
	return out
}

func (s *Scenario) readyFilePath(p readyPod) string {
	return filepath.Join(s.hostPathRoot(), p.Name, readyFile)
}

// createReadinessWorkloads writes every readiness pod's readyFile, creates
// the Service and the pods, and adds them to the pods the e2e waits for.
func (s *Scenario) createReadinessWorkloads(ctx context.Context, cs kubernetes.Interface) error {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ReadyService, Namespace: corpus.Namespace},
		Spec: v1.ServiceSpec{Selector: map[string]string{readyServiceLabel: ReadyService},
			Ports: []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt(8080)}}},
	}
	if _, err := cs.CoreV1().Services(corpus.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating service %s: %w", ReadyService, err)
	}
	s.readyPods = readinessPods(corpus.Options{NodeName: s.opts.NodeName, API: true, HostPathRoot: s.hostPathRoot()})
	for _, p := range s.readyPods {
		if err := os.MkdirAll(filepath.Dir(s.readyFilePath(p)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(s.readyFilePath(p), []byte("ready\n"), 0o644); err != nil {
			return err
		}
		if _, err := cs.CoreV1().Pods(corpus.Namespace).Create(ctx, p.Spec, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
		s.extraPods = append(s.extraPods, p.Pod)
	}
	return nil
}

// failReadinessProbes removes the failing pods' readyFile: their next
// probe gets 404.
func (s *Scenario) failReadinessProbes() error {
	for _, p := range s.readyPods {
		if p.Failing {
			if err := os.Remove(s.readyFilePath(p)); err != nil {
				return err
			}
		}
	}
	s.logf("readiness: removed %s of the failing-probe pods", readyFile)
	return nil
}

// readyWatch follows the pods' Ready conditions and the Service's
// EndpointSlices with informers (list, then watch: every change the API
// server stores is an event, resumed from the last resourceVersion when a
// watch ends) and, once begun, keeps a sample of both at every change.
type readyWatch struct {
	stop      chan struct{}
	mu        sync.Mutex
	pods      map[string]bool
	slices    map[string]map[string]bool // slice -> pod -> endpoint ready
	recording bool
	samples   []readySample
}

func startReadyWatch(ctx context.Context, cs kubernetes.Interface) (*readyWatch, error) {
	w := &readyWatch{stop: make(chan struct{}), pods: map[string]bool{}, slices: map[string]map[string]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(corpus.Namespace))
	podInf := f.Core().V1().Pods().Informer()
	podInf.AddEventHandler(w.handler(w.pod))
	sliceInf := f.Discovery().V1().EndpointSlices().Informer()
	sliceInf.AddEventHandler(w.handler(w.slice))
	f.Start(w.stop)
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(sctx.Done(), podInf.HasSynced, sliceInf.HasSynced) {
		close(w.stop)
		return nil, fmt.Errorf("readiness watchers: pods and EndpointSlices not listed within a minute")
	}
	return w, nil
}

// handler applies every event to the state with apply (under the lock; a
// deletion whose last state was missed counts as a deletion) and samples.
func (w *readyWatch) handler(apply func(obj interface{}, deleted bool)) cache.ResourceEventHandlerFuncs {
	on := func(obj interface{}, deleted bool) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj, deleted = t.Obj, true
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		apply(obj, deleted)
		w.sampleLocked()
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { on(obj, false) },
		UpdateFunc: func(_, obj interface{}) { on(obj, false) },
		DeleteFunc: func(obj interface{}) { on(obj, true) },
	}
}

func (w *readyWatch) pod(obj interface{}, deleted bool) {
	p, ok := obj.(*v1.Pod)
	switch {
	case !ok:
	case deleted:
		delete(w.pods, p.Name)
	default:
		w.pods[p.Name] = podReady(p)
	}
}

func (w *readyWatch) slice(obj interface{}, deleted bool) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	switch {
	case !ok || es.Labels[discoveryv1.LabelServiceName] != ReadyService:
	case deleted:
		delete(w.slices, es.Name)
	default:
		w.slices[es.Name] = sliceEndpoints(es)
	}
}

// sliceEndpoints: pod name -> its endpoint is ready. A nil ready
// condition means ready (the API's definition).
func sliceEndpoints(es *discoveryv1.EndpointSlice) map[string]bool {
	out := map[string]bool{}
	for _, ep := range es.Endpoints {
		if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" {
			continue
		}
		out[ep.TargetRef.Name] = out[ep.TargetRef.Name] || ep.Conditions.Ready == nil || *ep.Conditions.Ready
	}
	return out
}

// stateLocked is the current sample: a pod is serving when any slice has
// a ready endpoint for it.
func (w *readyWatch) stateLocked() readySample {
	smp := readySample{t: time.Now(), ready: map[string]bool{}, serving: map[string]bool{}}
	for name, r := range w.pods {
		smp.ready[name] = r
	}
	for _, eps := range w.slices {
		for name, r := range eps {
			smp.serving[name] = smp.serving[name] || r
		}
	}
	return smp
}

func (w *readyWatch) sampleLocked() {
	if w.recording {
		w.samples = append(w.samples, w.stateLocked())
	}
}

// current is the state now.
func (w *readyWatch) current() readySample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stateLocked()
}

// begin starts the samples from the state now.
func (w *readyWatch) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recording = true
	w.samples = []readySample{w.stateLocked()}
}

// end stops the informers and returns the samples, closed by the state
// at the end.
func (w *readyWatch) end() []readySample {
	close(w.stop)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.recording {
		w.samples = append(w.samples, w.stateLocked())
	}
	w.recording = false
	return w.samples
}

// waitState waits until want (given the current state) holds.
func (w *readyWatch) waitState(ctx context.Context, timeout time.Duration, want func(readySample) string) error {
	return waitUntil(ctx, timeout, 100*time.Millisecond, func() string { return want(w.current()) })
}

// settledState: every pod of the corpus and every passing readiness pod
// Ready, with a ready endpoint when it is behind the Service; with
// failed, the failing pods neither ("" when that holds, else why not).
func (s *Scenario) settledState(failed bool) func(readySample) string {
	return func(smp readySample) string {
		var why []string
		for _, p := range s.corpus.Pods {
			if !smp.ready[p.Name] {
				why = append(why, p.Name+" not Ready")
			}
		}
		for _, p := range s.readyPods {
			want := !(failed && p.Failing)
			if smp.ready[p.Name] != want {
				why = append(why, fmt.Sprintf("%s Ready %t", p.Name, smp.ready[p.Name]))
			}
			if smp.serving[p.Name] != want {
				why = append(why, fmt.Sprintf("%s endpoint ready %t", p.Name, smp.serving[p.Name]))
			}
		}
		sort.Strings(why)
		return strings.Join(why, ", ")
	}
}

// readinessGroups turns the samples into the report's groups: the corpus,
// then the readiness pods by period and failing probe. started is the new
// kubelet's start.
func readinessGroups(samples []readySample, c []corpus.Pod, rp []readyPod, started time.Time) []report.ReadyGroup {
	ready := readyWindows(samples)
	serving := windowsOf(samples, func(smp readySample) map[string]bool { return smp.serving })
	pod := func(name string) report.PodReadiness {
		r, e := ready[name], serving[name]
		pr := report.PodReadiness{Pod: name, Transitions: r.Drops, EndpointRemovals: e.Drops, LongestGapSeconds: r.LongestSeconds,
			LongestEndpointGapSeconds: e.LongestSeconds, FirstNotReadySeconds: -1, ReadyAtEnd: r.ReadyAtEnd, EndpointReadyAtEnd: e.ReadyAtEnd}
		if !r.FirstDrop.IsZero() {
			pr.FirstNotReadySeconds = r.FirstDrop.Sub(started).Seconds()
		}
		return pr
	}
	cg := report.ReadyGroup{Group: corpusGroup, PeriodSeconds: 5}
	for _, p := range c {
		cg.Pods = append(cg.Pods, pod(p.Name))
	}
	groups := []report.ReadyGroup{cg}
	for _, failing := range []bool{false, true} {
		for _, period := range readyProbePeriods {
			g := report.ReadyGroup{Group: readyGroupName(period, failing), PeriodSeconds: period, Failing: failing, Endpoints: true}
			for _, p := range rp {
				if p.Period == period && p.Failing == failing {
					g.Pods = append(g.Pods, pod(p.Name))
				}
			}
			groups = append(groups, g)
		}
	}
	return groups
}

// readinessChecks asserts the groups of one run to 1.toMinor: before
// upstreamKeepsReadyMinor, patched: no passing pod leaves Ready or its
// endpoint, and a failing pod is NotReady, its endpoint not ready, within
// one probe period after the kubelet synced every pod (synced, from its
// start); the control: each probe group shows the gap (a Ready -> NotReady
// and an endpoint removal). A failing pod must end NotReady with either
// kubelet. From upstreamKeepsReadyMinor on, every figure is reported only.
func readinessChecks(variant string, toMinor int, groups []report.ReadyGroup, synced float64) []report.Check {
	var checks []report.Check
	for _, g := range groups {
		sum := g.Sum()
		c := report.Check{Name: fmt.Sprintf("readiness %s %s (%d pods, probe period %ds)", variant, g.Group, len(g.Pods), g.PeriodSeconds), Passed: true}
		c.Detail = fmt.Sprintf("%d Ready->NotReady, longest NotReady %.1fs", sum.Transitions, sum.LongestGapSeconds)
		if g.Endpoints {
			c.Detail += fmt.Sprintf("; %d endpoint removals, longest without a ready endpoint %.1fs", sum.EndpointRemovals, sum.LongestEndpointGapSeconds)
		}
		var bad []string
		switch {
		case g.Failing:
			bound := synced + float64(g.PeriodSeconds) + readyStatusSlack.Seconds()
			for _, p := range g.Pods {
				c.Detail += fmt.Sprintf("; %s NotReady %s after the kubelet started", p.Pod, secondsOrNever(p.FirstNotReadySeconds))
				if p.ReadyAtEnd || p.EndpointReadyAtEnd {
					bad = append(bad, p.Pod+" Ready (or its endpoint ready) at the end although its probe fails")
				}
				if toMinor < upstreamKeepsReadyMinor && variant == report.Patched && (p.FirstNotReadySeconds < 0 || p.FirstNotReadySeconds > bound) {
					bad = append(bad, fmt.Sprintf("%s not NotReady within %.1fs (every pod synced at %.1fs + one period + %s)", p.Pod, bound, synced, readyStatusSlack))
				}
			}
		case toMinor >= upstreamKeepsReadyMinor:
			c.Detail += "; reported, not asserted (upstream keeps Ready across a kubelet restart from 1.35)"
		case variant == report.Patched:
			for _, p := range g.Pods {
				if p.Transitions > 0 || p.EndpointRemovals > 0 || !p.ReadyAtEnd {
					bad = append(bad, fmt.Sprintf("%s: %d Ready->NotReady, %d endpoint removals", p.Pod, p.Transitions, p.EndpointRemovals))
				}
			}
		case g.Group != corpusGroup:
			// The control must show upstream's gap, or this e2e could not
			// tell the patch from upstream.
			if sum.Transitions == 0 || sum.LongestGapSeconds <= 0 || (g.Endpoints && sum.EndpointRemovals == 0) {
				bad = append(bad, "no gap: this e2e could not tell the patch from upstream")
			}
		}
		if len(bad) > 0 {
			c.Passed = false
			c.Detail += "; FAIL: " + strings.Join(bad, "; ")
		}
		checks = append(checks, c)
	}
	return checks
}

func secondsOrNever(s float64) string {
	if s < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1fs", s)
}

// readinessPrepare runs after the control plane's upgrade, before the old
// kubelet stops: it waits until every pod is Ready with its endpoint,
// starts the watchers and makes the failing pods' probes fail between the
// two kubelets.
func (s *Scenario) readinessPrepare(ctx context.Context) (*readyWatch, error) {
	cs, err := s.cp.Client()
	if err != nil {
		return nil, err
	}
	w, err := startReadyWatch(ctx, cs)
	if err != nil {
		return nil, err
	}
	// The 30 s probes pass within a period of the baseline kubelet's
	// start; the controller manager was just restarted.
	if err := w.waitState(ctx, 2*time.Minute, s.settledState(false)); err != nil {
		w.end()
		return nil, fmt.Errorf("readiness: before the swap: %w", err)
	}
	w.begin()
	s.logf("readiness: watching %d pods and the EndpointSlices of service %s (every pod Ready, every endpoint ready)", len(s.pods()), ReadyService)
	return w, nil
}

// readinessObserve runs after the swap's settle wait: it waits until the
// pods are as they should end (passing pods Ready again, failing ones
// NotReady; the control's 30 s probes may need a period more), ends the
// watch and records the groups and checks on run.
func (s *Scenario) readinessObserve(ctx context.Context, w *readyWatch, run *report.Run, started time.Time) {
	longest := time.Duration(readyProbePeriods[len(readyProbePeriods)-1]) * time.Second
	// Every pod's first probe by the new kubelet falls inside what is
	// watched: one longest period (and the slack) after every pod synced.
	synced := time.Duration(run.WindowSeconds * float64(time.Second))
	if err := ctxtime.Sleep(ctx, time.Until(started.Add(synced+longest+readyStatusSlack))); err != nil {
		s.logf("readiness: %v", err)
	}
	if err := w.waitState(ctx, 2*longest+30*time.Second, s.settledState(true)); err != nil {
		s.logf("readiness: not settled: %v", err)
	}
	run.Readiness = readinessGroups(w.end(), s.corpus.Pods, s.readyPods, started)
	for _, c := range readinessChecks(run.Variant, kubelet.Minor(run.To), run.Readiness, run.WindowSeconds) {
		c.Name = run.Step + " " + c.Name
		s.check(c)
	}
}
