package preflight

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The checks of what else loses pods when a kubelet is swapped in place:
// besides container hashes and static-pod UIDs, the new kubelet re-admits
// every pod (HandlePodAdditions -> canAdmitPod), the node may go NotReady
// long enough for taint-based eviction, and the new binary may refuse the
// node's files or flags. Each check is a pure function over what was read
// from the node; the commands do the reading.

// Checks, the CHECK column.
const (
	CheckNodeAffinity     = "node-affinity"
	CheckTaints           = "taints"
	CheckResources        = "resources"
	CheckExecProbe        = "exec-probe"
	CheckCPUManager       = "cpu-manager"
	CheckDeviceCheckpoint = "device-checkpoint"
	CheckFlags            = "flags"
	CheckUserNamespaces   = "userns"
)

// NodeRow is the POD of a finding about the node rather than one pod.
const NodeRow = "(node)"

// Verdicts shared by several checks.
const (
	// KeptAdmitted is the patched kubelet's verdict for a pod that ran
	// before the swap: while the compat file lists one of its containers
	// (or records its static pod's UID), a rejection for node affinity or
	// selector, taints, resource fit or eviction pressure is waived
	// (kubeletcompat.AdmitDespite, asked by HandlePodAdditions after
	// canAdmitPod; like upstream's NotEvictPodOnKubeletRestart,
	// kubernetes#133803).
	KeptAdmitted       = "kept (admitted: started before the swap)"
	keptAdmittedReason = "the compat file lists its containers (record ran before the swap): the rejection is waived for a pod that ran before the kubelet (as upstream's NotEvictPodOnKubeletRestart, kubernetes#133803)"
	sameAsUpstream     = "same as upstream"
)

// Finding is one pod (or the node) that something other than a container
// hash loses at the swap.
type Finding struct {
	Pod           string `json:"pod"`
	Check         string `json:"check"`
	Unpatched     string `json:"unpatched"`
	Patched       string `json:"patched"`
	Why           string `json:"why"`
	PatchedReason string `json:"patchedReason"`
}

func podName(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func rejected(reason string) string {
	return "rejected: " + reason + " (pod Failed, containers killed)"
}

// IsMirrorPod says whether an API pod is the mirror of a static pod.
func IsMirrorPod(p *v1.Pod) bool {
	_, ok := p.Annotations["kubernetes.io/config.mirror"]
	return ok
}

// isStaticPod says whether the kubelet reads the pod from a file or URL
// (its config source is not the API server).
func isStaticPod(p *v1.Pod) bool {
	src, ok := p.Annotations["kubernetes.io/config.source"]
	return ok && src != "api"
}

// systemCriticalPriority is scheduling.SystemCriticalPriority.
const systemCriticalPriority = 2 * 1000000000

// isCriticalPod is the kubelet's kubetypes.IsCriticalPod: static and mirror
// pods and pods of system-critical priority.
func isCriticalPod(p *v1.Pod) bool {
	if isStaticPod(p) || IsMirrorPod(p) {
		return true
	}
	return p.Spec.Priority != nil && *p.Spec.Priority >= systemCriticalPriority
}

// activePod says whether the kubelet admits the pod at its start: pods that
// ended (Succeeded, Failed) are not re-admitted.
func activePod(p *v1.Pod) bool {
	return p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed && p.DeletionTimestamp == nil
}

// ---- 1. node affinity and node selector ----

// NodeAffinityReason is the rejection reason of a kubelet of version to for
// a pod whose node selector or required node affinity does not match: the
// predicate name, "MatchNodeSelector" up to 1.17 (predicates.
// ErrNodeSelectorNotMatch), "NodeAffinity" from 1.18 (the scheduler
// framework plugin nodeaffinity.Name, read in the 1.18-1.21 trees'
// pkg/kubelet/lifecycle/predicate.go).
func NodeAffinityReason(to kubeletcompat.Version) string {
	if to.Major == 1 && to.Minor < 18 {
		return "MatchNodeSelector"
	}
	return "NodeAffinity"
}

// NodeAffinity reports the pods whose nodeSelector or required node
// affinity no longer matches the node: the kubelet's admission
// (GeneralPredicates) rejects them when it re-admits every pod at start.
func NodeAffinity(to kubeletcompat.Version, node *v1.Node, pods []*v1.Pod) []Finding {
	var out []Finding
	for _, p := range pods {
		if !activePod(p) {
			continue
		}
		if why := nodeMismatch(p, node); why != "" {
			out = append(out, Finding{Pod: podName(p), Check: CheckNodeAffinity,
				Unpatched: rejected(NodeAffinityReason(to)), Patched: KeptAdmitted,
				Why: why, PatchedReason: keptAdmittedReason})
		}
	}
	return out
}

// NodeMismatch explains why the pod's nodeSelector or required node
// affinity does not match the node (the kubelet's admission rejects it for
// NodeAffinityReason), or is "" when it matches.
func NodeMismatch(p *v1.Pod, node *v1.Node) string { return nodeMismatch(p, node) }

// HasNodeConstraint reports whether the pod has a nodeSelector or a
// required node affinity: only then can the node's labels reject it.
func HasNodeConstraint(p *v1.Pod) bool {
	a := p.Spec.Affinity
	return len(p.Spec.NodeSelector) > 0 ||
		a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
}

// nodeMismatch explains why the pod does not match the node, or is "".
func nodeMismatch(p *v1.Pod, node *v1.Node) string {
	keys := make([]string, 0, len(p.Spec.NodeSelector))
	for k := range p.Spec.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := p.Spec.NodeSelector[k]
		got, ok := node.Labels[k]
		if !ok {
			return fmt.Sprintf("nodeSelector %s=%s: the node has no label %s", k, want, k)
		}
		if got != want {
			return fmt.Sprintf("nodeSelector %s=%s: the node's label is %s=%s", k, want, k, got)
		}
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return "required node affinity has no nodeSelectorTerms: it matches no node"
	}
	var whys []string
	for i, t := range terms {
		why := termMismatch(t, node)
		if why == "" {
			return ""
		}
		whys = append(whys, fmt.Sprintf("term %d: %s", i, why))
	}
	return "required node affinity: " + strings.Join(whys, "; ")
}

func termMismatch(t v1.NodeSelectorTerm, node *v1.Node) string {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return "empty term matches no node"
	}
	for _, r := range t.MatchExpressions {
		if !requirementMatches(r, node.Labels) {
			return "label " + describeRequirement(r, node.Labels)
		}
	}
	for _, r := range t.MatchFields {
		if r.Key != "metadata.name" {
			return fmt.Sprintf("field %s is not supported (only metadata.name)", r.Key)
		}
		if r.Operator != v1.NodeSelectorOpIn && r.Operator != v1.NodeSelectorOpNotIn {
			return fmt.Sprintf("field metadata.name: operator %s is not supported (only In, NotIn)", r.Operator)
		}
		if !requirementMatches(r, map[string]string{"metadata.name": node.Name}) {
			return "field " + describeRequirement(r, map[string]string{"metadata.name": node.Name})
		}
	}
	return ""
}

func describeRequirement(r v1.NodeSelectorRequirement, labels map[string]string) string {
	got, ok := labels[r.Key]
	have := "absent"
	if ok {
		have = strconv.Quote(got)
	}
	return fmt.Sprintf("%s %s [%s] (node: %s)", r.Key, r.Operator, strings.Join(r.Values, ","), have)
}

// requirementMatches is labels.Selector's semantics for one requirement.
func requirementMatches(r v1.NodeSelectorRequirement, labels map[string]string) bool {
	got, ok := labels[r.Key]
	switch r.Operator {
	case v1.NodeSelectorOpIn:
		return ok && contains(r.Values, got)
	case v1.NodeSelectorOpNotIn:
		return !ok || !contains(r.Values, got)
	case v1.NodeSelectorOpExists:
		return ok
	case v1.NodeSelectorOpDoesNotExist:
		return !ok
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if !ok || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(got, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == v1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ---- 2. taints ----

// Node lifecycle taints the node lifecycle controller puts on a node whose
// Ready condition is False (not-ready) or Unknown (unreachable: no status
// for --node-monitor-grace-period).
const (
	TaintNotReady    = "node.kubernetes.io/not-ready"
	TaintUnreachable = "node.kubernetes.io/unreachable"
)

// DefaultNodeMonitorGracePeriod is kube-controller-manager's default
// --node-monitor-grace-period: a node whose kubelet posts no status for that
// long becomes Unknown and gets the unreachable NoExecute taint.
const DefaultNodeMonitorGracePeriod = 40 * time.Second

// taintAdmissionMinor is the first kubelet minor whose admission rejects a
// non-static pod that does not tolerate a NoExecute taint of the node
// (kubernetes#101218, merged 2021-04 for 1.22; absent from the 1.18-1.21
// trees' predicate.go).
const taintAdmissionMinor = 22

// KubeletChecksTaints reports whether a kubelet of version v rejects, at
// admission, a pod that is not a static pod and does not tolerate a
// NoExecute taint of the node (TaintToleration, from 1.22).
func KubeletChecksTaints(v kubeletcompat.Version) bool {
	return v.Major > 1 || v.Major == 1 && v.Minor >= taintAdmissionMinor
}

// UntoleratedNoExecute returns the first NoExecute taint of the node that
// the pod does not tolerate, as the kubelet's admission looks for one
// (every NoExecute taint, tolerationSeconds ignored).
func UntoleratedNoExecute(p *v1.Pod, node *v1.Node) (v1.Taint, bool) {
	for _, t := range node.Spec.Taints {
		if t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if ok, _ := tolerationFor(p, t); !ok {
			return t, true
		}
	}
	return v1.Taint{}, false
}

// tolerationFor returns whether the pod tolerates taint and for how long
// (nil: for ever).
func tolerationFor(p *v1.Pod, taint v1.Taint) (bool, *int64) {
	tolerated, forever := false, false
	var lowest *int64
	for i := range p.Spec.Tolerations {
		t := &p.Spec.Tolerations[i]
		// Lt and Gt (numeric, behind the TaintTolerationComparisonOperators
		// gate of newer minors) tolerate nothing here, as with the gate off
		// and in the minors before those operators.
		if !t.ToleratesTaint(logr.Discard(), &taint, false) {
			continue
		}
		tolerated = true
		if t.TolerationSeconds == nil {
			forever = true
			continue
		}
		if lowest == nil || *t.TolerationSeconds < *lowest {
			s := *t.TolerationSeconds
			if s < 0 {
				s = 0 // the taint manager evicts at once
			}
			lowest = &s
		}
	}
	// The taint manager uses the lowest tolerationSeconds of the matching
	// tolerations (getMinTolerationTime); "for ever" only when none has one.
	if lowest != nil || !forever {
		return tolerated, lowest
	}
	return tolerated, nil
}

// Taints reports the pods a NoExecute taint removes around the swap:
//   - pods that do not tolerate a NoExecute taint the node has now: the
//     kubelet from 1.22 rejects them at re-admission (static pods excepted),
//     and the taint manager evicts them anyway;
//   - pods whose toleration of the not-ready or unreachable NoExecute taint
//     is shorter than the swap: while the kubelet is down the node goes
//     Unknown after grace (node-monitor-grace-period) and the node lifecycle
//     controller evicts them window-grace seconds later; a new kubelet that
//     reports NotReady while it starts gets the not-ready taint at once.
//
// The first finding is a summary row for the node (the lowest
// tolerationSeconds).
func Taints(to kubeletcompat.Version, node *v1.Node, pods []*v1.Pod, window, grace time.Duration) []Finding {
	var out []Finding
	type low struct {
		secs int64
		pod  string
		none bool
	}
	lowest := map[string]*low{}
	for _, p := range pods {
		if !activePod(p) {
			continue
		}
		if IsMirrorPod(p) {
			// Evicting a mirror pod deletes the API object only: the
			// kubelet recreates it; the static pod keeps running.
			continue
		}
		for _, t := range node.Spec.Taints {
			if t.Effect != v1.TaintEffectNoExecute || t.Key == TaintNotReady || t.Key == TaintUnreachable {
				continue
			}
			if ok, _ := tolerationFor(p, t); ok {
				continue
			}
			f := Finding{Pod: podName(p), Check: CheckTaints,
				Why: fmt.Sprintf("does not tolerate the node's taint %s=%s:NoExecute", t.Key, t.Value)}
			if to.Minor >= taintAdmissionMinor && !isStaticPod(p) {
				f.Unpatched, f.Patched, f.PatchedReason = rejected("TaintToleration"), KeptAdmitted, keptAdmittedReason
			} else {
				f.Unpatched, f.Patched = "evicted by the taint manager (not the swap)", "evicted by the taint manager (not the swap)"
				f.Why += fmt.Sprintf("; the %s kubelet does not check taints at admission", to)
				f.PatchedReason = "the node lifecycle controller evicts it whatever the kubelet"
			}
			out = append(out, f)
		}
		for _, key := range []string{TaintNotReady, TaintUnreachable} {
			ok, secs := tolerationFor(p, v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute})
			var s int64
			switch {
			case !ok:
				s = 0
			case secs == nil:
				continue
			default:
				s = *secs
			}
			if l := lowest[key]; l == nil || s < l.secs {
				lowest[key] = &low{secs: s, pod: podName(p), none: !ok}
			}
			risk := ""
			switch {
			case key == TaintUnreachable && window >= grace && time.Duration(s)*time.Second <= window-grace:
				risk = fmt.Sprintf("the node is Unknown after %s of a %s swap and the pod is evicted %ds later", grace, window, s)
			case key == TaintNotReady && time.Duration(s)*time.Second < window:
				risk = fmt.Sprintf("if the new kubelet reports NotReady while it starts (within the %s swap window) the pod is evicted after %ds", window, s)
			}
			if risk == "" {
				continue
			}
			tol := fmt.Sprintf("tolerationSeconds %d for %s:NoExecute", s, key)
			if !ok {
				tol = "no toleration for " + key + ":NoExecute"
			}
			out = append(out, Finding{Pod: podName(p), Check: CheckTaints,
				Unpatched: "may be evicted (pod deleted)", Patched: "may be evicted (pod deleted)",
				Why:           tol + ": " + risk,
				PatchedReason: "the node lifecycle controller evicts it, not the kubelet: keep the swap short or raise tolerationSeconds"})
		}
	}
	var parts []string
	for _, key := range []string{TaintNotReady, TaintUnreachable} {
		l := lowest[key]
		switch {
		case l == nil:
			parts = append(parts, key+": every pod tolerates it for ever")
		case l.none:
			parts = append(parts, fmt.Sprintf("%s: %s has no toleration (0s)", key, l.pod))
		default:
			parts = append(parts, fmt.Sprintf("%s: lowest tolerationSeconds %ds (%s)", key, l.secs, l.pod))
		}
	}
	unknown := "the node stays Ready-or-NotReady (the swap is shorter than node-monitor-grace-period)"
	if window >= grace {
		unknown = fmt.Sprintf("the node goes Unknown after %s (node-monitor-grace-period) and gets %s:NoExecute", grace, TaintUnreachable)
	}
	summary := Finding{Pod: NodeRow, Check: CheckTaints, Unpatched: "summary", Patched: "summary",
		Why:           fmt.Sprintf("swap window %s: %s; %s", window, unknown, strings.Join(parts, "; ")),
		PatchedReason: sameAsUpstream + ": taint-based eviction is the controller's"}
	return append([]Finding{summary}, out...)
}

// ---- 4. exec probe timeouts ----

// ExecProbes reports every exec probe when the upgrade crosses 1.20: from
// 1.20 the kubelet enforces an exec probe's timeoutSeconds (KEP-1972,
// feature gate ExecProbeTimeout, default true); before, an exec probe ran
// until it finished. A probe that takes longer than timeoutSeconds (default
// 1 s) fails from the swap on: a liveness probe restarts its container.
func ExecProbes(from, to kubeletcompat.Version, pods []*v1.Pod) []Finding {
	if !(from.Minor < 20 && to.Minor >= 20) {
		return nil
	}
	var out []Finding
	for _, p := range pods {
		if !activePod(p) {
			continue
		}
		for _, c := range p.Spec.Containers {
			for _, pr := range []struct {
				kind  string
				probe *v1.Probe
			}{{"liveness", c.LivenessProbe}, {"readiness", c.ReadinessProbe}, {"startup", c.StartupProbe}} {
				if pr.probe == nil || pr.probe.Exec == nil {
					continue
				}
				timeout := pr.probe.TimeoutSeconds
				if timeout == 0 {
					timeout = 1
				}
				effect := "fails and the pod turns unready"
				if pr.kind != "readiness" {
					effect = "fails and the container restarts after failureThreshold failures"
				}
				out = append(out, Finding{Pod: podName(p), Check: CheckExecProbe,
					Unpatched: "may restart or turn unready", Patched: "may restart or turn unready",
					Why: fmt.Sprintf("container %s: %s exec probe timeoutSeconds %d is enforced from 1.20 (KEP-1972, ExecProbeTimeout): a command that runs longer %s",
						c.Name, pr.kind, timeout, effect),
					PatchedReason: sameAsUpstream + ": raise timeoutSeconds, or run the target with --feature-gates=ExecProbeTimeout=false"})
			}
		}
	}
	return out
}

// ---- 3. resource fit ----

// Quantity lists are compared in these units: millicores for cpu, the value
// for everything else.
func amount(name v1.ResourceName, q resource.Quantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// PodRequests is the scheduler's computePodResourceRequest: the sum of the
// containers' requests, at least each init container's, plus the overhead.
func PodRequests(p *v1.Pod) map[v1.ResourceName]int64 {
	sum := map[v1.ResourceName]int64{}
	for _, c := range p.Spec.Containers {
		for n, q := range c.Resources.Requests {
			sum[n] += amount(n, q)
		}
	}
	for _, c := range p.Spec.InitContainers {
		for n, q := range c.Resources.Requests {
			if v := amount(n, q); v > sum[n] {
				sum[n] = v
			}
		}
	}
	for n, q := range p.Spec.Overhead {
		sum[n] += amount(n, q)
	}
	return sum
}

// isExtended is v1helper.IsExtendedResourceName.
func isExtended(n v1.ResourceName) bool {
	s := string(n)
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") {
		return false
	}
	return !strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix)
}

// ResourceFit replays the kubelet's re-admission of the node's pods
// (HandlePodAdditions: oldest first by creation time, static pods first,
// each checked against the pods admitted before it) against the
// allocatable the target kubelet computes, and reports those it would reject: OutOfpods, OutOfcpu,
// OutOfmemory, OutOfephemeral-storage, OutOf<hugepages/extended resource>,
// newest first. Critical pods (static, mirror, system priority) are not
// rejected: the kubelet evicts other pods to make room for them (patched
// or not), which is reported too.
func ResourceFit(allocatable v1.ResourceList, pods []*v1.Pod) []Finding {
	var active []*v1.Pod
	for _, p := range pods {
		if activePod(p) {
			active = append(active, p)
		}
	}
	// A static pod read from its file has no creation time (the mirror pod
	// the API lists has one), and the file source usually delivers before
	// the API server: static pods come first.
	created := func(p *v1.Pod) time.Time {
		if IsMirrorPod(p) || isStaticPod(p) {
			return time.Time{}
		}
		return p.CreationTimestamp.Time
	}
	sort.SliceStable(active, func(i, j int) bool {
		a, b := created(active[i]), created(active[j])
		if !a.Equal(b) {
			return a.Before(b)
		}
		return podName(active[i]) < podName(active[j])
	})
	alloc := map[v1.ResourceName]int64{}
	for n, q := range allocatable {
		alloc[n] = amount(n, q)
	}
	used := map[v1.ResourceName]int64{}
	admitted := 0
	var out []Finding
	for _, p := range active {
		req := PodRequests(p)
		for n := range req {
			// removeMissingExtendedResources: cluster-level resources
			// unknown to the node are not checked.
			if _, ok := alloc[n]; !ok && isExtended(n) {
				delete(req, n)
			}
		}
		var reasons, whys []string
		if int64(admitted+1) > alloc[v1.ResourcePods] {
			reasons = append(reasons, "OutOfpods")
			whys = append(whys, fmt.Sprintf("pods: %d admitted before it, allocatable %d", admitted, alloc[v1.ResourcePods]))
		}
		var names []v1.ResourceName
		for n, v := range req {
			if v != 0 && n != v1.ResourcePods {
				names = append(names, n)
			}
		}
		sort.Slice(names, func(i, j int) bool { return resourceOrder(names[i]) < resourceOrder(names[j]) })
		for _, n := range names {
			if req[n] > alloc[n]-used[n] {
				reasons = append(reasons, "OutOf"+string(n))
				whys = append(whys, fmt.Sprintf("%s: requests %s, %s used by older pods, allocatable %s", n, show(n, req[n]), show(n, used[n]), show(n, alloc[n])))
			}
		}
		if len(reasons) == 0 || isCriticalPod(p) {
			admitted++
			for n, v := range req {
				used[n] += v
			}
		}
		if len(reasons) == 0 {
			continue
		}
		f := Finding{Pod: podName(p), Check: CheckResources, Why: strings.Join(whys, "; ")}
		if isCriticalPod(p) {
			f.Unpatched = "admitted by evicting other pods (critical pod, " + reasons[0] + ")"
			f.Patched = f.Unpatched
			f.PatchedReason = sameAsUpstream + ": the critical-pod preemption runs inside admission, before any rejection the compat file could waive"
		} else {
			f.Unpatched, f.Patched, f.PatchedReason = rejected(reasons[0]), KeptAdmitted, keptAdmittedReason
		}
		out = append(out, f)
	}
	// Newest first: the pods the replay rejects are the newest ones.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// resourceOrder is fitsRequest's order: cpu, memory, ephemeral-storage, then
// the scalar resources (by name here; upstream walks a map).
func resourceOrder(n v1.ResourceName) string {
	switch n {
	case v1.ResourceCPU:
		return "0"
	case v1.ResourceMemory:
		return "1"
	case v1.ResourceEphemeralStorage:
		return "2"
	}
	return "3" + string(n)
}

func show(n v1.ResourceName, v int64) string {
	if n == v1.ResourceCPU {
		return resource.NewMilliQuantity(v, resource.DecimalSI).String()
	}
	if n == v1.ResourceMemory || n == v1.ResourceEphemeralStorage || strings.HasPrefix(string(n), v1.ResourceHugePagesPrefix) {
		return resource.NewQuantity(v, resource.BinarySI).String()
	}
	return strconv.FormatInt(v, 10)
}

// ---- eviction pressure ----

// CheckEvictionPressure is the CHECK of EvictionPressure.
const CheckEvictionPressure = "eviction-pressure"

// isBestEffort is v1qos.GetPodQOS(pod) == BestEffort: no container (init
// included) requests or limits cpu or memory.
func isBestEffort(p *v1.Pod) bool {
	for _, cs := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, l := range []v1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for n, q := range l {
					if (n == v1.ResourceCPU || n == v1.ResourceMemory) && !q.IsZero() {
						return false
					}
				}
			}
		}
	}
	return true
}

// EvictionPressure reports the pods the eviction manager's admit handler
// rejects ("Evicted") while the node has a pressure condition: under memory
// pressure alone, BestEffort pods that do not tolerate the memory-pressure
// taint; under disk or PID pressure, every pod; critical pods never. The
// new kubelet knows the pressure only once its eviction manager has
// synchronized (every 10 s), so the verdict is "may be rejected".
func EvictionPressure(node *v1.Node, pods []*v1.Pod) []Finding {
	var conds []string
	memoryOnly := true
	for _, c := range node.Status.Conditions {
		switch c.Type {
		case v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure:
			if c.Status == v1.ConditionTrue {
				conds = append(conds, string(c.Type))
				if c.Type != v1.NodeMemoryPressure {
					memoryOnly = false
				}
			}
		}
	}
	if len(conds) == 0 {
		return nil
	}
	var out []Finding
	for _, p := range pods {
		if !activePod(p) || isCriticalPod(p) {
			continue
		}
		if memoryOnly {
			if !isBestEffort(p) {
				continue
			}
			if ok, _ := tolerationFor(p, v1.Taint{Key: "node.kubernetes.io/memory-pressure", Effect: v1.TaintEffectNoSchedule}); ok {
				continue
			}
		}
		why := "the node has " + strings.Join(conds, ", ")
		if memoryOnly {
			why += " and the pod is BestEffort"
		}
		out = append(out, Finding{Pod: podName(p), Check: CheckEvictionPressure,
			Unpatched: "may be rejected: Evicted (pod Failed, containers killed)", Patched: KeptAdmitted,
			Why:           why + ": rejected at re-admission once the new kubelet's eviction manager has seen it",
			PatchedReason: keptAdmittedReason})
	}
	return out
}
