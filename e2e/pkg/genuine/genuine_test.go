package genuine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// fakeNode is a node whose runtime the test scripts: once the changed
// manifest is written, the target's container is replaced (restartOthers:
// another pod's container too).
type fakeNode struct {
	target, other string
	container     string
	changed       bool
	restartOthers bool
	written       []string
}

func (f *fakeNode) take(context.Context) (*snapshot.Snapshot, error) {
	t0 := time.Unix(1_700_000_000, 0)
	s := &snapshot.Snapshot{Taken: t0,
		Sandboxes: []snapshot.Sandbox{{Pod: f.target, ID: "s1", Ready: true, CreatedAt: t0}, {Pod: f.other, ID: "s2", Ready: true, CreatedAt: t0}}}
	c1 := snapshot.Container{Pod: f.target, Name: f.container, ID: "c1", SandboxID: "s1", State: "RUNNING", Image: corpus.BusyboxImage, CreatedAt: t0}
	c2 := snapshot.Container{Pod: f.other, Name: "other", ID: "o1", SandboxID: "s2", State: "RUNNING", Image: corpus.BusyboxImage, CreatedAt: t0}
	if f.changed {
		c1.ID, c1.Attempt, c1.Image, c1.CreatedAt = "c2", 1, corpus.BusyboxVariantImage, t0.Add(time.Minute)
		if f.restartOthers {
			c2.ID, c2.Attempt, c2.CreatedAt = "o2", 1, t0.Add(time.Minute)
		}
	}
	s.Containers = []snapshot.Container{c1, c2}
	s.Sort()
	return s, nil
}

func (f *fakeNode) write(_ context.Context, pod *v1.Pod) error {
	f.written = append(f.written, pod.Spec.Containers[0].Image)
	f.changed = pod.Spec.Containers[0].Image == corpus.BusyboxVariantImage
	return nil
}

func TestCheck(t *testing.T) {
	c := corpus.New(corpus.Options{Pods: 8, NodeName: "n"})
	target, err := Target(c)
	assert.NilError(t, err)
	for _, tc := range []struct {
		name          string
		restartOthers bool
		passed        bool
	}{
		{"only the changed container restarts", false, true},
		{"another pod restarts too", true, false},
	} {
		f := &fakeNode{target: target.RuntimeName, other: "kc-e2e/other", container: target.Spec.Spec.Containers[0].Name, restartOthers: tc.restartOthers}
		got := Check(context.Background(), "genuine", Node{Take: f.take, WriteManifest: f.write, SyncFrequency: time.Millisecond}, target)
		assert.Check(t, is.Equal(got.Passed, tc.passed), "%s: %s", tc.name, got.Detail)
		assert.Check(t, is.DeepEqual(f.written, []string{corpus.BusyboxVariantImage, target.Spec.Spec.Containers[0].Image}), "%s: the manifest is written back", tc.name)
	}
	_, err = Target(corpus.New(corpus.Options{Pods: 2, NodeName: "n"}))
	assert.ErrorContains(t, err, "no pod of kind")
}
