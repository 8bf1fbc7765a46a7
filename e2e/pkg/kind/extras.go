package kind

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/snapshot"
	kcexec "github.com/kubelet-compat/kubelet-compat/pkg/exec"
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
// controllers recreate them under the new kubelet).
func (r *clusterRun) sweep(ctx context.Context) error {
	first, last := r.steps[0], r.steps[len(r.steps)-1]
	legacy := crossesNameImageHash(kubelet.Minor(first.From), kubelet.Minor(last.To))
	for _, n := range r.c.Nodes {
		code, out := r.sweepOn(ctx, n)
		present := r.fileExists(ctx, n, compatFile)
		c := report.Check{Name: fmt.Sprintf("%s %s: sweep keeps the compat file while the old kubelet's containers run", r.name, n.name)}
		c.Detail = fmt.Sprintf("exit %d, file present: %t: %s", code, present, report.LastLine(out))
		if legacy {
			c.Passed = code == 2 && present
		} else {
			c.Name += " (reported: no hash changed on this chain)"
			c.Passed = code == 0 || code == 2
		}
		r.record(c)
	}
	if !legacy {
		return nil
	}
	plain := r.c.Nodes[len(r.c.Nodes)-1]
	if plain == r.staticNode || plain.role == "control-plane" {
		return fmt.Errorf("the last node %s is not a plain worker", plain.name)
	}
	c := report.Check{Name: fmt.Sprintf("%s %s: sweep deletes the compat file once the old kubelet's containers are gone", r.name, plain.name)}
	pods, err := r.nodePods(ctx, plain)
	if err != nil {
		return err
	}
	deleted := 0
	for _, p := range pods {
		if _, mirror := p.Annotations[v1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if err := r.c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting %s/%s: %w", p.Namespace, p.Name, err)
		}
		deleted++
	}
	// The controllers recreate them; the StatefulSet's pod may land
	// elsewhere: wait for the cluster's pods, then for the node's runtime
	// to run none of the old containers.
	if err := r.waitAllReady(ctx, 5*time.Minute); err != nil {
		return err
	}
	swept := false
	if err := poll(ctx, 3*time.Minute, func() error {
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
	r.record(c)
	return nil
}

func (r *clusterRun) sweepOn(ctx context.Context, n *Node) (int, string) {
	out, err := n.Exec(ctx, nil, append([]string{"sh", "-c", `exec "$@" 2>&1`, "sh"}, sweepArgs...)...)
	r.nodeLog(n, "sweep", out)
	return kcexec.ExitCode(err), string(out)
}

func (r *clusterRun) fileExists(ctx context.Context, n *Node, path string) bool {
	_, err := n.Exec(ctx, nil, "test", "-e", path)
	return err == nil
}

// record adds a check to the report, and to the run's failures when it
// failed.
func (r *clusterRun) record(c report.Check) {
	r.rep.Checks = append(r.rep.Checks, c)
	if !c.Passed {
		r.failures = append(r.failures, c.Name+": "+c.Detail)
	}
}

// genuineChange changes the image of the static pod with metadata.uid on
// the static-pod worker during the compat window, after the patched
// chain: the patched kubelet must restart that container, and nothing
// else on the node.
func (r *clusterRun) genuineChange(ctx context.Context) error {
	n := r.staticNode
	c := report.Check{Name: fmt.Sprintf("%s %s: a genuine change during the compat window restarts exactly that container (image of a static pod)", r.name, n.name)}
	var target *corpus.Pod
	for i := range r.statics.Pods {
		if r.statics.Pods[i].Kind == corpus.KindPinned {
			target = &r.statics.Pods[i]
			break
		}
	}
	if target == nil {
		return fmt.Errorf("the static pods have none of kind %s", corpus.KindPinned)
	}
	before, err := snapshotNode(ctx, n)
	if err != nil {
		return err
	}
	manifest := path.Join(StaticPodDir, "kc-e2e-"+target.Name+".yaml")
	changed := target.Spec.DeepCopy()
	changed.Spec.Containers[0].Image = corpus.BusyboxVariantImage
	if err := writeManifest(ctx, n, manifest, changed); err != nil {
		return err
	}
	start := time.Now()
	container := target.Spec.Spec.Containers[0].Name
	var seen time.Duration
	err = poll(ctx, 2*time.Minute, func() error {
		now, err := snapshotNode(ctx, n)
		if err != nil {
			return err
		}
		if running, ok := now.Running(target.RuntimeName)[container]; !ok || running.Image != corpus.BusyboxVariantImage {
			return fmt.Errorf("%s does not run %s yet", target.RuntimeName, corpus.BusyboxVariantImage)
		}
		seen = time.Since(start)
		return nil
	})
	if err == nil {
		// Three more sync periods: nothing else may move.
		err = ctxtime.Sleep(ctx, 3*r.o.SyncFrequency)
	}
	var after *snapshot.Snapshot
	if err == nil {
		after, err = snapshotNode(ctx, n)
	}
	if err != nil {
		c.Detail = err.Error()
	} else {
		d := snapshot.Compare(before, after)
		running := after.Running(target.RuntimeName)[container]
		c.Passed = running.Image == corpus.BusyboxVariantImage && d.Restarts == 1 && d.RecreatedPods == 0 &&
			len(d.RestartedPods) == 1 && d.RestartedPods[0] == target.RuntimeName
		c.Detail = fmt.Sprintf("%s runs %s %.0fs after the manifest changed; restarts on the node after three more sync periods: %d (%s), pods recreated: %d",
			target.RuntimeName, running.Image, seen.Seconds(), d.Restarts, strings.Join(d.RestartedPods, " "), d.RecreatedPods)
	}
	r.record(c)
	// Put the manifest back: the node serves the corpus again.
	return writeManifest(ctx, n, manifest, target.Spec)
}

func writeManifest(ctx context.Context, n *Node, file string, pod *v1.Pod) error {
	data, err := yaml.Marshal(pod)
	if err != nil {
		return err
	}
	return n.WriteFile(ctx, file, data, 0o644)
}
