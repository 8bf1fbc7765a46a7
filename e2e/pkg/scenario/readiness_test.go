package scenario

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestReadinessPods: per period two passing pods and one failing, behind
// the Service, probed by GET /ready on a hostPath web root with
// failureThreshold 3.
func TestReadinessPods(t *testing.T) {
	pods := readinessPods(corpus.Options{NodeName: "n", API: true, HostPathRoot: "/r/hostpath"})
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
		spec := p.Spec
		assert.Equal(t, spec.Labels[readyServiceLabel], ReadyService)
		assert.Equal(t, spec.Spec.NodeName, "n")
		probe := spec.Spec.Containers[0].ReadinessProbe
		assert.Equal(t, probe.PeriodSeconds, p.Period)
		assert.Equal(t, probe.FailureThreshold, int32(3))
		assert.Equal(t, probe.HTTPGet.Path, "/"+readyFile)
		assert.Equal(t, spec.Spec.Volumes[len(spec.Spec.Volumes)-1].HostPath.Path, "/r/hostpath/"+p.Name)
		assert.Equal(t, p.Failing, strings.HasPrefix(p.Name, "probefail"))
	}
	assert.DeepEqual(t, names, []string{"ready-p10-0", "ready-p10-1", "probefail-p10", "ready-p30-0", "ready-p30-1", "probefail-p30"})
}

func TestSliceEndpoints(t *testing.T) {
	yes, no := true, false
	ep := func(pod string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{TargetRef: &v1.ObjectReference{Kind: "Pod", Name: pod}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	es := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{ep("a", &yes), ep("b", &no), ep("c", nil),
		{Conditions: discoveryv1.EndpointConditions{Ready: &yes}}}}
	// nil means ready (the API's definition); an endpoint without a pod is
	// not one of ours.
	assert.DeepEqual(t, sliceEndpoints(es), map[string]bool{"a": true, "b": false, "c": true})
}

func TestWindowsDropsAndLongest(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	samples := []readySample{
		{t: at(0), serving: map[string]bool{"kept": true, "flap": true, "gone": true}},
		{t: at(1), serving: map[string]bool{"kept": true, "flap": false, "gone": true}},
		{t: at(2), serving: map[string]bool{"kept": true, "flap": true}},
		{t: at(3), serving: map[string]bool{"kept": true, "flap": false}},
		{t: at(7), serving: map[string]bool{"kept": true, "flap": true}},
		{t: at(9), serving: map[string]bool{"kept": true, "flap": true}},
	}
	w := windowsOf(samples, func(s readySample) map[string]bool { return s.serving })
	assert.DeepEqual(t, w["kept"], readyWindow{ReadyAtEnd: true})
	assert.DeepEqual(t, w["flap"], readyWindow{NotReadySeconds: 5, ReadyAtEnd: true, Drops: 2, LongestSeconds: 4, FirstDrop: at(1)})
	// gone from the slice at 2 and never back: one removal, until the end
	assert.DeepEqual(t, w["gone"], readyWindow{NotReadySeconds: 7, Drops: 1, LongestSeconds: 7, FirstDrop: at(2)})
}

func TestReadinessGroups(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rp := readinessPods(corpus.Options{NodeName: "n", API: true})
	all := func(v bool) map[string]bool {
		m := map[string]bool{}
		for _, p := range rp {
			m[p.Name] = v
		}
		return m
	}
	end := all(true)
	end["probefail-p10"], end["probefail-p30"] = false, false
	samples := []readySample{
		{t: at(0), ready: map[string]bool{"web-000": true}, serving: all(true)},
		{t: at(12), ready: map[string]bool{"web-000": true}, serving: end},
	}
	ready := all(true)
	ready["web-000"] = true
	samples[0].ready, samples[1].ready = ready, map[string]bool{"web-000": true}
	for k, v := range end {
		samples[1].ready[k] = v
	}
	groups := readinessGroups(samples, []corpus.Pod{{Name: "web-000"}}, rp, at(2))
	var got []string
	for _, g := range groups {
		sum := g.Sum()
		got = append(got, g.Group+":"+strings.Repeat("x", sum.Transitions))
	}
	assert.DeepEqual(t, got, []string{"corpus:", "ready-p10:", "ready-p30:", "probefail-p10:x", "probefail-p30:x"})
	f := groups[3].Pods[0]
	assert.Equal(t, f.FirstNotReadySeconds, 10.0)
	assert.Equal(t, f.EndpointRemovals, 1)
	assert.Equal(t, groups[1].Pods[0].FirstNotReadySeconds, -1.0)
}

func TestReadinessChecks(t *testing.T) {
	pass := report.ReadyGroup{Group: "ready-p30", PeriodSeconds: 30, Endpoints: true,
		Pods: []report.PodReadiness{{Pod: "ready-p30-0", FirstNotReadySeconds: -1, ReadyAtEnd: true, EndpointReadyAtEnd: true}}}
	gap := report.ReadyGroup{Group: "ready-p30", PeriodSeconds: 30, Endpoints: true,
		Pods: []report.PodReadiness{{Pod: "ready-p30-0", Transitions: 1, EndpointRemovals: 1, LongestGapSeconds: 4.2, LongestEndpointGapSeconds: 4.3,
			FirstNotReadySeconds: 1, ReadyAtEnd: true, EndpointReadyAtEnd: true}}}
	corpusGap := gap
	corpusGap.Group, corpusGap.Endpoints = corpusGroup, false
	corpusPass := pass
	corpusPass.Group, corpusPass.Endpoints = corpusGroup, false
	failing := func(after float64, readyAtEnd bool) report.ReadyGroup {
		return report.ReadyGroup{Group: "probefail-p10", PeriodSeconds: 10, Failing: true, Endpoints: true,
			Pods: []report.PodReadiness{{Pod: "probefail-p10", Transitions: 1, EndpointRemovals: 1, FirstNotReadySeconds: after, ReadyAtEnd: readyAtEnd}}}
	}
	for _, tc := range []struct {
		name    string
		variant string
		minor   int
		group   report.ReadyGroup
		passed  bool
		detail  string
	}{
		{name: "patched keeps Ready", variant: report.Patched, minor: 21, group: pass, passed: true},
		{name: "patched drops Ready", variant: report.Patched, minor: 31, group: gap, detail: "ready-p30-0: 1 Ready->NotReady, 1 endpoint removals"},
		{name: "patched drops a corpus pod", variant: report.Patched, minor: 34, group: corpusGap, detail: "1 Ready->NotReady"},
		{name: "control shows the gap", variant: report.Unpatched, minor: 21, group: gap, passed: true},
		{name: "control without a gap", variant: report.Unpatched, minor: 34, group: pass, detail: "could not tell the patch from upstream"},
		{name: "control corpus reported", variant: report.Unpatched, minor: 34, group: corpusPass, passed: true},
		{name: "1.35 reported only", variant: report.Patched, minor: 35, group: gap, passed: true, detail: "reported, not asserted"},
		{name: "1.35 control reported only", variant: report.Unpatched, minor: 35, group: pass, passed: true, detail: "reported, not asserted"},
		// synced at 5 s: one period (10 s) and the slack (3 s) more
		{name: "failing within a period", variant: report.Patched, minor: 21, group: failing(17.9, false), passed: true, detail: "NotReady 17.9s after"},
		{name: "failing too late", variant: report.Patched, minor: 21, group: failing(18.1, false), detail: "not NotReady within 18.0s"},
		{name: "failing never", variant: report.Patched, minor: 34, group: failing(-1, false), detail: "NotReady never after"},
		{name: "failing still Ready", variant: report.Unpatched, minor: 21, group: failing(0.5, true), detail: "Ready (or its endpoint ready) at the end"},
		{name: "control failing late is reported", variant: report.Unpatched, minor: 21, group: failing(40, false), passed: true},
		{name: "1.35 failing late is reported", variant: report.Patched, minor: 35, group: failing(40, false), passed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := readinessChecks(tc.variant, tc.minor, []report.ReadyGroup{tc.group}, 5)
			assert.Equal(t, len(checks), 1)
			assert.Equal(t, checks[0].Passed, tc.passed, checks[0].Detail)
			assert.Assert(t, is.Contains(checks[0].Detail, tc.detail))
		})
	}
}

// TestReadyWatch: the informers' events become samples once begun: a pod
// going NotReady and back, its endpoint going not ready, a slice of
// another Service ignored.
func TestReadyWatch(t *testing.T) {
	ctx := context.Background()
	yes, no := true, false
	pod := func(name string, ready bool) *v1.Pod {
		st := v1.ConditionFalse
		if ready {
			st = v1.ConditionTrue
		}
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corpus.Namespace},
			Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: st}}}}
	}
	slice := func(name, svc string, ready *bool) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corpus.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			Endpoints: []discoveryv1.Endpoint{{TargetRef: &v1.ObjectReference{Kind: "Pod", Name: "a"}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}}}
	}
	cs := fake.NewSimpleClientset(pod("a", true), slice("s1", ReadyService, &yes), slice("other", "other", &no))
	w, err := startReadyWatch(ctx, cs)
	assert.NilError(t, err)
	assert.NilError(t, w.waitState(ctx, 10*time.Second, func(s readySample) string {
		if !s.ready["a"] || !s.serving["a"] {
			return "not listed yet"
		}
		return ""
	}))
	w.begin()
	pods, slices := cs.CoreV1().Pods(corpus.Namespace), cs.DiscoveryV1().EndpointSlices(corpus.Namespace)
	_, err = pods.Update(ctx, pod("a", false), metav1.UpdateOptions{})
	assert.NilError(t, err)
	_, err = slices.Update(ctx, slice("s1", ReadyService, &no), metav1.UpdateOptions{})
	assert.NilError(t, err)
	_, err = pods.Update(ctx, pod("a", true), metav1.UpdateOptions{})
	assert.NilError(t, err)
	assert.NilError(t, w.waitState(ctx, 10*time.Second, func(s readySample) string {
		if !s.ready["a"] || s.serving["a"] {
			return "updates not seen yet"
		}
		return ""
	}))
	samples := w.end()
	r := readyWindows(samples)["a"]
	e := windowsOf(samples, func(s readySample) map[string]bool { return s.serving })["a"]
	assert.Equal(t, r.Drops, 1)
	assert.Equal(t, r.ReadyAtEnd, true)
	assert.Equal(t, e.Drops, 1)
	assert.Equal(t, e.ReadyAtEnd, false)
	// 2 pod updates, 1 slice update, the first and the last state
	assert.Equal(t, len(samples), 5)
}
