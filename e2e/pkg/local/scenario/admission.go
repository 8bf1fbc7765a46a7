package scenario

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/node"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The admission cases (mode admission, API mode): pods that ran on kubelet
// vN and that vN+1 re-admits when it starts. Upstream rejects a pod whose
// node no longer matches its nodeSelector (NodeAffinity) or that no longer
// fits the node's allocatable (OutOf<resource>): the pod goes Failed and its
// containers are killed. The patched kubelet (patch 0004,
// kubeletcompat.Compat.AdmitDespite) admits a pod the compat file shows ran
// before it.
const (
	// KeepLabel is set on the node through the API after registration (no
	// kubelet owns it: --node-labels are applied only when the kubelet
	// creates its node object) and removed while kubelet vN runs.
	KeepLabel = "kc-e2e/keep"
	// AdmitMessage is patch 0004's log line for a pod admitted despite a
	// rejection.
	AdmitMessage = "Admitting a pod started before this kubelet"
	// fillPods are created after the selector pod, one per second (the
	// kubelet admits pods in creation order, to the second).
	fillPods = 3
)

// Admission cases, as reported.
const (
	CaseLabelRemoved = "node label removed before the swap"
	CaseMaxPods      = "--max-pods lowered at the swap"
	CaseCPU          = "--kube-reserved cpu raised at the swap"
	CaseBystander    = "fits and matches"
	CaseForged       = "bound while the kubelet was down, API status names another pod's listed container"
)

// admissionPlan is what one admission run creates after the baseline.
type admissionPlan struct {
	// cpu requests hogCPUMilli: it fits the node until the new kubelet
	// reserves all but allocatableCPUMilli.
	cpu      corpus.Pod
	selector corpus.Pod
	fill     []corpus.Pod
	// forgedBind and forgedNew never run on the node: while the kubelet is
	// down for its swap they are bound to it and an API user sets their
	// status to name a container that record listed for another pod
	// (forgedOwner). Both have the selector pod's nodeSelector. forgedBind
	// is created unbound right after the selector pod (no scheduler runs,
	// so no kubelet sees it) and bound through pods/binding; forgedNew is
	// created after record with spec.nodeName. Both kubelets must reject
	// them: the waiver rests on what the runtime runs for the pod's UID,
	// never on its API status.
	forgedBind, forgedNew corpus.Pod
	// maxPods is the new kubelet's --max-pods: the corpus and two more
	// pods. Created in the order selector, forgedBind, cpu, fill, upstream
	// rejects the selector pod and forgedBind for their nodeSelector alone,
	// the cpu pod for cpu alone and the newest fill pod for the pod count;
	// the patched kubelet, which counts every pod it keeps, meets each of
	// the three reasons first once (selector, cpu pod, then the fill pods).
	// forgedNew, created last, meets a full node in both: OutOfpods
	// (expectedAdmission).
	maxPods int
}

const (
	hogCPUMilli = 300
	// allocatableCPUMilli is the new kubelet's allocatable CPU: room for
	// the corpus and a fill pod (5m each), not for the cpu pod.
	allocatableCPUMilli = 100
)

func (s *Scenario) newAdmissionPlan() admissionPlan {
	o := corpus.Options{NodeName: s.opts.NodeName, API: true}
	sel := map[string]string{KeepLabel: "true"}
	p := admissionPlan{cpu: corpus.WebPod("keep-cpu", nil, o), selector: corpus.WebPod("keep-sel", sel, o), maxPods: len(s.corpus.Pods) + 2,
		forgedBind: corpus.WebPod(ForgedBindPod, sel, o), forgedNew: corpus.WebPod(ForgedNewPod, sel, o)}
	// Unbound until the swap: no kubelet sees it before.
	p.forgedBind.Spec.Spec.NodeName = ""
	p.cpu.Spec.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = *resource.NewMilliQuantity(hogCPUMilli, resource.DecimalSI)
	for i := 0; i < fillPods; i++ {
		p.fill = append(p.fill, corpus.WebPod(fmt.Sprintf("fill-%d", i), nil, o))
	}
	return p
}

// Forged-status pods, and the pods whose listed container their status
// names (forgedOwner).
const (
	ForgedBindPod = "forged-bind"
	ForgedNewPod  = "forged-new"
)

// forgedOwner is the pod whose container (listed by record) a forged
// pod's status names: the selector pod's for forgedBind (rejected
// NodeAffinity, like its owner upstream), the newest fill pod's for
// forgedNew (OutOfpods, like its owner upstream).
func (p admissionPlan) forgedOwner(forged string) string {
	if forged == ForgedBindPod {
		return p.selector.Name
	}
	return p.fill[len(p.fill)-1].Name
}

// forged are the forged-status pods, in creation order.
func (p admissionPlan) forged() []corpus.Pod { return []corpus.Pod{p.forgedBind, p.forgedNew} }

func isForged(name string) bool { return name == ForgedBindPod || name == ForgedNewPod }

// extra are the pods created after the baseline that run before the
// swap, in creation order.
func (p admissionPlan) extra() []corpus.Pod {
	return append([]corpus.Pod{p.selector, p.cpu}, p.fill...)
}

// order is every pod in the new kubelet's admission order (creation
// order: the corpus first, created together; forgedBind was created right
// after the selector pod, forgedNew last).
func (p admissionPlan) order(c *corpus.Corpus) []admitPod {
	var out []admitPod
	all := append(append([]corpus.Pod(nil), c.Pods...), p.selector, p.forgedBind, p.cpu)
	all = append(append(all, p.fill...), p.forgedNew)
	for _, x := range all {
		out = append(out, admitPod{Name: x.Name, CPUMilli: podCPUMilli(x.Spec), Selector: len(x.Spec.Spec.NodeSelector) > 0, Ran: !isForged(x.Name)})
	}
	return out
}

// ranBefore is order without the forged-status pods: the pods that ran.
func ranBefore(order []admitPod) []admitPod {
	var out []admitPod
	for _, p := range order {
		if p.Ran {
			out = append(out, p)
		}
	}
	return out
}

func names(pods []admitPod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// admitPod is a pod as the kubelet's admission weighs it.
type admitPod struct {
	Name     string
	CPUMilli int64
	// Selector: the pod's nodeSelector no longer matches the node.
	Selector bool
	// Ran: the pod ran before the swap (record listed its containers);
	// false for the forged-status pods.
	Ran bool
}

// podCPUMilli is the pod's CPU request: its containers' sum, or its
// largest init container's if more.
func podCPUMilli(p *v1.Pod) int64 {
	var sum, initMax int64
	for _, c := range p.Spec.Containers {
		sum += c.Resources.Requests.Cpu().MilliValue()
	}
	for _, c := range p.Spec.InitContainers {
		if m := c.Resources.Requests.Cpu().MilliValue(); m > initMax {
			initMax = m
		}
	}
	if initMax > sum {
		return initMax
	}
	return sum
}

// expectedAdmission is what kubelet 1.20/1.21 does when it re-admits the
// pods in order (creation order) with --max-pods maxPods and cpuMilli
// allocatable on a node without the selector pods' label: the resource fit
// comes first (pods, then cpu), then the node selector (NodeAffinity), and
// the first reason is the pod's. Upstream (patched false) a rejected pod is
// Failed and no longer counts. The patched kubelet admits a pod that ran
// before despite any of these reasons (the resource ones: first start
// after record) and counts it; a pod that did not run (the forged-status
// pods, whatever their API status says) is rejected as upstream. rejected
// maps the pods that end Failed to their reason, waived the pods admitted
// despite a reason to it.
func expectedAdmission(order []admitPod, maxPods int, cpuMilli int64, patched bool) (rejected, waived map[string]string) {
	rejected, waived = map[string]string{}, map[string]string{}
	admitted, used := 0, int64(0)
	for _, pod := range order {
		reason := ""
		switch {
		case admitted >= maxPods:
			reason = "OutOfpods"
		case used+pod.CPUMilli > cpuMilli:
			reason = "OutOfcpu"
		case pod.Selector:
			reason = "NodeAffinity"
		}
		switch {
		case reason == "":
		case patched && pod.Ran:
			waived[pod.Name] = reason
		default:
			rejected[pod.Name] = reason
			continue
		}
		admitted++
		used += pod.CPUMilli
	}
	return rejected, waived
}

// expectedRejections is upstream's rejections (expectedAdmission, not
// patched).
func expectedRejections(order []admitPod, maxPods int, cpuMilli int64) map[string]string {
	rejected, _ := expectedAdmission(order, maxPods, cpuMilli, false)
	return rejected
}

// caseOf names the case a pod stands for.
func caseOf(reason string) string {
	switch reason {
	case "NodeAffinity":
		return CaseLabelRemoved
	case "":
		return CaseBystander
	case "OutOfcpu":
		return CaseCPU
	}
	return CaseMaxPods
}

// admissionRuns runs the unpatched control (unless -controls=false) then
// the patched kubelet (unless -patched=false), each from its own baseline.
func (s *Scenario) admissionRuns(ctx context.Context, st Step) error {
	for _, patched := range []bool{false, true} {
		if (patched && s.opts.SkipPatched) || (!patched && !s.opts.Controls) {
			continue
		}
		if err := s.admissionRun(ctx, st, patched); err != nil {
			return err
		}
	}
	return nil
}

func (s *Scenario) admissionRun(ctx context.Context, st Step, patched bool) error {
	if err := s.baseline(ctx, st.From); err != nil {
		return err
	}
	cs, err := s.cp.Client()
	if err != nil {
		return err
	}
	plan := s.newAdmissionPlan()
	if err := s.createAdmissionPods(ctx, cs, plan); err != nil {
		return err
	}
	order := plan.order(s.corpus)
	// expect: upstream's rejections of the pods that ran; forged: what
	// this variant must do with the forged-status pods (rejected both
	// times, for the first reason each kubelet meets).
	expect := expectedRejections(order, plan.maxPods, allocatableCPUMilli)
	rejected, waived := expectedAdmission(order, plan.maxPods, allocatableCPUMilli, patched)
	forged := map[string]string{}
	for name, reason := range expect {
		if isForged(name) {
			forged[name] = reason
			delete(expect, name)
		}
	}
	if patched {
		forged = map[string]string{}
		for name, reason := range rejected {
			forged[name] = reason
		}
	}
	variant := report.Unpatched
	if patched {
		variant = report.Patched
	}
	run := &report.Run{Step: st.String() + " (admission)", From: st.From, To: st.To, Variant: variant}
	var before *snapshot.Snapshot
	var forgeries []forgery
	obs, err := s.observedSwap(ctx, cs, st, run, afterSwap{
		what:    "admission",
		back:    "settled",
		prepare: func(_ context.Context, b *snapshot.Snapshot) error { before = b; return nil },
		swap: func(ctx context.Context) (time.Time, error) {
			var err error
			forgeries, err = s.admissionSwap(ctx, cs, st, patched, plan, before)
			return s.kubelet.Started, err
		},
		wait: func(ctx context.Context) (time.Time, error) {
			return s.waitAdmitted(ctx, cs, patched, expect, forged)
		},
	})
	if err != nil {
		return err
	}
	run.KeptLogLines = len(obs.lines)
	ran := names(ranBefore(order))
	for _, name := range ran {
		c := admissionCheck(variant, name, expect[name], obs.pods[name], before, obs.after, obs.windows[name], obs.admitted[name])
		if variant == report.Patched && waived[name] != "" {
			c.Detail += "; the patched kubelet's first reason (expected): " + waived[name]
		}
		s.check(c)
	}
	for _, f := range forgeries {
		s.check(forgedCheck(variant, f, forged[f.Pod], obs, before))
	}
	s.check(readinessSummary(variant, ran, expect, obs.windows))
	for name, reason := range forged {
		run.Expected = append(run.Expected, report.Expectation{Pod: corpus.Namespace + "/" + name, Reason: "forged status, rejected at admission: " + reason})
	}
	s.assertAdmission(run, expect)
	s.Report.Runs = append(s.Report.Runs, *run)
	s.logf("admission %s (%s): %s", st, variant, run.Verdict)
	if !run.Passed {
		return fmt.Errorf("admission %s %s: %s", st, variant, run.Verdict)
	}
	return nil
}

// createAdmissionPods labels the node, then creates the selector pod, the
// unbound forged pod, the cpu pod and the fill pods one second apart and
// waits until those that are bound run and serve.
func (s *Scenario) createAdmissionPods(ctx context.Context, cs kubernetes.Interface, plan admissionPlan) error {
	if err := setNodeLabel(ctx, cs, s.opts.NodeName, `"true"`); err != nil {
		return err
	}
	create := []corpus.Pod{plan.selector, plan.forgedBind, plan.cpu}
	for _, p := range append(create, plan.fill...) {
		if err := ctxtime.Sleep(ctx, 1100*time.Millisecond); err != nil {
			return err
		}
		if _, err := cs.CoreV1().Pods(corpus.Namespace).Create(ctx, p.Spec, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
		if !isForged(p.Name) {
			s.extraPods = append(s.extraPods, p)
		}
	}
	if _, err := s.waitReady(ctx, 2*time.Minute, false); err != nil {
		return fmt.Errorf("admission pods on the baseline: %w", err)
	}
	// The Ready windows start from every pod Ready in the API.
	if err := waitAPIReady(ctx, cs, len(s.pods()), 2*time.Minute); err != nil {
		return err
	}
	s.logf("admission: node labelled %s=true; %s (nodeSelector), %s (%dm cpu) and %d fill pods run: %d pods on the node; %s created unbound (no scheduler: no kubelet sees it)",
		KeepLabel, plan.selector.Name, plan.cpu.Name, hogCPUMilli, len(plan.fill), len(s.pods()), plan.forgedBind.Name)
	return nil
}

// admissionSwap removes the node label while kubelet vN runs, upgrades
// kube-apiserver, then swaps the kubelet for st.To with --max-pods lowered.
// Between the two kubelets the node's pod capacity is set to that value
// through the API (what the new kubelet publishes in its first status
// update), so that admission does not race that update, and the
// forged-status pods are bound to the node (forgeStatuses).
func (s *Scenario) admissionSwap(ctx context.Context, cs kubernetes.Interface, st Step, patched bool, plan admissionPlan, before *snapshot.Snapshot) ([]forgery, error) {
	if err := setNodeLabel(ctx, cs, s.opts.NodeName, "null"); err != nil {
		return nil, err
	}
	s.logf("admission: removed the node label %s while kubelet %s runs", KeepLabel, st.From)
	if err := s.cp.UpgradeAPIServer(ctx, st.To); err != nil {
		return nil, err
	}
	capacity, err := nodeCPUMilli(ctx, cs, s.opts.NodeName)
	if err != nil {
		return nil, err
	}
	s.nextKubeletArgs = []string{fmt.Sprintf("--max-pods=%d", plan.maxPods), fmt.Sprintf("--kube-reserved=cpu=%dm", capacity-allocatableCPUMilli)}
	var forgeries []forgery
	s.betweenKubelets = func(ctx context.Context) error {
		if !s.opts.AdmissionRace {
			s.logf("admission: node capacity and allocatable pods = %d, allocatable cpu = %dm through the API", plan.maxPods, allocatableCPUMilli)
			if err := setNodeAllocatable(ctx, cs, s.opts.NodeName, plan.maxPods, allocatableCPUMilli); err != nil {
				return err
			}
		}
		var err error
		forgeries, err = s.forgeStatuses(ctx, cs, plan, before)
		return err
	}
	defer func() { s.betweenKubelets = nil }()
	if err := s.host.SwapKubelet(ctx, node.Kubelet{Version: st.To, Patched: patched}); err != nil {
		return nil, err
	}
	return forgeries, nil
}

// forgery is one forged-status pod as made by forgeStatuses.
type forgery struct {
	Pod string
	// Owner is the pod that runs ContainerID, which record listed.
	Owner       string
	ContainerID string
	// How the pod reached the node.
	How string
}

// forgeStatuses runs while no kubelet runs, after record: it binds the
// forged-status pods to the node (forgedBind through pods/binding,
// forgedNew created with spec.nodeName) and sets each one's status through
// the API (UpdateStatus, what any user with pods/status rights can do) to
// a copy of its owner's: phase Running, Ready, and a container status
// naming the owner's running container, which the compat file lists. It
// fails, before any kubelet sees them, when the file does not list that
// container or the stored status does not name it.
func (s *Scenario) forgeStatuses(ctx context.Context, cs kubernetes.Interface, plan admissionPlan, before *snapshot.Snapshot) ([]forgery, error) {
	file, _, err := kubeletcompat.ReadFile(kubeletcompat.DefaultPath(s.kubeletDir()), os.Getuid())
	if err != nil {
		return nil, fmt.Errorf("reading the compat file record wrote: %w", err)
	}
	listed := map[string]bool{}
	for _, c := range file.Containers {
		listed[c.ID] = true
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pods := cs.CoreV1().Pods(corpus.Namespace)
	var out []forgery
	for _, p := range plan.forged() {
		f := forgery{Pod: p.Name, Owner: plan.forgedOwner(p.Name)}
		for _, c := range before.Running(corpus.Namespace + "/" + f.Owner) {
			f.ContainerID = c.ID
		}
		if f.ContainerID == "" || !listed[f.ContainerID] {
			return nil, fmt.Errorf("forged status of %s: the compat file does not list a running container of %s (%q)", f.Pod, f.Owner, f.ContainerID)
		}
		owner, err := pods.Get(cctx, f.Owner, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if !statusNames(owner.Status, f.ContainerID) {
			return nil, fmt.Errorf("forged status of %s: %s's API status does not name its container %s", f.Pod, f.Owner, f.ContainerID)
		}
		if p.Name == ForgedBindPod {
			b := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: corpus.Namespace},
				Target: v1.ObjectReference{Kind: "Node", Name: s.opts.NodeName}}
			if err := pods.Bind(cctx, b, metav1.CreateOptions{}); err != nil {
				return nil, fmt.Errorf("binding %s to %s: %w", p.Name, s.opts.NodeName, err)
			}
			f.How = "created unbound before record, bound through pods/binding while no kubelet ran"
		} else {
			if _, err := pods.Create(cctx, p.Spec, metav1.CreateOptions{}); err != nil {
				return nil, fmt.Errorf("creating pod %s: %w", p.Name, err)
			}
			f.How = "created after record with spec.nodeName while no kubelet ran"
		}
		pod, err := pods.Get(cctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		pod.Status = *owner.Status.DeepCopy()
		if _, err := pods.UpdateStatus(cctx, pod, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("setting the forged status of %s: %w", p.Name, err)
		}
		stored, err := pods.Get(cctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if !statusNames(stored.Status, f.ContainerID) || stored.Spec.NodeName != s.opts.NodeName {
			return nil, fmt.Errorf("forged status of %s: the API server stored node %q, phase %s, not naming %s", p.Name, stored.Spec.NodeName, stored.Status.Phase, f.ContainerID)
		}
		s.logf("admission: %s %s; its API status (phase %s, Ready %t) names container %s of %s, which record listed", p.Name, f.How, stored.Status.Phase, readiness.PodReady(stored), shortID(f.ContainerID), f.Owner)
		out = append(out, f)
	}
	return out, nil
}

// statusNames reports whether a pod status names the container ID
// ("<runtime>://<id>").
func statusNames(st v1.PodStatus, id string) bool {
	for _, list := range [][]v1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for _, c := range list {
			if _, cid, ok := strings.Cut(c.ContainerID, "://"); ok && cid == id {
				return true
			}
		}
	}
	return false
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// waitAdmitted waits, patched, until every pod that ran runs, serves and
// was synced, then (up to a minute; a miss is left to the checks) until
// the forged-status pods are Failed with their reason; unpatched, until
// every expected pod and forged pod is Failed with its reason and has no
// running container, and the others run, serve and were synced.
func (s *Scenario) waitAdmitted(ctx context.Context, cs kubernetes.Interface, patched bool, expect, forged map[string]string) (time.Time, error) {
	if patched {
		t, err := s.waitReady(ctx, 3*time.Minute, true)
		if err != nil {
			return t, err
		}
		if err := s.waitRejected(ctx, cs, forged, time.Minute); err != nil {
			s.logf("admission: %v", err)
		}
		return t, nil
	}
	var kept []corpus.Pod
	for _, p := range s.pods() {
		if expect[p.Name] == "" {
			kept = append(kept, p)
		}
	}
	all := map[string]string{}
	for _, m := range []map[string]string{expect, forged} {
		for k, v := range m {
			all[k] = v
		}
	}
	if err := s.waitRejected(ctx, cs, all, 3*time.Minute); err != nil {
		return time.Time{}, err
	}
	return s.waitReadyOf(ctx, 3*time.Minute, true, kept)
}

// waitRejected waits until every pod of expect is Failed with its reason
// and has no running container.
func (s *Scenario) waitRejected(ctx context.Context, cs kubernetes.Interface, expect map[string]string, timeout time.Duration) error {
	err := waitUntil(ctx, timeout, 250*time.Millisecond, func() string {
		why, err := s.rejectedYet(ctx, cs, expect)
		if err != nil {
			return err.Error()
		}
		return why
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("rejections not seen %w", err)
	}
	return err
}

// waitUntil asks why every interval until it says nothing ("": done),
// for timeout at most; the error then says why not, after how long.
func waitUntil(ctx context.Context, timeout, every time.Duration, why func() string) error {
	deadline := time.Now().Add(timeout)
	for {
		w := why()
		if w == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %s", timeout, w)
		}
		if err := ctxtime.Sleep(ctx, every); err != nil {
			return err
		}
	}
}

// rejectedYet says which expected rejection is not seen yet, or "".
func (s *Scenario) rejectedYet(ctx context.Context, cs kubernetes.Interface, expect map[string]string) (string, error) {
	pods, err := podsByName(ctx, cs)
	if err != nil {
		return "", err
	}
	snap, err := s.rt.Take(ctx, corpus.Namespace)
	if err != nil {
		return "", err
	}
	var missing []string
	for name, reason := range expect {
		p := pods[name]
		switch {
		case p == nil:
			missing = append(missing, name+" is gone from the API")
		case p.Status.Phase != v1.PodFailed || p.Status.Reason != reason:
			missing = append(missing, fmt.Sprintf("%s is %s/%s, not Failed/%s", name, p.Status.Phase, p.Status.Reason, reason))
		case len(snap.Running(corpus.Namespace+"/"+name)) > 0:
			missing = append(missing, name+" still has running containers")
		}
	}
	sort.Strings(missing)
	return strings.Join(missing, "; "), nil
}

// admissionCheck is one pod's outcome: unpatched, an expected rejection
// must be Failed with its reason and its containers gone; patched, every
// pod runs its containers of before, with 0 restarts.
func admissionCheck(variant, name, reason string, pod *v1.Pod, before, after *snapshot.Snapshot, w readiness.Window, logged string) report.Check {
	c := report.Check{Name: fmt.Sprintf("admission %s: %s (%s)", variant, name, caseOf(reason))}
	rt := corpus.Namespace + "/" + name
	same := sameContainers(rt, before, after)
	running := len(after.Running(rt))
	phase, why, restarts := "missing", "", int32(-1)
	if pod != nil {
		phase, why = string(pod.Status.Phase), pod.Status.Reason
		restarts = 0
		for _, st := range pod.Status.ContainerStatuses {
			restarts += st.RestartCount
		}
	}
	switch {
	case variant == report.Unpatched && reason != "":
		c.Passed = phase == string(v1.PodFailed) && why == reason && running == 0
	case variant == report.Patched && reason != "":
		// The kubelet must say it admitted the pod despite a rejection.
		c.Passed = phase == string(v1.PodRunning) && same && restarts == 0 && w.ReadyAtEnd && logged != ""
	default:
		c.Passed = phase == string(v1.PodRunning) && same && restarts == 0 && w.ReadyAtEnd
	}
	c.Detail = fmt.Sprintf("upstream expects %s; phase %s", orDash(reason), phase)
	if why != "" {
		c.Detail += " (" + why + ")"
	}
	c.Detail += fmt.Sprintf(", running containers %d, same containers as before: %t, restarts %d; Ready False %.1fs across the swap%s",
		running, same, restarts, w.NotReadySeconds, map[bool]string{true: "", false: ", not Ready at the end"}[w.ReadyAtEnd])
	if logged != "" {
		c.Detail += "; kubelet: admitted despite " + logged
	}
	return c
}

// forgedCheck is one forged-status pod's outcome, the same for both
// kubelets: Failed with the first reason the kubelet meets, no sandbox in
// the runtime, no waiver logged for it; patched, the pod whose listed
// container its status names is still kept (Running, same containers,
// admitted despite its rejection).
func forgedCheck(variant string, f forgery, reason string, obs *swapObservation, before *snapshot.Snapshot) report.Check {
	c := report.Check{Name: fmt.Sprintf("admission %s: %s (%s)", variant, f.Pod, CaseForged)}
	rt := corpus.Namespace + "/" + f.Pod
	sandboxes := 0
	for _, sb := range obs.after.Sandboxes {
		if sb.Pod == rt {
			sandboxes++
		}
	}
	phase, why := "missing", ""
	if p := obs.pods[f.Pod]; p != nil {
		phase, why = string(p.Status.Phase), p.Status.Reason
	}
	logged := obs.admitted[f.Pod]
	ownerPhase := "missing"
	if p := obs.pods[f.Owner]; p != nil {
		ownerPhase = string(p.Status.Phase)
	}
	ownerSame := sameContainers(corpus.Namespace+"/"+f.Owner, before, obs.after)
	ownerKept := ownerPhase == string(v1.PodRunning) && ownerSame && obs.admitted[f.Owner] != ""
	c.Passed = phase == string(v1.PodFailed) && why == reason && sandboxes == 0 && logged == "" && (variant != report.Patched || ownerKept)
	c.Detail = fmt.Sprintf("%s; its API status named container %s of %s (listed by record); expected Failed (%s); phase %s", f.How, shortID(f.ContainerID), f.Owner, reason, phase)
	if why != "" {
		c.Detail += " (" + why + ")"
	}
	c.Detail += fmt.Sprintf(", sandboxes in the runtime %d", sandboxes)
	if logged != "" {
		c.Detail += "; kubelet: ADMITTED despite " + logged + " (" + logValue(logLineOf(obs.lines, f.Pod), "startedBefore") + ")"
	}
	c.Detail += fmt.Sprintf("; %s: %s, same containers as before: %t", f.Owner, ownerPhase, ownerSame)
	if r := obs.admitted[f.Owner]; r != "" {
		c.Detail += ", admitted despite " + r + " (" + logValue(logLineOf(obs.lines, f.Owner), "startedBefore") + ")"
	}
	return c
}

// logLineOf is the AdmitMessage line naming the pod, or "".
func logLineOf(lines []string, name string) string {
	for _, l := range lines {
		if logValue(l, "pod") == corpus.Namespace+"/"+name {
			return l
		}
	}
	return ""
}

// assertAdmission sets the run's verdict: unpatched, every expected
// rejection happened (else the e2e cannot tell the patch from upstream);
// patched, no restart, nothing recreated, and one admission log line per
// pod upstream rejects.
func (s *Scenario) assertAdmission(run *report.Run, expect map[string]string) {
	failed, forgedFailed := 0, 0
	for _, c := range s.Report.Checks {
		if strings.HasPrefix(c.Name, "admission "+run.Variant+":") && !c.Passed {
			if strings.HasSuffix(c.Name, "("+CaseForged+")") {
				forgedFailed++
				continue
			}
			failed++
		}
	}
	if run.Variant == report.Unpatched {
		for name, reason := range expect {
			run.Expected = append(run.Expected, report.Expectation{Pod: corpus.Namespace + "/" + name, Reason: "rejected at re-admission: " + reason})
		}
		sort.Slice(run.Expected, func(i, j int) bool { return run.Expected[i].Pod < run.Expected[j].Pod })
		run.Passed = failed == 0 && forgedFailed == 0
		run.Verdict = fmt.Sprintf("pass: rejected as upstream (%d pods Failed, containers killed; %d forged-status pods rejected)", len(expect), forgedRejected(run))
		switch {
		case failed > 0:
			run.Verdict = fmt.Sprintf("FAIL: %d pods not as upstream: this e2e could not tell the patch from upstream", failed)
		case forgedFailed > 0:
			run.Verdict = fmt.Sprintf("FAIL: %d forged-status pods not rejected as upstream", forgedFailed)
		}
		return
	}
	report.AssertPatched(run)
	if failed > 0 || forgedFailed > 0 || run.KeptLogLines < len(expect) {
		run.Passed = false
		run.Verdict = fmt.Sprintf("FAIL: %d pods not kept, %d forged-status pods not rejected, %d %q lines for %d rejections upstream; %s", failed, forgedFailed, run.KeptLogLines, AdmitMessage, len(expect), run.Verdict)
		return
	}
	run.Verdict = fmt.Sprintf("%s, %d pods admitted despite a rejection (log lines), %d forged-status pods rejected", run.Verdict, run.KeptLogLines, forgedRejected(run))
}

// forgedRejected counts the run's expectations about forged-status pods
// (each one asserted by its forgedCheck).
func forgedRejected(run *report.Run) int {
	n := 0
	for _, e := range run.Expected {
		if strings.HasPrefix(e.Reason, "forged status") {
			n++
		}
	}
	return n
}

// readinessSummary reports the Ready windows of one run: how long the pods
// the kubelet ran on were not Ready across the swap (longest and mean), and
// how many were never Ready again. Reported, not asserted (it passes when
// every pod was sampled).
func readinessSummary(variant string, order []string, expect map[string]string, windows map[string]readiness.Window) report.Check {
	c := report.Check{Name: "admission " + variant + ": Ready False across the swap (API polled every 250 ms)", Passed: true}
	var kept, longest, sum float64
	var notBack, missing []string
	for _, name := range order {
		w, ok := windows[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case !w.ReadyAtEnd:
			notBack = append(notBack, fmt.Sprintf("%s (%.1fs, %s)", name, w.NotReadySeconds, orDash(expect[name])))
		default:
			kept++
			sum += w.NotReadySeconds
			if w.NotReadySeconds > longest {
				longest = w.NotReadySeconds
			}
		}
	}
	mean := 0.0
	if kept > 0 {
		mean = sum / kept
	}
	c.Detail = fmt.Sprintf("%d pods Ready again: longest %.1fs, mean %.1fs; never Ready again: %d", int(kept), longest, mean, len(notBack))
	if len(notBack) > 0 {
		c.Detail += " (" + strings.Join(notBack, ", ") + ")"
	}
	if len(missing) > 0 {
		c.Passed = false
		c.Detail += "; never sampled: " + strings.Join(missing, ", ")
	}
	return c
}

func orDash(s string) string {
	if s == "" {
		return "admission"
	}
	return "rejection " + s
}

// sameContainers: the pod runs after exactly the containers (ID, attempt)
// it ran before, and at least one.
func sameContainers(pod string, before, after *snapshot.Snapshot) bool {
	b, a := before.Running(pod), after.Running(pod)
	if len(b) == 0 || len(a) != len(b) {
		return false
	}
	for name, bc := range b {
		ac, ok := a[name]
		if !ok || ac.ID != bc.ID || ac.Attempt != bc.Attempt {
			return false
		}
	}
	return true
}

func podsByName(ctx context.Context, cs kubernetes.Interface) (map[string]*v1.Pod, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := cs.CoreV1().Pods(corpus.Namespace).List(cctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]*v1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// setNodeLabel sets KeepLabel to a JSON value ("null" removes it).
func setNodeLabel(ctx context.Context, cs kubernetes.Interface, nodeName, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, KeepLabel, value)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Nodes().Patch(cctx, nodeName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("node label %s=%s: %w", KeepLabel, value, err)
	}
	return nil
}

// nodeCPUMilli is the node's CPU capacity.
func nodeCPUMilli(ctx context.Context, cs kubernetes.Interface, nodeName string) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := cs.CoreV1().Nodes().Get(cctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	return n.Status.Capacity.Cpu().MilliValue(), nil
}

// setNodeAllocatable sets the node's pod capacity and allocatable, and
// its allocatable CPU.
func setNodeAllocatable(ctx context.Context, cs kubernetes.Interface, nodeName string, pods int, cpuMilli int64) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := cs.CoreV1().Nodes().Get(cctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	q := *resource.NewQuantity(int64(pods), resource.DecimalSI)
	n.Status.Capacity[v1.ResourcePods] = q
	n.Status.Allocatable[v1.ResourcePods] = q
	n.Status.Allocatable[v1.ResourceCPU] = *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI)
	_, err = cs.CoreV1().Nodes().UpdateStatus(cctx, n, metav1.UpdateOptions{})
	return err
}

// admittedDespite maps the pods named in patch 0004's log lines ("Admitting
// a pod started before this kubelet despite an admission rejection"
// pod="ns/name" ... reason="...") to the reason waived.
func admittedDespite(lines []string) map[string]string {
	out := map[string]string{}
	for _, l := range lines {
		pod, reason := logValue(l, "pod"), logValue(l, "reason")
		if _, name, ok := strings.Cut(pod, "/"); ok {
			out[name] = reason
		}
	}
	return out
}

// logValue is the quoted value of key in a klog structured line.
func logValue(line, key string) string {
	i := strings.Index(line, " "+key+`="`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(key)+3:]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// waitAPIReady waits until n pods are Ready in the API.
func waitAPIReady(ctx context.Context, cs kubernetes.Interface, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pods, err := podsByName(ctx, cs)
		ready := 0
		for _, p := range pods {
			if readiness.PodReady(p) {
				ready++
			}
		}
		if err == nil && ready == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d pods Ready in the API after %s (%v)", ready, n, timeout, err)
		}
		if err := ctxtime.Sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// readyPoller samples the pods' Ready conditions through the API until
// stopped.
type readyPoller struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples []readiness.Sample
}

func startReadyPoller(ctx context.Context, cs kubernetes.Interface, every time.Duration) *readyPoller {
	ctx, cancel := context.WithCancel(ctx)
	p := &readyPoller{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			if pods, err := podsByName(ctx, cs); err == nil {
				smp := readiness.Sample{T: time.Now(), Ready: map[string]bool{}}
				for name, pod := range pods {
					smp.Ready[name] = readiness.PodReady(pod)
				}
				p.mu.Lock()
				p.samples = append(p.samples, smp)
				p.mu.Unlock()
			}
			_ = ctxtime.Sleep(ctx, every)
		}
	}()
	return p
}

// stop ends the polling and returns the samples.
func (p *readyPoller) stop() []readiness.Sample {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.samples
}
