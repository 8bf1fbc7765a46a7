package scenario

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestExpectedAdmission(t *testing.T) {
	pods := func(spec ...interface{}) []admitPod {
		var out []admitPod
		for i := 0; i < len(spec); i += 2 {
			name := spec[i].(string)
			out = append(out, admitPod{Name: name, CPUMilli: int64(spec[i+1].(int)), Selector: strings.HasPrefix(name, "keep-sel") || isForged(name), Ran: !isForged(name)})
		}
		return out
	}
	// The e2e's plan: the corpus (4 x 5m), keep-sel, forged-bind (created
	// unbound right after it), keep-cpu (300m), fill-0..2, forged-new
	// (created after record); --max-pods=6, 100m allocatable.
	order := pods("a", 5, "b", 5, "c", 5, "d", 5, "keep-sel", 5, ForgedBindPod, 5, "keep-cpu", 300, "fill-0", 5, "fill-1", 5, "fill-2", 5, ForgedNewPod, 5)
	rejected, waived := expectedAdmission(order, 6, 100, false)
	want := map[string]string{"keep-sel": "NodeAffinity", ForgedBindPod: "NodeAffinity", "keep-cpu": "OutOfcpu", "fill-2": "OutOfpods", ForgedNewPod: "OutOfpods"}
	if !reflect.DeepEqual(rejected, want) || len(waived) != 0 {
		t.Fatalf("upstream: got %v %v, want %v and nothing waived", rejected, waived, want)
	}
	// The patched kubelet keeps (and counts) every pod that ran, and
	// rejects the forged ones for the first reason it meets.
	rejected, waived = expectedAdmission(order, 6, 100, true)
	want = map[string]string{ForgedBindPod: "NodeAffinity", ForgedNewPod: "OutOfpods"}
	wantWaived := map[string]string{"keep-sel": "NodeAffinity", "keep-cpu": "OutOfcpu", "fill-0": "OutOfpods", "fill-1": "OutOfpods", "fill-2": "OutOfpods"}
	if !reflect.DeepEqual(rejected, want) || !reflect.DeepEqual(waived, wantWaived) {
		t.Fatalf("patched: got %v %v, want %v %v", rejected, waived, want, wantWaived)
	}
	// Without the forged pods, upstream's rejections are as before.
	if got := expectedRejections(ranBefore(order), 6, 100); !reflect.DeepEqual(got, map[string]string{"keep-sel": "NodeAffinity", "keep-cpu": "OutOfcpu", "fill-2": "OutOfpods"}) {
		t.Fatalf("without the forged pods: %v", got)
	}
	// The resource fit is checked first, pods before cpu: past maxPods
	// the selector pod is rejected for the pod count.
	got := expectedRejections(pods("a", 5, "keep-sel", 5, "b", 500), 1, 100)
	if want := map[string]string{"keep-sel": "OutOfpods", "b": "OutOfpods"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := expectedRejections(pods("a", 5, "b", 5), 110, 2000); len(got) != 0 {
		t.Fatalf("nothing to reject, got %v", got)
	}
}

// TestAdmissionPlan: the plan the e2e runs, in the new kubelet's
// admission order, gives the outcomes the README describes.
func TestAdmissionPlan(t *testing.T) {
	s := &Scenario{opts: Options{NodeName: "kc-e2e-node"}, corpus: corpus.New(corpus.Options{Pods: 4, NodeName: "kc-e2e-node", API: true})}
	plan := s.newAdmissionPlan()
	order := plan.order(s.corpus)
	wantNames := []string{"configmap-000", "web-001", "hostnet-002", "multi-003", "keep-sel", ForgedBindPod, "keep-cpu", "fill-0", "fill-1", "fill-2", ForgedNewPod}
	if got := names(order); !reflect.DeepEqual(got, wantNames) {
		t.Fatalf("order %v, want %v", got, wantNames)
	}
	if plan.forgedBind.Spec.Spec.NodeName != "" || plan.forgedNew.Spec.Spec.NodeName != "kc-e2e-node" {
		t.Fatalf("forged-bind must be created unbound, forged-new bound: %q %q", plan.forgedBind.Spec.Spec.NodeName, plan.forgedNew.Spec.Spec.NodeName)
	}
	if plan.forgedOwner(ForgedBindPod) != "keep-sel" || plan.forgedOwner(ForgedNewPod) != "fill-2" {
		t.Fatalf("owners %s %s", plan.forgedOwner(ForgedBindPod), plan.forgedOwner(ForgedNewPod))
	}
	up := expectedRejections(order, plan.maxPods, allocatableCPUMilli)
	if want := map[string]string{"keep-sel": "NodeAffinity", ForgedBindPod: "NodeAffinity", "keep-cpu": "OutOfcpu", "fill-2": "OutOfpods", ForgedNewPod: "OutOfpods"}; !reflect.DeepEqual(up, want) {
		t.Fatalf("upstream %v, want %v", up, want)
	}
	rejected, _ := expectedAdmission(order, plan.maxPods, allocatableCPUMilli, true)
	if want := map[string]string{ForgedBindPod: "NodeAffinity", ForgedNewPod: "OutOfpods"}; !reflect.DeepEqual(rejected, want) {
		t.Fatalf("patched %v, want %v", rejected, want)
	}
}

func TestStatusNames(t *testing.T) {
	st := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "httpd", ContainerID: "containerd://abc"}}}
	if !statusNames(st, "abc") || statusNames(st, "ab") || statusNames(v1.PodStatus{}, "abc") {
		t.Fatal("statusNames")
	}
}

// TestForgedCheck: a forged-status pod passes only when Failed with the
// expected reason, without a sandbox and without a waiver; patched, only
// while its owner is kept. What a kubelet that trusted the API status did
// (the pod admitted, its sandbox and container running) fails.
func TestForgedCheck(t *testing.T) {
	f := forgery{Pod: ForgedBindPod, Owner: "keep-sel", ContainerID: "c1", How: "bound"}
	ownerSB := snapshot.Sandbox{Pod: "kc-e2e/keep-sel", ID: "s1", Ready: true}
	ownerC := snapshot.Container{Pod: "kc-e2e/keep-sel", Name: "httpd", ID: "c1", SandboxID: "s1", State: "RUNNING"}
	before := &snapshot.Snapshot{Sandboxes: []snapshot.Sandbox{ownerSB}, Containers: []snapshot.Container{ownerC}}
	pod := func(phase v1.PodPhase, reason string) *v1.Pod {
		return &v1.Pod{Status: v1.PodStatus{Phase: phase, Reason: reason}}
	}
	keptLine := `"Admitting a pod started before this kubelet despite an admission rejection" pod="kc-e2e/keep-sel" podUID="u" reason="NodeAffinity" message="m" startedBefore="the runtime runs container c1 of the pod, and the compat file lists it"`
	obs := func(forged *v1.Pod, after *snapshot.Snapshot, lines ...string) *swapObservation {
		return &swapObservation{after: after, lines: lines, admitted: admittedDespite(lines),
			pods: map[string]*v1.Pod{ForgedBindPod: forged, "keep-sel": pod(v1.PodRunning, "")}}
	}
	good := obs(pod(v1.PodFailed, "NodeAffinity"), before, keptLine)
	if c := forgedCheck("patched", f, "NodeAffinity", good, before); !c.Passed {
		t.Fatalf("rejected forged pod, owner kept: %+v", c)
	}
	if c := forgedCheck("unpatched", f, "NodeAffinity", obs(pod(v1.PodFailed, "NodeAffinity"), before), before); !c.Passed {
		t.Fatalf("unpatched, rejected: %+v", c)
	}
	if c := forgedCheck("patched", f, "NodeAffinity", obs(pod(v1.PodFailed, "NodeAffinity"), before), before); c.Passed {
		t.Fatalf("patched, owner not admitted despite its rejection, must fail: %+v", c)
	}
	if c := forgedCheck("patched", f, "OutOfpods", good, before); c.Passed {
		t.Fatalf("another reason must fail: %+v", c)
	}
	// The kubelet at 9068909 (status as evidence) admitted it and ran it.
	ranSB := snapshot.Sandbox{Pod: "kc-e2e/" + ForgedBindPod, ID: "s2", Ready: true}
	ranC := snapshot.Container{Pod: "kc-e2e/" + ForgedBindPod, Name: "httpd", ID: "c2", SandboxID: "s2", State: "RUNNING"}
	after := &snapshot.Snapshot{Sandboxes: []snapshot.Sandbox{ownerSB, ranSB}, Containers: []snapshot.Container{ownerC, ranC}}
	forgedLine := `"Admitting a pod started before this kubelet despite an admission rejection" pod="kc-e2e/forged-bind" podUID="v" reason="NodeAffinity" message="m" startedBefore="container httpd (c1) is listed in the compat file"`
	c := forgedCheck("patched", f, "NodeAffinity", obs(pod(v1.PodRunning, ""), after, keptLine, forgedLine), before)
	if c.Passed || !strings.Contains(c.Detail, "ADMITTED despite NodeAffinity (container httpd (c1) is listed in the compat file)") || !strings.Contains(c.Detail, "sandboxes in the runtime 1") {
		t.Fatalf("a forged pod the kubelet admitted must fail and say so: %+v", c)
	}
}

func TestPodCPUMilli(t *testing.T) {
	p := &v1.Pod{Spec: v1.PodSpec{
		Containers:     []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("5m")}}}, {}},
		InitContainers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m")}}}},
	}}
	if got := podCPUMilli(p); got != 50 {
		t.Fatalf("got %d, want 50 (the init container's)", got)
	}
	p.Spec.InitContainers = nil
	if got := podCPUMilli(p); got != 5 {
		t.Fatalf("got %d, want 5", got)
	}
}

func TestCaseOf(t *testing.T) {
	for reason, want := range map[string]string{"NodeAffinity": CaseLabelRemoved, "OutOfpods": CaseMaxPods, "OutOfcpu": CaseCPU, "": CaseBystander} {
		if got := caseOf(reason); got != want {
			t.Errorf("caseOf(%q) = %q, want %q", reason, got, want)
		}
	}
}

func TestReadinessSummary(t *testing.T) {
	w := map[string]readiness.Window{"a": {NotReadySeconds: 1, ReadyAtEnd: true}, "b": {NotReadySeconds: 3, ReadyAtEnd: true}, "sel": {NotReadySeconds: 40}}
	c := readinessSummary("unpatched", []string{"a", "b", "sel"}, map[string]string{"sel": "NodeAffinity"}, w)
	want := "2 pods Ready again: longest 3.0s, mean 2.0s; never Ready again: 1 (sel (40.0s, rejection NodeAffinity))"
	if !c.Passed || c.Detail != want {
		t.Fatalf("got %+v, want detail %q", c, want)
	}
	if c := readinessSummary("patched", []string{"a", "gone"}, nil, w); c.Passed {
		t.Fatalf("a pod never sampled must fail: %+v", c)
	}
}

func TestAdmittedDespite(t *testing.T) {
	lines := []string{
		`I1130 16:50:26.534848    3986 compat.go:356] "Admitting a pod started before this kubelet despite an admission rejection" pod="kc-e2e/keep-sel" podUID="3e88" reason="NodeAffinity" message="Predicate NodeAffinity failed" startedBefore="container httpd (15f8) is listed in the compat file"`,
		`I1130 16:50:26.534973    3986 compat.go:356] "Admitting a pod started before this kubelet despite an admission rejection" pod="kc-e2e/fill-1" podUID="966d" reason="OutOfpods" message="Node didn't have enough resource: pods, requested: 1, used: 5, capacity: 5"`,
		`garbage without keys`,
	}
	got := admittedDespite(lines)
	want := map[string]string{"keep-sel": "NodeAffinity", "fill-1": "OutOfpods"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
