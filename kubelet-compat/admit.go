package kubeletcompat

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Admission rejection reasons that a pod started before this kubelet is
// admitted despite. The kubelet re-admits every pod it is given when it
// starts, so a node label, taint, allocatable or pressure that changed while
// the pod ran would kill a pod the previous kubelet ran a minute earlier
// (kubernetes#76322, #99708, #123859). Upstream's NotEvictPodOnKubeletRestart
// (kubernetes#133803) skips the affinity and taint checks for pods that
// already started; these are the reasons the kubelets 1.18 to 1.21 give for
// those checks, resource fit and eviction pressure.
const (
	// ReasonNodeAffinity is the predicate name of node selector and
	// required node affinity (the NodeAffinity plugin, 1.18 and later).
	ReasonNodeAffinity = "NodeAffinity"
	// ReasonMatchNodeSelector is the same predicate before 1.18.
	ReasonMatchNodeSelector = "MatchNodeSelector"
	// ReasonTaintToleration and ReasonTolerationsNotMatch are the taint
	// checks of kubelets that have them (the kubelets 1.18 to 1.21 do not
	// check taints at admission).
	ReasonTaintToleration     = "TaintToleration"
	ReasonTolerationsNotMatch = "PodToleratesNodeTaints"
	// ReasonOutOfPrefix starts the resource fit reasons: OutOfcpu,
	// OutOfmemory, OutOfpods, OutOf<extended resource>.
	ReasonOutOfPrefix = "OutOf"
	// ReasonEvicted is the eviction manager's rejection under node pressure.
	ReasonEvicted = "Evicted"
)

// WaivedRejection reports whether an admission rejection reason is one that
// a pod started before this kubelet is admitted despite: node affinity or
// selector, taints, resource fit and eviction pressure. Anything else (host
// ports, node name, sysctls, device, CPU, memory or topology allocation,
// AppArmor, a node feature it does not declare (PodFeatureUnsupported),
// unknown reasons) rejects the pod as upstream does.
func WaivedRejection(reason string) bool {
	switch reason {
	case ReasonNodeAffinity, ReasonMatchNodeSelector, ReasonTaintToleration, ReasonTolerationsNotMatch, ReasonEvicted:
		return true
	}
	return strings.HasPrefix(reason, ReasonOutOfPrefix) && len(reason) > len(ReasonOutOfPrefix)
}

// ResourceWaiverWindow bounds the resource-fit and eviction waivers to the
// first start of the kubelet after the swap: the kubelet must have started
// within this time after the compat file was recorded (record runs right
// before the swap). A later restart of the same kubelet (say, to raise
// --kube-reserved) re-admits for resources and pressure exactly as
// upstream does, so the operator's new reservation holds; affinity and
// taint waivers go on for pods that still run, the direction upstream's
// NotEvictPodOnKubeletRestart proposal (kubernetes#133803) takes for every
// kubelet restart.
const ResourceWaiverWindow = time.Hour

// RuntimePod is what the container runtime itself reports, at admission,
// about the pod sandboxes and containers labelled with one pod UID
// (io.kubernetes.pod.uid): never what the pod's API status says, which any
// user with pods/status rights can write.
type RuntimePod struct {
	// RunningContainerIDs are the IDs of the pod's running containers.
	RunningContainerIDs []string
	// SandboxReady is set when a sandbox of the pod runs.
	SandboxReady bool
}

// RuntimeLookup asks the container runtime about the pod with a UID. The
// kubelet sets one (Compat.SetRuntime) over its container runtime; without
// one no pod counts as started before this kubelet.
type RuntimeLookup func(podUID string) (RuntimePod, error)

// isResourceReason reports whether reason is a resource-fit or eviction
// rejection, the waivers that end with the first start after the swap.
func isResourceReason(reason string) bool {
	return reason == ReasonEvicted || strings.HasPrefix(reason, ReasonOutOfPrefix)
}

// PodStartedBefore reports whether a pod was started before this kubelet,
// judged by the compat file and what the container runtime runs (rt, for
// the pod's UID): the runtime runs a container of this pod that the file
// lists, or the pod is a static pod whose UID the file records and the
// runtime runs a sandbox with that UID. The pod's API status is never
// evidence. Without a file in force the answer is no. The string says why.
func (d *Decider) PodStartedBefore(pod *v1.Pod, rt RuntimePod) (bool, string) {
	if pod == nil || pod.UID == "" || !d.InForce() {
		return false, ""
	}
	for _, id := range rt.RunningContainerIDs {
		if _, ok := d.containers[id]; ok && id != "" {
			return true, "the runtime runs container " + id + " of the pod, and the compat file lists it"
		}
	}
	if d.uids[string(pod.UID)] && rt.SandboxReady {
		return true, "the compat file records the static pod's UID " + string(pod.UID) + " and the runtime runs its sandbox"
	}
	return false, ""
}

// AdmitDespite reports whether the kubelet admits a pod although an
// admission handler rejected it for reason: the reason is one that
// WaivedRejection waives, the pod was started before this kubelet
// (PodStartedBefore, on what the runtime runs), and, for resource fit and
// eviction, this is the first start after the swap (ResourceWaiverWindow).
// Pods created after the file was recorded, and every pod without a file
// in force, are admitted exactly as upstream admits them.
func (d *Decider) AdmitDespite(pod *v1.Pod, rt RuntimePod, reason string) (bool, string) {
	if !WaivedRejection(reason) {
		return false, ""
	}
	if isResourceReason(reason) && !d.ResourceWaiversHold() {
		return false, ""
	}
	return d.PodStartedBefore(pod, rt)
}

// ResourceWaiversHold reports whether resource-fit and eviction rejections
// can be waived: this kubelet started within ResourceWaiverWindow after the
// file was recorded (the first start after the swap).
func (d *Decider) ResourceWaiversHold() bool {
	if d.file == nil {
		return false
	}
	return !d.start.Before(d.file.RecordedAt) && d.start.Sub(d.file.RecordedAt) <= ResourceWaiverWindow
}

// SetRuntime gives the Compat the kubelet's view of the container
// runtime, which admission decisions rest on. Safe to call at any time.
func (c *Compat) SetRuntime(lookup RuntimeLookup) {
	if c != nil && lookup != nil {
		c.runtime.Store(lookup)
	}
}

// Waiver returns what the kubelet's admission of a pod it adds passes to
// canAdmitPodWaiving: whether a handler's rejection of this pod is
// overruled (AdmitDespite). The handlers after an overruled one still
// decide, so a waived rejection never hides another.
func (c *Compat) Waiver(pod *v1.Pod) func(reason, message string) bool {
	return func(reason, message string) bool { return c.AdmitDespite(pod, reason, message) }
}

// AdmitDespite is Decider.AdmitDespite on the compat file as it is now and
// on what the container runtime runs for the pod's UID; the kubelet asks it
// when an admission handler rejects a pod. A waived rejection is logged
// once per pod. Without a file in force, without a runtime (SetRuntime),
// when the runtime cannot answer, or for a nil Compat, it is false:
// upstream behaviour.
func (c *Compat) AdmitDespite(pod *v1.Pod, reason, message string) bool {
	if c == nil || pod == nil || !WaivedRejection(reason) {
		return false
	}
	d := c.decider()
	if !d.InForce() {
		return false
	}
	lookup, _ := c.runtime.Load().(RuntimeLookup)
	if lookup == nil {
		c.logOnce("admit no runtime", "Not admitting pods despite a rejection: the kubelet gave no container runtime to check them against")
		return false
	}
	rt, err := lookup(string(pod.UID))
	if err != nil {
		c.logOnce("admit runtime "+string(pod.UID), "Not admitting a pod despite a rejection: the container runtime did not answer", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return false
	}
	admit, why := d.AdmitDespite(pod, rt, reason)
	if admit {
		c.noteAdmitted(string(pod.UID), pod.Namespace, pod.Name, reason, message)
		c.logOnce("admit "+string(pod.UID), "Admitting a pod started before this kubelet despite an admission rejection",
			"pod", pod.Namespace+"/"+pod.Name, "podUID", string(pod.UID), "reason", reason, "message", message, "startedBefore", why)
	}
	return admit
}
