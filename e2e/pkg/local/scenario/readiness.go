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
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
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
	// readinessMinMinor: the local provider's readiness runs start at
	// kube-apiserver 1.21, where they were measured. Below it the shared
	// watchers read discovery.k8s.io/v1beta1 EndpointSlices (package
	// readiness: 1.20 serves no v1), as the kind provider does from its
	// 1.18 -> 1.19 step on; this provider has not run them there (its
	// kube-controller-manager 1.18 .. 1.20 with --controllers=endpointslice
	// untried), so it still refuses them.
	readinessMinMinor = 21
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

// passReadinessProbes writes the failing pods' readyFile back, so that a
// chain's next step starts with them Ready (the previous step made them
// fail from its swap on).
func (s *Scenario) passReadinessProbes() error {
	restored := 0
	for _, p := range s.readyPods {
		if !p.Failing {
			continue
		}
		if _, err := os.Stat(s.readyFilePath(p)); err == nil {
			continue
		}
		if err := os.WriteFile(s.readyFilePath(p), []byte("ready\n"), 0o644); err != nil {
			return err
		}
		restored++
	}
	if restored > 0 {
		s.logf("readiness: wrote %s of the failing-probe pods back: the step starts with them Ready", readyFile)
	}
	return nil
}

// settledState: every pod of the corpus and every passing readiness pod
// Ready, with a ready endpoint when it is behind the Service; with
// failed, the failing pods neither ("" when that holds, else why not).
func (s *Scenario) settledState(failed bool) func(readiness.Sample) string {
	return func(smp readiness.Sample) string {
		var why []string
		for _, p := range s.corpus.Pods {
			if !smp.Ready[p.Name] {
				why = append(why, p.Name+" not Ready")
			}
		}
		for _, p := range s.readyPods {
			want := !(failed && p.Failing)
			if smp.Ready[p.Name] != want {
				why = append(why, fmt.Sprintf("%s Ready %t", p.Name, smp.Ready[p.Name]))
			}
			if smp.Serving[p.Name] != want {
				why = append(why, fmt.Sprintf("%s endpoint ready %t", p.Name, smp.Serving[p.Name]))
			}
		}
		sort.Strings(why)
		return strings.Join(why, ", ")
	}
}

// readinessGroups turns the samples into the report's groups: the corpus,
// then the readiness pods by period and failing probe. started is the new
// kubelet's start.
func readinessGroups(samples []readiness.Sample, c []corpus.Pod, rp []readyPod, started time.Time) []report.ReadyGroup {
	pod := readiness.NewFigures(samples, started).Pod
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
				if toMinor < readiness.UpstreamKeepsReadyMinor && variant == report.Patched && (p.FirstNotReadySeconds < 0 || p.FirstNotReadySeconds > bound) {
					bad = append(bad, fmt.Sprintf("%s not NotReady within %.1fs (every pod synced at %.1fs + one period + %s)", p.Pod, bound, synced, readyStatusSlack))
				}
			}
		case toMinor >= readiness.UpstreamKeepsReadyMinor:
			c.Detail += "; reported, not asserted (upstream keeps Ready across a kubelet restart from 1.35)"
		case variant == report.Patched:
			bad = append(bad, readiness.NotKept(g.Pods)...)
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
func (s *Scenario) readinessPrepare(ctx context.Context) (*readiness.Watch, error) {
	if err := s.passReadinessProbes(); err != nil {
		return nil, err
	}
	cs, err := s.cp.Client()
	if err != nil {
		return nil, err
	}
	w, err := readiness.Start(ctx, cs, readiness.Options{Namespace: corpus.Namespace, Services: []string{ReadyService}})
	if err != nil {
		return nil, err
	}
	// The 30 s probes pass within a period of the baseline kubelet's
	// start; the controller manager was just restarted.
	if err := w.WaitState(ctx, 2*time.Minute, s.settledState(false)); err != nil {
		w.End()
		return nil, fmt.Errorf("readiness: before the swap: %w", err)
	}
	w.Begin()
	s.logf("readiness: watching %d pods and the EndpointSlices of service %s (every pod Ready, every endpoint ready)", len(s.pods()), ReadyService)
	return w, nil
}

// readinessObserve runs after the swap's settle wait: it waits until the
// pods are as they should end (passing pods Ready again, failing ones
// NotReady; the control's 30 s probes may need a period more), ends the
// watch and records the groups and checks on run.
func (s *Scenario) readinessObserve(ctx context.Context, w *readiness.Watch, run *report.Run, started time.Time) {
	longest := time.Duration(readyProbePeriods[len(readyProbePeriods)-1]) * time.Second
	// Every pod's first probe by the new kubelet falls inside what is
	// watched: one longest period (and the slack) after every pod synced.
	synced := time.Duration(run.WindowSeconds * float64(time.Second))
	if err := ctxtime.Sleep(ctx, time.Until(started.Add(synced+longest+readyStatusSlack))); err != nil {
		s.logf("readiness: %v", err)
	}
	if err := w.WaitState(ctx, 2*longest+30*time.Second, s.settledState(true)); err != nil {
		s.logf("readiness: not settled: %v", err)
	}
	run.Readiness = readinessGroups(w.End(), s.corpus.Pods, s.readyPods, started)
	for _, c := range readinessChecks(run.Variant, kubelet.Minor(run.To), run.Readiness, run.WindowSeconds) {
		c.Name = run.Step + " " + c.Name
		s.check(c)
	}
}
