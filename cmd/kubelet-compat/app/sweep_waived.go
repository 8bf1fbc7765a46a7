package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/preflight"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// waiverHolder is a pod that runs on an admission waiver: the kubelet counts
// it as started before itself (Decider.PodStartedBefore, on what the
// runtime runs) and, without the compat file, its next start would reject it
// for node affinity or selector or taints and kill it (kubernetes#76322).
// sweep keeps the file for it unless --release-waived.
type waiverHolder struct {
	Pod string `json:"pod"`
	UID string `json:"uid"`
	// Reasons are the rejection reasons the kubelet would give (empty when
	// it cannot be told: Why says why the pod counts anyway).
	Reasons []string `json:"reasons,omitempty"`
	// Why is the rejection, or why it cannot be ruled out, in words.
	Why string `json:"why"`
}

// keepLine is sweep's line for a holder that keeps the file.
func (h waiverHolder) keepLine() string {
	return fmt.Sprintf("pod %s (uid %s) holds its admission waiver: %s", h.Pod, h.UID, h.withoutFile())
}

// loseLine is sweep's line, with --release-waived, for a holder whose
// waiver the delete ends.
func (h waiverHolder) loseLine(dryRun bool) string {
	verb := "loses"
	if dryRun {
		verb = "would lose"
	}
	if len(h.Reasons) == 0 {
		return fmt.Sprintf("pod %s (uid %s) %s its admission waiver: %s", h.Pod, h.UID, verb, h.Why)
	}
	return fmt.Sprintf("pod %s (uid %s) %s its admission waiver: the kubelet's next start rejects it (%s) and kills it", h.Pod, h.UID, verb, h.Why)
}

func (h waiverHolder) withoutFile() string {
	if len(h.Reasons) == 0 {
		return h.Why
	}
	return "without the compat file the kubelet's next start rejects it (" + h.Why + ")"
}

// nodeSource returns the node object as the kubelet's admission reads it
// (its labels and taints, from the API server), nil without --kubeconfig.
// It is read once, and only when a pod's spec needs it.
type nodeSource func() (*v1.Node, error)

func (o *nodeOptions) nodeSource(ctx context.Context, name string) nodeSource {
	var node *v1.Node
	var err error
	read := false
	return func() (*v1.Node, error) {
		if o.kubeconfig == "" {
			return nil, nil
		}
		if !read {
			node, err = getNode(ctx, o.kubeconfig, name)
			read = true
		}
		return node, err
	}
}

// waiverHolders are the pods the running kubelet admits only on a node
// affinity, selector or taint waiver. Which pods were started before the
// kubelet is the library's answer on what the container runtime runs (a
// running container the compat file lists, or the sandbox of a recorded
// static pod), never the pod's API status: a pod created after record
// cannot hold the file, and the set only shrinks (a listed container that
// exits never runs again). Whether such a pod would be rejected is the
// kubelet's own admission rule on its spec (static pods from
// --manifest-dir, API pods from the API server) and the node's labels and
// taints: NodeAffinity for a nodeSelector or required node affinity the node
// no longer matches, TaintToleration (kubelets from 1.22, not for static
// pods) for a NoExecute taint it does not tolerate. A pod whose spec is not
// found counts, and so does one the node is needed for without
// --kubeconfig: it may be rejected. A node that --kubeconfig cannot read is
// an error.
func waiverHolders(d *kubeletcompat.Decider, st *nodeState, idx *specIndex, version kubeletcompat.Version, node nodeSource) ([]waiverHolder, error) {
	if !d.InForce() {
		return nil, nil
	}
	var out []waiverHolder
	for _, p := range runtimePods(st) {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, UID: types.UID(p.uid)}}
		if started, _ := d.PodStartedBefore(pod, p.rt); !started {
			continue
		}
		h := waiverHolder{Pod: p.namespace + "/" + p.name, UID: p.uid}
		var sb *cri.Sandbox
		for i := range st.sandboxes {
			if st.sandboxes[i].UID == p.uid && (sb == nil || st.sandboxes[i].Ready) {
				sb = &st.sandboxes[i]
			}
		}
		spec, ok := idx.lookup(sb, cri.Container{PodUID: p.uid, PodNamespace: p.namespace, PodName: p.name})
		if !ok {
			h.Why = "its pod spec is not found (give --manifest-dir or --kubeconfig), so a node affinity or taint rejection cannot be ruled out"
			out = append(out, h)
			continue
		}
		// The kubelet's IsStaticPod: a pod it reads from a file (the
		// runtime's sandbox annotation is the kubelet's own).
		static := spec.static != nil || sb != nil && sb.IsStatic()
		var whys []string
		if preflight.HasNodeConstraint(spec.pod) || preflight.KubeletChecksTaints(version) && !static {
			n, err := node()
			if err != nil {
				return nil, err
			}
			if n == nil {
				h.Why = "it has a nodeSelector or required node affinity and the node's labels are not known (give --kubeconfig)"
				if !preflight.HasNodeConstraint(spec.pod) {
					h.Why = "the node's taints are not known (give --kubeconfig)"
				}
				out = append(out, h)
				continue
			}
			if why := preflight.NodeMismatch(spec.pod, n); why != "" {
				reason := preflight.NodeAffinityReason(version)
				h.Reasons = append(h.Reasons, reason)
				whys = append(whys, reason+": "+why)
			}
			if preflight.KubeletChecksTaints(version) && !static {
				if t, bad := preflight.UntoleratedNoExecute(spec.pod, n); bad {
					h.Reasons = append(h.Reasons, kubeletcompat.ReasonTaintToleration)
					whys = append(whys, fmt.Sprintf("%s: it does not tolerate the node's taint %s=%s:NoExecute", kubeletcompat.ReasonTaintToleration, t.Key, t.Value))
				}
			}
		}
		if len(whys) > 0 {
			h.Why = strings.Join(whys, "; ")
			out = append(out, h)
		}
	}
	return out, nil
}
