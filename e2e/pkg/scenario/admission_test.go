package scenario

import (
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"reflect"
	"testing"
	"time"
)

func TestExpectedRejections(t *testing.T) {
	pods := func(spec ...interface{}) []admitPod {
		var out []admitPod
		for i := 0; i < len(spec); i += 2 {
			out = append(out, admitPod{Name: spec[i].(string), CPUMilli: int64(spec[i+1].(int))})
		}
		return out
	}
	// The e2e's plan: the corpus (4 x 5m), keep-sel, keep-cpu (300m),
	// fill-0..2; --max-pods=6, 100m allocatable.
	order := pods("a", 5, "b", 5, "c", 5, "d", 5, "keep-sel", 5, "keep-cpu", 300, "fill-0", 5, "fill-1", 5, "fill-2", 5)
	got := expectedRejections(order, "keep-sel", 6, 100)
	want := map[string]string{"keep-sel": "NodeAffinity", "keep-cpu": "OutOfcpu", "fill-2": "OutOfpods"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// The resource fit is checked first, pods before cpu: past maxPods
	// the selector pod is rejected for the pod count.
	got = expectedRejections(pods("a", 5, "keep-sel", 5, "b", 500), "keep-sel", 1, 100)
	want = map[string]string{"keep-sel": "OutOfpods", "b": "OutOfpods"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := expectedRejections(pods("a", 5, "b", 5), "none", 110, 2000); len(got) != 0 {
		t.Fatalf("nothing to reject, got %v", got)
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

func TestReadyWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	samples := []readySample{
		{at(0), map[string]bool{"kept": true, "flap": true, "failed": true}},
		{at(1), map[string]bool{"kept": true, "flap": false, "failed": false}},
		// the API server is down from 1 to 4: the gap counts as the
		// state seen at 1
		{at(4), map[string]bool{"kept": true, "flap": true, "failed": false}},
		{at(5), map[string]bool{"kept": true, "flap": true}},
	}
	w := readyWindows(samples)
	check := func(name string, secs float64, end bool) {
		t.Helper()
		if math.Abs(w[name].NotReadySeconds-secs) > 1e-9 || w[name].ReadyAtEnd != end {
			t.Errorf("%s: got %+v, want %.1fs not ready, ready at end %t", name, w[name], secs, end)
		}
	}
	check("kept", 0, true)
	check("flap", 3, true)
	check("failed", 4, false)
	if len(readyWindows(nil)) != 0 {
		t.Error("no samples, no windows")
	}
}

func TestReadinessSummary(t *testing.T) {
	w := map[string]readyWindow{"a": {1, true}, "b": {3, true}, "sel": {40, false}}
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
