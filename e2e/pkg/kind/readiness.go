package kind

// The readiness watchers on kind (ScenarioOptions.Readiness): across each
// node's kubelet swap, the Ready condition of every pod of the workloads'
// namespace and the EndpointSlices of the Services in front of the
// Deployment and the StatefulSet, through the cluster's API server
// (package readiness, shared with the local provider). A pod counts for
// the swap of the node it runs on only; kube-system (kube-proxy, CoreDNS,
// which kubeadm upgrade apply rolls out) is not watched.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// readyServices are the Services whose EndpointSlices are followed: the
// Deployment's and the StatefulSet's (headless).
var readyServices = []string{WebService, StatefulSetName}

// The report's groups of a node's pods, in this order.
const (
	groupDeployment  = "deployment/" + DeploymentName
	groupStatefulSet = "statefulset/" + StatefulSetName
	groupDaemonSet   = "daemonset/" + DaemonSetName
	groupProbes      = "pod/" + ProbePodName
	// groupStatic: the corpus's static pods (their mirror pods). A static
	// pod comes from a file, which carries no API status; the patched
	// kubelet gives it the status record copied from its mirror pod (patch
	// 3), so it is kept Ready like an API pod, before and from 1.35:
	// asserted on every patched step. Upstream has no status for it at a
	// restart: NotReady until its probe passes.
	groupStatic = "static pods"
	groupOther  = "other"
)

var groupOrder = []string{groupDeployment, groupStatefulSet, groupDaemonSet, groupProbes, groupStatic, groupOther}

// readyGroup is how one pod is reported.
type readyGroup struct {
	name string
	// endpoints: the pod is behind one of readyServices.
	endpoints bool
}

// groupOf is the workload a pod of the namespace belongs to: a static
// pod's mirror pod, else by its app label (the workloads', workloads.go).
func groupOf(p *v1.Pod) readyGroup {
	if _, mirror := p.Annotations[v1.MirrorPodAnnotationKey]; mirror {
		return readyGroup{name: groupStatic}
	}
	switch p.Labels["app"] {
	case DeploymentName:
		return readyGroup{name: groupDeployment, endpoints: true}
	case StatefulSetName:
		return readyGroup{name: groupStatefulSet, endpoints: true}
	case DaemonSetName:
		return readyGroup{name: groupDaemonSet}
	case ProbePodName:
		return readyGroup{name: groupProbes}
	}
	return readyGroup{name: groupOther}
}

// probePeriod is the longest readiness probe period of the pod's
// containers (the API's default, 10 s, when a probe leaves it unset; 0
// without a readiness probe).
func probePeriod(p *v1.Pod) int32 {
	var period int32
	for _, c := range p.Spec.Containers {
		if c.ReadinessProbe == nil {
			continue
		}
		pp := c.ReadinessProbe.PeriodSeconds
		if pp == 0 {
			pp = 10
		}
		period = max(period, pp)
	}
	return period
}

// podsOn are the names of the pods last seen on node, sorted.
func podsOn(pods map[string]*v1.Pod, node string) []string {
	var out []string
	for name, p := range pods {
		if p.Spec.NodeName == node {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// nodeReadiness turns the samples of node's swap (its new kubelet started
// at started) into the report's groups: only the pods the watch last saw
// on node (a pod of another node is not this swap's), by workload.
func nodeReadiness(samples []readiness.Sample, pods map[string]*v1.Pod, node string, started time.Time) []report.ReadyGroup {
	figures := readiness.NewFigures(samples, started)
	groups := map[string]*report.ReadyGroup{}
	for _, name := range podsOn(pods, node) {
		g := groupOf(pods[name])
		rg, ok := groups[g.name]
		if !ok {
			rg = &report.ReadyGroup{Group: g.name, Endpoints: g.endpoints}
			groups[g.name] = rg
		}
		rg.PeriodSeconds = max(rg.PeriodSeconds, probePeriod(pods[name]))
		rg.Pods = append(rg.Pods, figures.Pod(name))
	}
	var out []report.ReadyGroup
	for _, name := range groupOrder {
		if g, ok := groups[name]; ok {
			out = append(out, *g)
		}
	}
	return out
}

// nodeReadinessChecks are the checks of one node's swap to 1.toMinor, one
// per group (named after prefix): patched, no static pod goes NotReady, nor
// before readiness.UpstreamKeepsReadyMinor any API pod or ready endpoint,
// and each ends Ready; the unpatched control and the API pods of steps to
// 1.35 or later (upstream's own keep) are reported, not asserted.
func nodeReadinessChecks(prefix, variant string, toMinor int, groups []report.ReadyGroup) []report.Check {
	var checks []report.Check
	for _, g := range groups {
		sum := g.Sum()
		c := report.Check{Name: fmt.Sprintf("%s: readiness %s %s (%d pods, probe period %ds)", prefix, variant, g.Group, len(g.Pods), g.PeriodSeconds), Passed: true}
		c.Detail = fmt.Sprintf("%d Ready->NotReady, longest NotReady %.1fs", sum.Transitions, sum.LongestGapSeconds)
		if g.Endpoints {
			c.Detail += fmt.Sprintf("; %d endpoint removals, longest without a ready endpoint %.1fs", sum.EndpointRemovals, sum.LongestEndpointGapSeconds)
		}
		switch {
		case variant != report.Patched && g.Group == groupStatic:
			c.Detail += "; reported (the control: upstream gives a static pod no status at a restart, so NotReady until its probe passes)"
		case g.Group != groupStatic && toMinor >= readiness.UpstreamKeepsReadyMinor:
			c.Detail += "; reported, not asserted (upstream keeps Ready across a kubelet restart from 1.35)"
		case variant != report.Patched:
			c.Detail += "; reported (the control: upstream before 1.35 reports every pod NotReady at its first status update"
			if sum.Transitions == 0 {
				c.Detail += "; no gap seen here"
			}
			c.Detail += ")"
		default:
			if bad := readiness.NotKept(g.Pods); len(bad) > 0 {
				c.Passed = false
				c.Detail += "; FAIL: " + strings.Join(bad, "; ")
			}
		}
		checks = append(checks, c)
	}
	return checks
}

// settledOn says which pod on node is not Ready, or behind a Service
// without a ready endpoint ("" when none); pods deleted since are left
// out, and at least one pod must run there. pods gives the watch's pods.
func settledOn(pods func() map[string]*v1.Pod, node string) func(readiness.Sample) string {
	return func(smp readiness.Sample) string {
		all := pods()
		var why []string
		n := 0
		for _, name := range podsOn(all, node) {
			ready, exists := smp.Ready[name]
			if !exists {
				continue
			}
			n++
			if !ready {
				why = append(why, name+" not Ready")
			}
			if groupOf(all[name]).endpoints && !smp.Serving[name] {
				why = append(why, name+" without a ready endpoint")
			}
		}
		if n == 0 {
			why = append(why, "no pod of "+Namespace+" on "+node)
		}
		return strings.Join(why, ", ")
	}
}

// WatchClient is a client of the cluster without the 30 s timeout of its
// Client, which would cut every watch after 30 s.
func (c *Cluster) WatchClient() (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// watchReadiness starts the watchers before n's swap and begins the
// samples once every pod on n is Ready with its endpoints.
func (r *ClusterRun) watchReadiness(ctx context.Context, n *Node) (*readiness.Watch, error) {
	cs, err := r.Cluster.WatchClient()
	if err != nil {
		return nil, err
	}
	w, err := readiness.Start(ctx, cs, readiness.Options{Namespace: Namespace, Services: readyServices})
	if err != nil {
		return nil, fmt.Errorf("%s: readiness watchers: %w", n.name, err)
	}
	if err := w.WaitState(ctx, 2*time.Minute, settledOn(w.Pods, n.name)); err != nil {
		w.End()
		return nil, fmt.Errorf("%s: readiness: before the swap: %w", n.name, err)
	}
	w.Begin()
	r.Logf("%s: readiness: watching the Ready condition of its %d pods of %s and the EndpointSlices (%s) of services %s",
		n.name, len(podsOn(w.Pods(), n.name)), Namespace, w.SliceVersion, strings.Join(readyServices, " "))
	return w, nil
}

// endReadiness ends n's watch after its post-swap checks (once its pods
// are Ready with their endpoints again, a minute at most) and returns the
// groups of the pods on n.
func (r *ClusterRun) endReadiness(ctx context.Context, w *readiness.Watch, n *Node, started time.Time) []report.ReadyGroup {
	if err := w.WaitState(ctx, time.Minute, settledOn(w.Pods, n.name)); err != nil {
		r.Logf("%s: readiness: not settled at the end: %v", n.name, err)
	}
	samples := w.End()
	return nodeReadiness(samples, w.Pods(), n.name, started)
}
