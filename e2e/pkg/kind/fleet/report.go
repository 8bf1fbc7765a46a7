package fleet

// A fleet roll's report (its figures and checks) and what it reads of the
// nodes: their kubelets in the API, kubernetes-select's stage2.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// adminConf is kubeadm's admin kubeconfig on the control-plane node.
const adminConf = "/etc/kubernetes/admin.conf"

// kubeletVersions are the nodes' kubelet versions, by node.
func (f *fleetRun) kubeletVersions(ctx context.Context) (map[string]string, error) {
	list, err := f.Cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range list.Items {
		out[n.Name] = n.Status.NodeInfo.KubeletVersion
	}
	return out, nil
}

// isKubelet says whether a reported kubelet version is version's, patched
// (+compat.N) or not as patched says.
func isKubelet(reported, version string, patched bool) bool {
	base, _, _ := strings.Cut(reported, "+")
	return base == "v"+version && strings.Contains(reported, "+compat.") == patched
}

// reportRoll adds the roll's figures to the report, and its checks: our
// rolls restart nothing, evict nothing and keep every pod UID; the
// anchors' (drain, naive) are reported.
func (f *fleetRun) reportRoll(ctx context.Context) error {
	nodes, total := f.data.figures()
	roll := report.FleetRoll{Name: f.rollName(), Cluster: f.Name, Step: f.cur().String(), Variant: f.Variant(), Order: f.order, Nodes: nodes, Total: total,
		APIBackgroundPerSecond: f.data.apiBackground()}
	f.Report.Fleet = append(f.Report.Fleet, roll)
	for _, n := range nodes {
		f.Logf("%s: %s: %s", n.Node, n.Outcome, describe(n))
	}
	f.Logf("total: %s; the API server's background before the roll: %.1f requests/s", describe(total), roll.APIBackgroundPerSecond)

	versions, err := f.kubeletVersions(ctx)
	if err != nil {
		return err
	}
	var wrong []string
	for _, w := range f.data.windows {
		if w.Outcome == outcomeReplaced {
			// Gone with its Machine; its replacement is checked below.
			if v, still := versions[w.Node]; still {
				wrong = append(wrong, fmt.Sprintf("%s %s (replaced: still in the API)", w.Node, v))
			}
			continue
		}
		want, patched := f.cur().To, f.Patched
		if w.Outcome != outcomeUpgraded {
			want, patched = f.cur().From, true
		}
		if !isKubelet(versions[w.Node], want, patched) {
			wrong = append(wrong, fmt.Sprintf("%s %s (%s: want v%s)", w.Node, versions[w.Node], w.Outcome, want))
		}
	}
	if f.capi != nil && f.capi.replace {
		// The new machines boot the target's node image (its kubelet patched).
		for node, v := range versions {
			if !isKubelet(v, f.cur().To, true) {
				wrong = append(wrong, fmt.Sprintf("%s %s (a replacement: want v%s)", node, v, f.cur().To))
			}
		}
	}
	sort.Strings(wrong)
	f.Record(report.Check{Name: fmt.Sprintf("%s: every node's kubelet as the roll left it", f.label()), Passed: len(wrong) == 0,
		Detail: fmt.Sprintf("order %s; wrong: %s", strings.Join(f.order, " "), list(wrong))})

	figures := describe(total)
	removed := endpointRemovals(f.data.samples, f.data.member(fleetServices...), f.data.rollStart, f.data.rollEnd)
	if !f.Patched {
		detail := figures + "; endpoints removed: " + list(removed)
		if f.naive {
			// No drain: whatever the API deleted in the roll was not
			// evicted by it (a static pod's mirror under a new UID, say).
			detail += fmt.Sprintf("; no drain: %d pods deleted in the roll, UIDs changed: %s", total.Evicted, list(uidsChanged(f.data.apiBefore, f.data.apiAfter, "")))
		}
		f.Record(report.Check{Name: fmt.Sprintf("%s: the anchor's cost (reported)", f.label()), Passed: true, Detail: detail})
		return nil
	}
	var restarted []string
	for _, n := range nodes {
		if n.Detail != "" {
			restarted = append(restarted, n.Node+": "+n.Detail)
		}
	}
	f.Record(report.Check{Name: fmt.Sprintf("%s: 0 containers restarted, 0 pods recreated (CRI, every node)", f.label()),
		Passed: total.Restarts == 0 && total.Recreated == 0, Detail: figures + "; " + list(restarted)})
	changed := uidsChanged(f.data.apiBefore, f.data.apiAfter, "")
	f.Record(report.Check{Name: fmt.Sprintf("%s: 0 pods evicted or created, 0 pod UIDs changed (API)", f.label()),
		Passed: total.Evicted == 0 && total.Rescheduled == 0 && len(changed) == 0,
		Detail: fmt.Sprintf("%d deleted, %d created, UIDs changed: %s", total.Evicted, total.Rescheduled, list(changed))})
	// The runtime-2.0 roll (issue 48, 3) and the CAPI roll in place (issue
	// 49: its figures' point) hold it to 0; the others report it.
	readiness, removalsOK := "readiness across the roll (reported)", true
	if f.runtimeFrom != (plan.Runtime{}) || (f.capi != nil && !f.capi.replace) {
		readiness, removalsOK = "0 endpoint removals across the roll", total.EndpointRemovals == 0
	}
	f.Record(report.Check{Name: fmt.Sprintf("%s: %s", f.label(), readiness), Passed: removalsOK,
		Detail: fmt.Sprintf("single replica without a ready endpoint %.1fs, %d endpoint removals (Services %s): %s", total.SoloUnavailableSeconds, total.EndpointRemovals, strings.Join(fleetServices, " "), list(removed))})
	return nil
}

// label names the roll in its checks: the cluster and the roll, and the
// step on the minors roll (a set of checks per step).
func (f *fleetRun) label() string {
	if f.minors {
		return fmt.Sprintf("%s %s %s", f.Name, f.roll, f.cur())
	}
	return f.Name + " " + f.roll
}

func (f *fleetRun) rollName() string {
	switch {
	case f.capi != nil:
		return f.capiRollName()
	case f.drain:
		return "drain (cordon, kubectl drain, swap, uncordon)"
	case f.naive:
		return fmt.Sprintf("naive (SUC, concurrency %d, released kubelets, no drain)", f.concurrency)
	case f.fault:
		return fmt.Sprintf("SUC, concurrency %d, gate fails on worker %d", f.concurrency, FaultWorker)
	case f.runtimeFrom != (plan.Runtime{}):
		return fmt.Sprintf("SUC, concurrency %d, containerd %s -> %s first (KC_RUNTIME), runtime gate fails on worker %d", f.concurrency, f.runtimeFrom.Version, f.runtime.Version, FaultWorker)
	case f.runtime != (plan.Runtime{}):
		return fmt.Sprintf("SUC, concurrency %d, containerd %s first (KC_RUNTIME), runtime gate fails on worker %d", f.concurrency, f.runtime.Version, FaultWorker)
	case f.minors:
		return fmt.Sprintf("SUC, concurrency %d, minor %d of %d (cluster born at %s)", f.concurrency, f.step+1, len(f.Steps), f.Steps[0].From)
	}
	return fmt.Sprintf("SUC, concurrency %d", f.concurrency)
}

// waitKubelet waits until the API has n Ready from a kubelet of version
// (patched or not) that posted its status after since.
func (f *fleetRun) waitKubelet(ctx context.Context, n *kind.Node, version string, patched bool, since time.Time, timeout time.Duration) error {
	return kind.Poll(ctx, timeout, func() error {
		nd, err := f.Cluster.Client.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !isKubelet(nd.Status.NodeInfo.KubeletVersion, version, patched) {
			return fmt.Errorf("%s reports kubelet %s", n.Name(), nd.Status.NodeInfo.KubeletVersion)
		}
		for _, c := range nd.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue && c.LastHeartbeatTime.Time.After(since.Add(-time.Second)) {
				return nil
			}
		}
		return fmt.Errorf("%s not Ready since %s", n.Name(), since.Format("15:04:05"))
	})
}

// stage2 is the version kubernetes-select serves as stage2 on n.
func stage2(ctx context.Context, n *kind.Node) (string, error) {
	out, err := n.Exec(ctx, nil, "kubernetes-select", "status")
	if err != nil {
		return "", fmt.Errorf("%s: kubernetes-select status: %w", n.Name(), err)
	}
	return stageVersion(string(out), "stage2"), nil
}

// stageVersion reads kubernetes-select status ("stage2: 1.30.14 (symlink)").
func stageVersion(status, stage string) string {
	for _, line := range strings.Split(status, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == stage+":" {
			return f[1]
		}
	}
	return ""
}

// list is xs, space-separated, or "none".
func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, " ")
}
