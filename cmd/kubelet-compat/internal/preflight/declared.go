package preflight

import (
	"fmt"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	v1 "k8s.io/api/core/v1"
)

// ---- 7. node declared features (KEP-5328) ----

// CheckDeclaredFeatures is the CHECK of DeclaredFeatures.
const CheckDeclaredFeatures = "declared-features"

// nodeDeclaredFeaturesGate turns on the kubelet's declared-features admit
// handler: alpha (off) in 1.35, beta (on) in 1.36, GA and locked on in 1.37.
const nodeDeclaredFeaturesGate = "NodeDeclaredFeatures"

// declaredFeature is a node feature that the kubelet's admit handler infers
// a pod needs (component-helpers' nodedeclaredfeatures registry, its
// InferForScheduling): a kubelet that does not declare it rejects the pod
// with PodFeatureUnsupported, also a pod that ran a minute earlier.
// Features inferred only for pod updates (the in-place resize ones) never
// reject a running pod at a kubelet start and are not listed.
type declaredFeature struct {
	// name is the feature as the node declares it, also its gate's name.
	name string
	// since is the first kubelet minor whose registry has the feature: an
	// older kubelet infers nothing for it.
	since int
	// onFrom is the first minor whose gate defaults on (0: none up to 1.37).
	onFrom int
	// validated says the API validation of the field the feature infers
	// from follows the same gate: a kubelet with it off refuses a static
	// pod's manifest before admission.
	validated bool
	needs     func(p *v1.Pod) bool
	// what says what the pod asks for, for the finding.
	what string
}

// declaredFeatures is the registry of 1.35 .. 1.37 as far as admission
// goes. VolumeBindMountOptions (1.37, alpha) is left out: only a 1.37 API
// server accepts the field, and a kubelet before 1.37 does not know the
// feature, so no swap between released minors rejects a running pod for it.
// UserNamespacesHostNetworkSupport (1.36, alpha) also needs the runtime's
// support, which the kubelet reads from the runtime: a pod that runs had it.
var declaredFeatures = []declaredFeature{
	{name: "RestartAllContainersOnContainerExits", since: 35, onFrom: 36, validated: true, needs: restartsAllContainers,
		what: "a restartPolicyRules action RestartAllContainers"},
	{name: "UserNamespacesHostNetworkSupport", since: 36, needs: userNamespaceHostNetwork,
		what: "hostNetwork with hostUsers: false"},
}

func restartsAllContainers(p *v1.Pod) bool {
	for _, cs := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, r := range c.RestartPolicyRules {
				if r.Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

func userNamespaceHostNetwork(p *v1.Pod) bool {
	return p.Spec.HostNetwork && p.Spec.HostUsers != nil && !*p.Spec.HostUsers
}

// gateOn is a feature gate of a kubelet of minor, from the node's
// featureGates (config file and --feature-gates) or its default.
func gateOn(gates map[string]bool, name string, minor, onFrom int) bool {
	if on, ok := gates[name]; ok {
		return on
	}
	return onFrom != 0 && minor >= onFrom
}

// DeclaredFeatures reports the pods the target kubelet rejects at its start
// because they need a node feature it does not declare: from 1.36 (1.35
// with the alpha gate) a starting kubelet re-admits every pod against the
// features it declares, and the features it declares follow its feature
// gates. A rollback to a kubelet whose gate is off (1.36 -> 1.35 with
// NodeDeclaredFeatures enabled there; any swap to a target whose
// featureGates turn a feature off) sets such pods Failed. The patched
// kubelet does not waive it: a kubelet without the feature cannot honour
// what the pod asks for.
func DeclaredFeatures(to kubeletcompat.Version, gates map[string]bool, pods []*v1.Pod) []Finding {
	handler := to.Minor >= 37 || gateOn(gates, nodeDeclaredFeaturesGate, to.Minor, 36)
	var out []Finding
	for _, p := range pods {
		if !activePod(p) {
			continue
		}
		for _, f := range declaredFeatures {
			if to.Minor < f.since || !f.needs(p) || gateOn(gates, f.name, to.Minor, f.onFrom) {
				continue
			}
			if f.validated && (isStaticPod(p) || IsMirrorPod(p)) {
				out = append(out, refusedManifest(to, p, f))
				continue
			}
			if !handler {
				continue
			}
			out = append(out, Finding{Pod: podName(p), Check: CheckDeclaredFeatures,
				Unpatched: rejected("PodFeatureUnsupported"), Patched: rejected("PodFeatureUnsupported"),
				Why: fmt.Sprintf("it sets %s, so it needs the node feature %s, which kubelet %s declares only with the feature gate %s=true (the node's gates leave it off)",
					f.what, f.name, to, f.name),
				PatchedReason: sameAsUpstream + ": not waived (a kubelet without the feature cannot honour what the pod asks for); enable " + f.name + " in the target's featureGates, or move the pod, before the swap"})
		}
	}
	return out
}

// refusedManifest is the finding for a static pod whose manifest the target
// refuses: the kubelet validates a manifest against its own feature gates
// before any admission, and kills the running containers of a pod it no
// longer has as orphans (measured: 1.37.2 -> 1.36.5 with the gate off,
// "Unsupported value: \"RestartAllContainers\"").
func refusedManifest(to kubeletcompat.Version, p *v1.Pod, f declaredFeature) Finding {
	const lost = "manifest refused (pod removed, containers killed)"
	return Finding{Pod: podName(p), Check: CheckDeclaredFeatures, Unpatched: lost, Patched: lost,
		Why: fmt.Sprintf("static pod: it sets %s, which kubelet %s's manifest validation accepts only with the feature gate %s=true (the node's gates leave it off)",
			f.what, to, f.name),
		PatchedReason: sameAsUpstream + ": a manifest the kubelet refuses is no pod to keep; enable " + f.name + " in the target's featureGates, or edit the manifest, before the swap"}
}
