package kubeletcompat

import (
	"strings"

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
// AppArmor, unknown reasons) rejects the pod as upstream does.
func WaivedRejection(reason string) bool {
	switch reason {
	case ReasonNodeAffinity, ReasonMatchNodeSelector, ReasonTaintToleration, ReasonTolerationsNotMatch, ReasonEvicted:
		return true
	}
	return strings.HasPrefix(reason, ReasonOutOfPrefix) && len(reason) > len(ReasonOutOfPrefix)
}

// PodStartedBefore reports whether a pod was started before this kubelet,
// judged by the compat file alone: one of its containers' IDs (as the pod
// status reports them, runtime:// prefix stripped) is among the containers
// the file lists, or its UID is the UID the file records for a static pod.
// A pod created after the file was recorded is never such a pod. Without a
// file in force the answer is no. The string says why.
func (d *Decider) PodStartedBefore(pod *v1.Pod) (bool, string) {
	if pod == nil || !d.InForce() {
		return false, ""
	}
	for _, statuses := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range statuses {
			id := containerIDOf(statuses[i].ContainerID)
			if _, ok := d.containers[id]; ok && id != "" {
				return true, "container " + statuses[i].Name + " (" + id + ") is listed in the compat file"
			}
		}
	}
	if pod.UID != "" && d.uids[string(pod.UID)] {
		return true, "the compat file records the static pod's UID " + string(pod.UID)
	}
	return false, ""
}

// AdmitDespite reports whether the kubelet admits a pod although an
// admission handler rejected it for reason: the reason is one that
// WaivedRejection waives and the pod was started before this kubelet
// (PodStartedBefore). Pods created after the file was recorded, and every
// pod without a file in force, are admitted exactly as upstream admits them.
func (d *Decider) AdmitDespite(pod *v1.Pod, reason string) (bool, string) {
	if !WaivedRejection(reason) {
		return false, ""
	}
	return d.PodStartedBefore(pod)
}

// containerIDOf strips the runtime's prefix from a pod status container ID
// ("containerd://<id>" -> "<id>").
func containerIDOf(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		return s[i+len("://"):]
	}
	return s
}

// AdmitDespite is Decider.AdmitDespite on the compat file as it is now; the
// kubelet asks it when an admission handler rejects a pod. A waived
// rejection is logged once per pod. Without a file in force, or for a nil
// Compat, it is false: upstream behaviour.
func (c *Compat) AdmitDespite(pod *v1.Pod, reason, message string) bool {
	admit, why := c.decider().AdmitDespite(pod, reason)
	if admit {
		c.logOnce("admit "+string(pod.UID), "Admitting a pod started before this kubelet despite an admission rejection",
			"pod", pod.Namespace+"/"+pod.Name, "podUID", string(pod.UID), "reason", reason, "message", message, "startedBefore", why)
	}
	return admit
}
