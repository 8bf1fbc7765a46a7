package kind

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/genuine"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	kcexec "github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// compatFile is where kubelet-compat record writes on a kubeadm node.
const compatFile = "/var/lib/kubelet/upgrade-compat.json"

// sweepArgs are what an operator gives sweep on a kubeadm node: the API
// pods' specs through the kubelet's credentials, no grace period (the
// swap is minutes old).
var sweepArgs = []string{"kubelet-compat", "sweep", "--grace", "0s", "--kubeconfig", "/etc/kubernetes/kubelet.conf"}

// sweep checks, after the patched chain, that `kubelet-compat sweep`
// keeps the compat file on every node while the containers the old
// kubelet created run (on a chain that changed their hash), and deletes
// it on the plain worker once they are gone: its API pods deleted (their
// controllers recreate them under the new kubelet; a pod without one is
// created again from its spec).
func (r *ClusterRun) sweep(ctx context.Context) error {
	first, last := r.Steps[0], r.Steps[len(r.Steps)-1]
	legacy := crossesNameImageHash(kubelet.Minor(first.From), kubelet.Minor(last.To))
	for _, n := range r.Cluster.Nodes {
		code, out := r.sweepOn(ctx, n)
		present := r.fileExists(ctx, n, compatFile)
		c := report.Check{Name: fmt.Sprintf("%s %s: sweep keeps the compat file while the old kubelet's containers run", r.Name, n.name)}
		c.Detail = fmt.Sprintf("exit %d, file present: %t: %s", code, present, report.LastLine(out))
		if legacy {
			c.Passed = code == 2 && present
		} else {
			c.Name += " (reported: no hash changed on this chain)"
			c.Passed = code == 0 || code == 2
		}
		r.Record(c)
	}
	if !legacy {
		return nil
	}
	plain := r.Cluster.Nodes[len(r.Cluster.Nodes)-1]
	if plain == r.StaticNode || plain.role == "control-plane" {
		return fmt.Errorf("the last node %s is not a plain worker", plain.name)
	}
	c := report.Check{Name: fmt.Sprintf("%s %s: sweep deletes the compat file once the old kubelet's containers are gone", r.Name, plain.name)}
	pods, err := r.nodePods(ctx, plain)
	if err != nil {
		return err
	}
	deleted := 0
	var bare []v1.Pod
	for _, p := range pods {
		if _, mirror := p.Annotations[v1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if err := r.Cluster.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting %s/%s: %w", p.Namespace, p.Name, err)
		}
		deleted++
		if metav1.GetControllerOf(&p) == nil {
			bare = append(bare, p)
		}
	}
	// A pod no controller owns comes back as its owner would bring it:
	// the same spec, created again once the old one is gone.
	for _, p := range bare {
		if err := Poll(ctx, 2*time.Minute, func() error {
			_, err := r.Cluster.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s/%s is not gone yet (%v)", p.Namespace, p.Name, err)
		}); err != nil {
			return err
		}
		again := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, Annotations: p.Annotations}, Spec: p.Spec}
		if _, err := r.Cluster.Client.CoreV1().Pods(p.Namespace).Create(ctx, again, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s/%s again: %w", p.Namespace, p.Name, err)
		}
	}
	// The controllers recreate them; the StatefulSet's pod may land
	// elsewhere: wait for the cluster's pods, then for the node's runtime
	// to run none of the old containers.
	if err := r.waitAllReady(ctx, 5*time.Minute); err != nil {
		return err
	}
	swept := false
	if err := Poll(ctx, 3*time.Minute, func() error {
		code, out := r.sweepOn(ctx, plain)
		c.Detail = fmt.Sprintf("%d API pods deleted and recreated; sweep: exit %d: %s", deleted, code, report.LastLine(out))
		if code != 0 {
			return errors.New(c.Detail)
		}
		swept = true
		return nil
	}); err != nil && !swept {
		c.Detail += " (for 3 minutes)"
	}
	present := r.fileExists(ctx, plain, compatFile)
	c.Passed = swept && !present
	c.Detail += fmt.Sprintf("; file present: %t", present)
	r.Record(c)
	return nil
}

func (r *ClusterRun) sweepOn(ctx context.Context, n *Node) (int, string) {
	out, err := n.Exec(ctx, nil, append([]string{"sh", "-c", `exec "$@" 2>&1`, "sh"}, sweepArgs...)...)
	r.NodeLog(n, "sweep", out)
	return kcexec.ExitCode(err), string(out)
}

func (r *ClusterRun) fileExists(ctx context.Context, n *Node, path string) bool {
	_, err := n.Exec(ctx, nil, "test", "-e", path)
	return err == nil
}

// Record adds a check to the report, and to the run's failures when it
// failed.
func (r *ClusterRun) Record(c report.Check) {
	r.Report.Checks = append(r.Report.Checks, c)
	if !c.Passed {
		r.failures = append(r.failures, c.Name+": "+c.Detail)
	}
}

// genuineChange changes the image of the static pod with metadata.uid on
// the static-pod worker during the compat window, after the patched
// chain: the patched kubelet must restart that container, and nothing
// else on the node (package genuine, as on the local node).
func (r *ClusterRun) genuineChange(ctx context.Context) error {
	n := r.StaticNode
	target, err := genuine.Target(r.Statics)
	if err != nil {
		return err
	}
	manifest := path.Join(StaticPodDir, "kc-e2e-"+target.Name+".yaml")
	r.Record(genuine.Check(ctx, fmt.Sprintf("%s %s: a genuine change during the compat window restarts exactly that container (image of a static pod)", r.Name, n.name), genuine.Node{
		Take:          func(ctx context.Context) (*snapshot.Snapshot, error) { return SnapshotNode(ctx, n) },
		WriteManifest: func(ctx context.Context, pod *v1.Pod) error { return writeManifest(ctx, n, manifest, pod) },
		SyncFrequency: r.Options.SyncFrequency,
	}, target))
	return nil
}

func writeManifest(ctx context.Context, n *Node, file string, pod *v1.Pod) error {
	data, err := yaml.Marshal(pod)
	if err != nil {
		return err
	}
	return n.WriteFile(ctx, file, data, 0o644)
}
