package kind

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/upstream"
)

// The kubelet's files kubeadm writes on a node at each upgrade: its
// KubeletConfiguration (from the cluster's kubelet-config ConfigMap) and
// its flags.
const (
	kubeletConfigFile = "/var/lib/kubelet/config.yaml"
	kubeadmFlagsFile  = "/var/lib/kubelet/kubeadm-flags.env"
)

// readKubeadmFiles reads the kubelet's files kubeadm writes on n; a
// missing one reads as empty.
func readKubeadmFiles(ctx context.Context, n *Node) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range []string{kubeletConfigFile, kubeadmFlagsFile} {
		b, err := n.Exec(ctx, nil, "sh", "-c", `[ ! -e "$1" ] || cat -- "$1"`, "sh", f)
		if err != nil {
			return nil, fmt.Errorf("%s: reading %s: %w", n.name, f, err)
		}
		out[f] = b
	}
	return out, nil
}

// kubeadmChanged reports what a kubeadm upgrade changed on n: the static
// pod manifests it rewrote (upgrade apply), the kubelet configuration's
// keys and the kubelet's flags; the workloads' survival of it is the
// step's own check. The files before and after go to the node's logs.
func (r *ClusterRun) kubeadmChanged(n *Node, what string, manifests []string, before, after map[string][]byte) {
	var parts []string
	if manifests != nil {
		parts = append(parts, "static-pod manifests rewritten: "+list(manifests))
	}
	parts = append(parts, "kubelet config: "+configChanges(before[kubeletConfigFile], after[kubeletConfigFile]))
	flags := "unchanged"
	if !bytes.Equal(before[kubeadmFlagsFile], after[kubeadmFlagsFile]) {
		flags = fmt.Sprintf("%q -> %q", strings.TrimSpace(string(before[kubeadmFlagsFile])), strings.TrimSpace(string(after[kubeadmFlagsFile])))
	}
	parts = append(parts, "kubeadm-flags.env: "+flags)
	tag := strings.ReplaceAll(strings.TrimPrefix(what, "kubeadm "), " ", "-")
	r.NodeLog(n, tag+"-kubelet-config-before", before[kubeletConfigFile])
	r.NodeLog(n, tag+"-kubelet-config-after", after[kubeletConfigFile])
	detail := strings.Join(parts, "; ")
	r.Logf("%s: %s changed: %s", n.name, what, detail)
	r.Record(report.Check{Name: fmt.Sprintf("%s %s %s %s: what kubeadm changed on the node", r.Name, n.name, r.Step, what), Passed: true, Detail: "reported: " + detail})
}

// configChanges names the top-level keys of a KubeletConfiguration that
// differ between before and after: "unchanged", or e.g. "changed
// cgroupDriver; added failCgroupV1".
func configChanges(before, after []byte) string {
	if bytes.Equal(before, after) {
		return "unchanged"
	}
	var b, a map[string]interface{}
	if err := yaml.Unmarshal(before, &b); err != nil {
		return "rewritten (before: " + err.Error() + ")"
	}
	if err := yaml.Unmarshal(after, &a); err != nil {
		return "rewritten (after: " + err.Error() + ")"
	}
	var added, removed, changed []string
	for k, av := range a {
		bv, ok := b[k]
		switch {
		case !ok:
			added = append(added, k)
		case !reflect.DeepEqual(av, bv):
			changed = append(changed, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			removed = append(removed, k)
		}
	}
	var out []string
	for _, g := range []struct {
		what string
		keys []string
	}{{"changed", changed}, {"added", added}, {"removed", removed}} {
		if len(g.keys) > 0 {
			sort.Strings(g.keys)
			out = append(out, g.what+" "+strings.Join(g.keys, ", "))
		}
	}
	if len(out) == 0 {
		return "rewritten, same content"
	}
	return strings.Join(out, "; ")
}

// forceArgs is --force for kubeadm upgrade apply to version when a node's
// kubelet lags it by more than kubeadm allows (1 minor until kubeadm 1.28)
// but not more than upstream's skew policy (CheckSkew): the skip-level
// flow of 1.18 -> 1.20 meets kubeadm 1.20's "There are kubelets in this
// cluster that are too old", a skippable error.
func (r *ClusterRun) forceArgs(ctx context.Context, version string) ([]string, error) {
	nodes, err := r.Cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var kubelets []string
	for _, n := range nodes.Items {
		kubelets = append(kubelets, n.Status.NodeInfo.KubeletVersion)
	}
	return skewForce(version, kubelets), nil
}

// skewForce is forceArgs's decision for the nodes' kubelet versions.
func skewForce(version string, kubelets []string) []string {
	to := kubelet.Minor(version)
	oldest := to
	for _, k := range kubelets {
		if m := kubelet.Minor(k); m > 0 && m < oldest {
			oldest = m
		}
	}
	if to-oldest > upstream.KubeadmKubeletSkew(to) {
		return []string{"--force"}
	}
	return nil
}
