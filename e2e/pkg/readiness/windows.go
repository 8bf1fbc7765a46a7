// Package readiness measures, through the API, whether a kubelet swap
// drops pods from Ready and their endpoints from a Service although
// nothing restarts: informers on a namespace's pods and on the
// EndpointSlices of Services keep a sample of both at every change
// (Watch), and the samples become the report's figures per pod (Windows,
// Figures). Kubelets before 1.35 report every container NotReady when they
// start, until its readiness probe passes again; patch 5 (and upstream
// from 1.35, KEP-4781) keeps a container that was Ready and still runs
// Ready until a probe fails.
//
// The local provider's API mode (package scenario) and the kind provider
// (package kind) both use it; each decides which pods count for which
// swap and what it asserts.
package readiness

import (
	"fmt"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	v1 "k8s.io/api/core/v1"
)

// UpstreamKeepsReadyMinor: from 1.35 upstream keeps Ready across a
// kubelet restart (KEP-4781): reported, not asserted.
const UpstreamKeepsReadyMinor = 35

// Sample is the pods' Ready conditions as the API showed them at T and,
// with EndpointSlices watched, whether each pod behind the Services had a
// ready endpoint in their slices (Serving). A pod missing from a map is
// not Ready (not serving).
type Sample struct {
	T       time.Time
	Ready   map[string]bool
	Serving map[string]bool
}

// ReadyOf and ServingOf pick a sample's map, for WindowsOf.
func ReadyOf(s Sample) map[string]bool   { return s.Ready }
func ServingOf(s Sample) map[string]bool { return s.Serving }

// Window is how long a pod's Ready condition (or endpoint) was False
// across the samples, how often it went from True to False, its longest
// False stretch and whether it was True at the last sample.
type Window struct {
	NotReadySeconds float64
	ReadyAtEnd      bool
	// Drops counts True -> False (a pod or endpoint gone counts as False).
	Drops int
	// LongestSeconds is the longest stretch from a sample showing False
	// to the next showing True (or the last sample).
	LongestSeconds float64
	// FirstDrop is when the first drop was seen (zero: none).
	FirstDrop time.Time
}

// Windows sums, per pod, the time between consecutive samples that begin
// with the pod not Ready (a pod missing from a sample is not Ready); while
// the API server is down (its upgrade) there are no samples, and the gap
// counts as the state seen before it.
func Windows(samples []Sample) map[string]Window {
	return WindowsOf(samples, ReadyOf)
}

// WindowsOf is Windows for one map of each sample (ReadyOf, ServingOf):
// every name some sample has, missing from a sample meaning False.
func WindowsOf(samples []Sample, of func(Sample) map[string]bool) map[string]Window {
	out := map[string]Window{}
	for _, smp := range samples {
		for name := range of(smp) {
			out[name] = Window{}
		}
	}
	for name := range out {
		w := out[name]
		var falseSince time.Time
		for i, smp := range samples {
			v := of(smp)[name]
			if i > 0 && !v && of(samples[i-1])[name] {
				w.Drops++
				if w.FirstDrop.IsZero() {
					w.FirstDrop = smp.T
				}
			}
			if !v && falseSince.IsZero() {
				falseSince = smp.T
			}
			if (v || i == len(samples)-1) && !falseSince.IsZero() {
				if d := smp.T.Sub(falseSince).Seconds(); d > w.LongestSeconds {
					w.LongestSeconds = d
				}
				falseSince = time.Time{}
			}
			if i+1 < len(samples) && !v {
				w.NotReadySeconds += samples[i+1].T.Sub(smp.T).Seconds()
			}
		}
		if len(samples) > 0 {
			w.ReadyAtEnd = of(samples[len(samples)-1])[name]
		}
		out[name] = w
	}
	return out
}

// PodReady is the pod's Ready condition.
func PodReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// Figures turns the samples of one swap into the report's figures per
// pod.
type Figures struct {
	ready, serving map[string]Window
	started        time.Time
}

// NewFigures reads the samples of a swap whose new kubelet started at
// started.
func NewFigures(samples []Sample, started time.Time) Figures {
	return Figures{ready: Windows(samples), serving: WindowsOf(samples, ServingOf), started: started}
}

// Pod is one pod's figures: its Ready -> NotReady transitions, endpoint
// removals, longest gaps, when it first went NotReady (from the kubelet's
// start; -1: never) and how it ended. A pod the samples never named was
// never Ready.
func (f Figures) Pod(name string) report.PodReadiness {
	r, e := f.ready[name], f.serving[name]
	pr := report.PodReadiness{Pod: name, Transitions: r.Drops, EndpointRemovals: e.Drops, LongestGapSeconds: r.LongestSeconds,
		LongestEndpointGapSeconds: e.LongestSeconds, FirstNotReadySeconds: -1, ReadyAtEnd: r.ReadyAtEnd, EndpointReadyAtEnd: e.ReadyAtEnd}
	if !r.FirstDrop.IsZero() {
		pr.FirstNotReadySeconds = r.FirstDrop.Sub(f.started).Seconds()
	}
	return pr
}

// NotKept is what a kubelet that keeps Ready across its start must not
// show for pods that kept passing their probes: one line per pod that went
// NotReady, lost a ready endpoint, or did not end Ready (none: kept).
func NotKept(pods []report.PodReadiness) []string {
	var bad []string
	for _, p := range pods {
		if p.Transitions > 0 || p.EndpointRemovals > 0 || !p.ReadyAtEnd {
			bad = append(bad, fmt.Sprintf("%s: %d Ready->NotReady, %d endpoint removals", p.Pod, p.Transitions, p.EndpointRemovals))
		}
	}
	return bad
}
