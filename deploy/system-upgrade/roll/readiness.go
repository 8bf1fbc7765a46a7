package roll

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// probeMemory is what the gate and the settle keep between two looks at
// the kubelet's readiness probes: the window's first sample and when it
// was taken, the last sample, the counters the verdict "since the start"
// counts from.
type probeMemory struct {
	a    probeSample
	aAt  time.Time
	last probeSample
	zero probeSample
}

// verdict is a pod's readiness at a look: Ready (ok), or why not.
type verdict struct {
	ok  bool
	pod podLine
	why string
}

// String is the verdict as the Job's log prints it.
func (v verdict) String() string {
	if v.ok {
		return "ok " + v.pod.String()
	}
	return "no " + v.pod.Name + " (" + v.why + ")"
}

// unready is why not, as the gate lists it.
func (v verdict) unready() string { return v.pod.Name + " (" + v.why + ")" }

// judge judges the pods that now runs under their UID on the kubelet's
// prober, from sample a to sample b: Ready when the runtime runs a
// container of the pod and each readiness-probed container had a success
// and no failure (nor unknown). since names a in the reasons. A pod now
// does not run is left to judgeGone.
func judge(a, b probeSample, now []runningPod, pods []podLine, since string) []verdict {
	if since == "" {
		since = "since the last look"
	}
	ca, cb := a.counts(), b.counts()
	runs := byUID(now)
	var out []verdict
	for _, p := range pods {
		rp, ok := runs[p.UID]
		if !ok {
			continue
		}
		if len(rp.IDs) == 0 {
			out = append(out, verdict{pod: p, why: "runs no container: the runtime"})
			continue
		}
		why := ""
		for _, c := range p.Containers {
			k := p.UID + " " + c
			_, s := cb[k+" successful"]
			_, f := cb[k+" failed"]
			_, u := cb[k+" unknown"]
			if !s && !f && !u {
				why = "container " + c + ": no readiness probe result from the kubelet"
				break
			}
			ds := cb[k+" successful"] - ca[k+" successful"]
			df := cb[k+" failed"] - ca[k+" failed"]
			du := cb[k+" unknown"] - ca[k+" unknown"]
			if ds <= 0 || df > 0 || du > 0 {
				why = fmt.Sprintf("container %s: readiness probe %s successful, %s failed, %s unknown %s: the kubelet's prober",
					c, formatNumber(ds), formatNumber(df), formatNumber(du), since)
				break
			}
		}
		out = append(out, verdict{ok: why == "", pod: p, why: why})
	}
	return out
}

// readiness judges pods on the sample b just taken, twice: on the
// counters since the kubelet started (or since the runtime step's base,
// the kubelet did not restart then), and, once KC_PROBE_WINDOW has passed
// since the window's first sample, on the window, which then starts again
// at b. A pod Ready by either is Ready.
func (r *run) readiness(now []runningPod, pods []podLine, b probeSample) []verdict {
	start := judge(r.pr.zero, b, now, pods, r.gp.probeSince)
	window := map[string]verdict{}
	if t := r.Host.Now(); t.Sub(r.pr.aAt) >= time.Duration(r.cfg.ProbeWindow)*time.Second {
		for _, v := range judge(r.pr.a, b, now, pods, "") {
			window[v.pod.Name] = v
		}
		r.pr.a, r.pr.aAt = b, t
	}
	out := make([]verdict, 0, len(start))
	for _, v := range start {
		if w, ok := window[v.pod.Name]; !v.ok && ok {
			v = w
		}
		out = append(out, v)
	}
	return out
}

// podsOf are the pods now runs, each with its containers that have a
// readiness probe series in sample a or b.
func podsOf(now []runningPod, a, b probeSample) []podLine {
	containers := map[string][]string{}
	seen := map[string]bool{}
	for _, s := range append(append(probeSample{}, a...), b...) {
		k := s.UID + " " + s.Container
		if seen[k] {
			continue
		}
		seen[k] = true
		containers[s.UID] = append(containers[s.UID], s.Container)
	}
	var pods []podLine
	for _, p := range now {
		pods = append(pods, podLine{Name: p.Name, UID: p.UID, Containers: containers[p.UID]})
	}
	return pods
}

// probeEvidence lists, for each readiness-probed container of pods that
// now runs, its probe results from base to sample: what the gate's
// readiness rested on.
func probeEvidence(base, sample probeSample, now []runningPod, pods []podLine) []string {
	n := map[string]float64{}
	for _, s := range base {
		n[s.UID+" "+s.Container+" "+s.Result] = -s.Count
	}
	for _, s := range sample {
		n[s.UID+" "+s.Container+" "+s.Result] += s.Count
	}
	runs := byUID(now)
	var out []string
	for _, p := range pods {
		if len(p.Containers) == 0 {
			continue
		}
		if _, ok := runs[p.UID]; !ok {
			out = append(out, p.Name+" ("+p.UID+"): not run by the runtime under that UID")
			continue
		}
		for _, c := range p.Containers {
			k := p.UID + " " + c
			out = append(out, fmt.Sprintf("%s %s: readiness probe %d successful, %d failed, %d unknown", p.Name, c,
				int64(n[k+" successful"]), int64(n[k+" failed"]), int64(n[k+" unknown"])))
		}
	}
	return out
}

// The kubelet's own server answers the Job once it has reviewed the
// Job's token with the API server (webhook authentication): right after
// kubeadm upgrade restarted an API server, or behind a load balancer that
// still sends to one restarting, a review fails now and then. probeSample
// asks again every probeAskEvery for up to probeAnswerWithin before it
// takes the kubelet for silent.
const (
	probeAnswerWithin = 30 * time.Second
	probeAskEvery     = 2 * time.Second
)

// probeSample reads the kubelet's readiness probe counters from its own
// server; false when it does not answer within probeAnswerWithin.
func (r *run) probeSample(ctx context.Context) (probeSample, bool) {
	deadline := r.Host.Now().Add(probeAnswerWithin)
	for {
		res := r.kubeletGet(ctx, "/metrics/probes")
		if res.OK() {
			return parseProbeMetrics(string(res.Stdout)), true
		}
		if aborted(ctx, res.Err) || !r.Host.Now().Add(probeAskEvery).Before(deadline) {
			return nil, false
		}
		r.log("the kubelet's %s/metrics/probes did not answer (%s); asking again", r.cfg.KubeletURL, lastErrorLine(res))
		if err := r.sleep(ctx, probeAskEvery); err != nil {
			return nil, false
		}
	}
}

// lastErrorLine is what a failed program said last (kubectl's error
// without its "error: " prefix), or how it ended.
func lastErrorLine(res Result) string {
	lines := strings.Split(strings.TrimSpace(string(res.Stderr)), "\n")
	if last := strings.TrimPrefix(strings.TrimSpace(lines[len(lines)-1]), "error: "); last != "" {
		return last
	}
	if res.Err != nil {
		return res.Err.Error()
	}
	return fmt.Sprintf("exit status %d", res.Code)
}
