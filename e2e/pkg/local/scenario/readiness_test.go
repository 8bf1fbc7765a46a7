package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
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
	samples := []readiness.Sample{
		{T: at(0), Ready: map[string]bool{"web-000": true}, Serving: all(true)},
		{T: at(12), Ready: map[string]bool{"web-000": true}, Serving: end},
	}
	ready := all(true)
	ready["web-000"] = true
	samples[0].Ready, samples[1].Ready = ready, map[string]bool{"web-000": true}
	for k, v := range end {
		samples[1].Ready[k] = v
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
