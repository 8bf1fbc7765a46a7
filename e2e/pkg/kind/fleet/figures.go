package fleet

// The figures of a fleet roll, per node and in total: pure functions over
// what the run collected (CRI snapshots, the API's pods, the pod ledger,
// the readiness samples, each node's window).

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// nodeWindow is when a roll worked on one node: a Job's start to its end,
// or the drain roll's first command to the uncordon.
type nodeWindow struct {
	Node       string
	Start, End time.Time
	Outcome    string
}

// Outcomes of a node in a roll.
const (
	outcomeUpgraded   = "upgraded"
	outcomeRolledBack = "rolled back"
	outcomeUntouched  = "untouched"
	outcomeFailed     = "failed"
)

// apiPod is a pod of the namespace in the API: its UID and node.
type apiPod struct{ UID, Node string }

// unavailableSeconds is how long in [from, to] no pod matching member had a
// ready endpoint: each sample holds until the next one.
func unavailableSeconds(samples []readiness.Sample, member func(pod string) bool, from, to time.Time) float64 {
	var total time.Duration
	for i := 0; i+1 < len(samples); i++ {
		serving := false
		for pod, ok := range samples[i].Serving {
			serving = serving || (ok && member(pod))
		}
		if serving {
			continue
		}
		start, end := samples[i].T, samples[i+1].T
		if start.Before(from) {
			start = from
		}
		if end.After(to) {
			end = to
		}
		if end.After(start) {
			total += end.Sub(start)
		}
	}
	return total.Seconds()
}

// endpointRemovals lists, once per removal and sorted, the pods matching
// member whose ready endpoint went not ready or away between two samples,
// the later one in [from, to]: the report names whom a removal hit.
func endpointRemovals(samples []readiness.Sample, member func(pod string) bool, from, to time.Time) []string {
	var removed []string
	for i := 1; i < len(samples); i++ {
		if !within(samples[i].T, from, to) {
			continue
		}
		for pod, was := range samples[i-1].Serving {
			if was && member(pod) && !samples[i].Serving[pod] {
				removed = append(removed, pod)
			}
		}
	}
	sort.Strings(removed)
	return removed
}

// workloadsOnly keeps the sandboxes and containers of the workloads'
// namespace; systemOnly those of kube-system.
func workloadsOnly(s *snapshot.Snapshot) *snapshot.Snapshot { return s.InNamespace(kind.Namespace) }
func systemOnly(s *snapshot.Snapshot) *snapshot.Snapshot    { return s.InNamespace("kube-system") }

// withoutUIDs drops the sandboxes (and their containers) of pods the API
// deleted: an evicted pod is counted as evicted, not as restarted.
func withoutUIDs(s *snapshot.Snapshot, uids map[string]bool) *snapshot.Snapshot {
	out := &snapshot.Snapshot{Taken: s.Taken}
	dropped := map[string]bool{}
	for _, sb := range s.Sandboxes {
		if uids[sb.UID] {
			dropped[sb.ID] = true
			continue
		}
		out.Sandboxes = append(out.Sandboxes, sb)
	}
	for _, c := range s.Containers {
		if !dropped[c.SandboxID] {
			out.Containers = append(out.Containers, c)
		}
	}
	return out
}

// uidsChanged are the pods of node (by name, before the roll) that are gone
// or run under another UID after it.
func uidsChanged(before, after map[string]apiPod, node string) []string {
	var out []string
	for name, b := range before {
		if node != "" && b.Node != node {
			continue
		}
		if a, ok := after[name]; !ok || a.UID != b.UID {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// rollData is what a roll collected.
type rollData struct {
	before, after       map[string]*snapshot.Snapshot // per node
	apiBefore, apiAfter map[string]apiPod
	records             []podRecord
	samples             []readiness.Sample
	// app names each pod the readiness watchers saw by its app label.
	app                map[string]string
	windows            []nodeWindow
	rollStart, rollEnd time.Time
	// api is the API server's request counter from the baseline on;
	// quietStart..quietEnd the quiet time before the roll (background).
	api                  []apiSample
	quietStart, quietEnd time.Time
}

// apiBackground is the API server's requests per second before the roll.
func (d rollData) apiBackground() float64 {
	secs := d.quietEnd.Sub(d.quietStart).Seconds()
	if secs <= 0 {
		return 0
	}
	return requestsIn(d.api, d.quietStart, d.quietEnd) / secs
}

// member says whether a pod belongs to one of apps.
func (d rollData) member(apps ...string) func(string) bool {
	return func(pod string) bool {
		for _, a := range apps {
			if d.app[pod] == a {
				return true
			}
		}
		return false
	}
}

// nodeFigures are the figures of one node in window w.
func (d rollData) nodeFigures(w nodeWindow) report.FleetNode {
	f := report.FleetNode{Node: w.Node, Outcome: w.Outcome}
	deleted := deletedUIDs(d.records)
	if b, ok := d.before[w.Node]; ok && d.after[w.Node] != nil {
		diff := snapshot.Compare(withoutUIDs(workloadsOnly(b), deleted), workloadsOnly(d.after[w.Node]))
		f.Restarts, f.Recreated = diff.Restarts, diff.RecreatedPods
		sys := snapshot.Compare(systemOnly(b), systemOnly(d.after[w.Node]))
		f.SystemRestarts = sys.Restarts
		if len(diff.RestartedPods) > 0 {
			f.Detail = "restarted: " + strings.Join(diff.RestartedPods, " ")
		}
	}
	f.Evicted = deletedFrom(d.records, w.Node, d.rollStart, d.rollEnd)
	f.UIDsChanged = len(uidsChanged(d.apiBefore, d.apiAfter, w.Node))
	if !w.Start.IsZero() {
		f.Rescheduled = createdIn(d.records, w.Start, w.End)
		f.SoloUnavailableSeconds = unavailableSeconds(d.samples, d.member(SoloName), w.Start, w.End)
		f.EndpointRemovals = len(endpointRemovals(d.samples, d.member(fleetServices...), w.Start, w.End))
		f.Seconds = w.End.Sub(w.Start).Seconds()
		f.APIRequests = int(requestsIn(d.api, w.Start, w.End))
	}
	return f
}

// figures are every node's and the total: restarts, evictions and UIDs
// summed over the nodes, the rest over the roll's whole span (windows of
// concurrent nodes overlap).
func (d rollData) figures() ([]report.FleetNode, report.FleetNode) {
	var nodes []report.FleetNode
	total := report.FleetNode{Node: "total"}
	for _, w := range d.windows {
		f := d.nodeFigures(w)
		nodes = append(nodes, f)
		total.Restarts += f.Restarts
		total.Recreated += f.Recreated
		total.SystemRestarts += f.SystemRestarts
		total.Evicted += f.Evicted
		total.UIDsChanged += f.UIDsChanged
	}
	total.Rescheduled = createdIn(d.records, d.rollStart, d.rollEnd)
	total.SoloUnavailableSeconds = unavailableSeconds(d.samples, d.member(SoloName), d.rollStart, d.rollEnd)
	total.EndpointRemovals = len(endpointRemovals(d.samples, d.member(fleetServices...), d.rollStart, d.rollEnd))
	total.Seconds = d.rollEnd.Sub(d.rollStart).Seconds()
	total.APIRequests = int(requestsIn(d.api, d.rollStart, d.rollEnd))
	// A pod gone from the API but on no node's list (never bound) still
	// counts in the total.
	total.UIDsChanged = max(total.UIDsChanged, len(uidsChanged(d.apiBefore, d.apiAfter, "")))
	return nodes, total
}

// describe is a figure line for a check's detail.
func describe(f report.FleetNode) string {
	return fmt.Sprintf("%d containers restarted, %d pods recreated, %d pods evicted, %d created, %d pod UIDs changed, single replica unavailable %.1fs, %d endpoint removals, kube-system restarts %d, %.0fs, %d API requests",
		f.Restarts, f.Recreated, f.Evicted, f.Rescheduled, f.UIDsChanged, f.SoloUnavailableSeconds, f.EndpointRemovals, f.SystemRestarts, f.Seconds, f.APIRequests)
}
