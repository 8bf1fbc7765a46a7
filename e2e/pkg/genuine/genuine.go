// Package genuine is the check both providers make after the patched
// chain: a genuine change during the compat window (the image of the
// corpus's static pod with metadata.uid) restarts exactly that container,
// and nothing else on the node moves.
package genuine

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// Node is what the check needs of a provider's node.
type Node struct {
	// Take snapshots the node's runtime (the corpus's namespace at least).
	Take func(ctx context.Context) (*snapshot.Snapshot, error)
	// WriteManifest writes a static pod's manifest where its kubelet
	// reads it.
	WriteManifest func(ctx context.Context, pod *v1.Pod) error
	// SyncFrequency is the kubelet's: three periods later nothing else
	// may have moved.
	SyncFrequency time.Duration
}

// Target is the corpus's pod the check changes (kind pinned), or an
// error when the corpus has none.
func Target(c *corpus.Corpus) (*corpus.Pod, error) {
	for i := range c.Pods {
		if c.Pods[i].Kind == corpus.KindPinned {
			return &c.Pods[i], nil
		}
	}
	return nil, fmt.Errorf("the corpus has no pod of kind %s (it needs at least 8 pods)", corpus.KindPinned)
}

// Check changes target's first container's image to the variant busybox,
// waits up to 2 minutes for it to run, three sync periods more, and
// compares with the snapshot before; then it writes the manifest back.
func Check(ctx context.Context, name string, n Node, target *corpus.Pod) report.Check {
	c := report.Check{Name: name}
	c.Passed, c.Detail = change(ctx, n, target)
	// Put the manifest back: the node serves the corpus again.
	if err := n.WriteManifest(ctx, target.Spec); err != nil {
		c.Passed, c.Detail = false, c.Detail+"; restoring the manifest: "+err.Error()
	}
	return c
}

func change(ctx context.Context, n Node, target *corpus.Pod) (bool, string) {
	before, err := n.Take(ctx)
	if err != nil {
		return false, err.Error()
	}
	changed := target.Spec.DeepCopy()
	container := changed.Spec.Containers[0].Name
	changed.Spec.Containers[0].Image = corpus.BusyboxVariantImage
	if err := n.WriteManifest(ctx, changed); err != nil {
		return false, err.Error()
	}
	start := time.Now()
	var seen time.Duration
	for seen == 0 {
		if time.Since(start) > 2*time.Minute {
			return false, fmt.Sprintf("%s does not run %s 2 minutes after its manifest changed", target.RuntimeName, corpus.BusyboxVariantImage)
		}
		if err := ctxtime.Sleep(ctx, time.Second); err != nil {
			return false, err.Error()
		}
		now, err := n.Take(ctx)
		if err != nil {
			continue
		}
		if running, ok := now.Running(target.RuntimeName)[container]; ok && running.Image == corpus.BusyboxVariantImage {
			seen = time.Since(start)
		}
	}
	if err := ctxtime.Sleep(ctx, 3*n.SyncFrequency); err != nil {
		return false, err.Error()
	}
	after, err := n.Take(ctx)
	if err != nil {
		return false, err.Error()
	}
	d := snapshot.Compare(before, after)
	running := after.Running(target.RuntimeName)[container]
	passed := running.Image == corpus.BusyboxVariantImage && d.Restarts == 1 && d.RecreatedPods == 0 &&
		len(d.RestartedPods) == 1 && d.RestartedPods[0] == target.RuntimeName
	return passed, fmt.Sprintf("%s runs %s %.0fs after the manifest changed; restarts on the node after three more sync periods: %d (%s), pods recreated: %d",
		target.RuntimeName, running.Image, seen.Seconds(), d.Restarts, strings.Join(d.RestartedPods, " "), d.RecreatedPods)
}
