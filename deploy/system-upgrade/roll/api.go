package roll

import (
	"context"
	"strings"
)

// The API reads the roll makes, through the Job's kubectl and the Job's
// service account.

// nodeReady reads the node's Ready condition and the kubelet version the
// API has for it.
func (r *run) nodeReady(ctx context.Context) (status, version string) {
	res := r.kubectl(ctx, "get", "node", r.cfg.Node, "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.kubeletVersion}`)
	f := strings.Fields(string(res.Stdout))
	if len(f) > 0 {
		status = f[0]
	}
	if len(f) > 1 {
		version = f[1]
	}
	return status, version
}

// clusterAt says whether kubeadm's ClusterConfiguration names target as
// its kubernetesVersion. A failed read is a failed step, not "another
// version": it would make a node that is not the first run kubeadm
// upgrade apply.
func (r *run) clusterAt(ctx context.Context, target string) (bool, error) {
	res := r.kubectl(ctx, "get", "configmap", "kubeadm-config", "-n", "kube-system", "-o", "jsonpath={.data.ClusterConfiguration}")
	if !res.OK() {
		return false, failRollf("the API server did not return kubeadm-config (%s): whether this node is the first control-plane node of %s is not known",
			firstLine(string(res.Stderr)), target)
	}
	for _, line := range lines(string(res.Stdout)) {
		if strings.HasSuffix(line, "kubernetesVersion: v"+target) {
			return true, nil
		}
	}
	return false, nil
}

// kubeletEvent is one of the kubelet's events about a pod.
type kubeletEvent struct{ Type, Reason, LastTimestamp string }

// kubeletEvents lists the kubelet's events about the pod UID in
// namespace; false when the API server does not answer.
func (r *run) kubeletEvents(ctx context.Context, namespace, uid string) ([]kubeletEvent, bool) {
	res := r.kubectl(ctx, "get", "events", "-n", namespace, "--field-selector", "involvedObject.uid="+uid+",source=kubelet",
		"-o", `jsonpath={range .items[*]}{.type} {.reason} {.lastTimestamp}{"\n"}{end}`)
	if !res.OK() {
		return nil, false
	}
	var events []kubeletEvent
	for _, line := range lines(string(res.Stdout)) {
		f := strings.Fields(line)
		var e kubeletEvent
		for i, p := range []*string{&e.Type, &e.Reason, &e.LastTimestamp} {
			if i < len(f) {
				*p = f[i]
			}
		}
		events = append(events, e)
	}
	return events, true
}

// apiPod reads the pod NAMESPACE/NAME's UID and deletion time from the
// API ("" and "" when it is gone); false when the API server does not
// answer.
func (r *run) apiPod(ctx context.Context, pod string) (uid, deletion string, ok bool) {
	ns, name, _ := strings.Cut(pod, "/")
	res := r.kubectl(ctx, "get", "pod", "-n", ns, name, "--ignore-not-found", "-o", "jsonpath={.metadata.uid} {.metadata.deletionTimestamp}")
	if !res.OK() {
		return "", "", false
	}
	f := strings.Fields(string(res.Stdout))
	if len(f) > 0 {
		uid = f[0]
	}
	if len(f) > 1 {
		deletion = f[1]
	}
	return uid, deletion, true
}

// kubeletGet reads path of the kubelet's own server.
func (r *run) kubeletGet(ctx context.Context, path string) Result {
	return r.kubectl(ctx, "--kubeconfig", r.kubeletKubeconfig, "get", "--raw", path)
}
