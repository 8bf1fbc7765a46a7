package manifest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// goldenOptions are the Options of package systemupgrade's goldens
// (testdata/*.yaml.golden there), whose Plans SUC made the Jobs of
// testdata/suc-jobs from.
func goldenOptions() map[string]Options {
	cordon := DefaultOptions("1.31.14")
	cordon.Concurrency, cordon.Cordon, cordon.AllowLoss, cordon.GateTimeout = 2, true, true, 600
	runtime := DefaultOptions("1.31.14")
	runtime.Runtime = "containerd@1.7.35"
	return map[string]Options{"default-1.31.14": DefaultOptions("1.31.14"), "cordon-concurrency-2": cordon, "runtime-containerd-1.7.35": runtime}
}

// TestNodeJobIsSUCs: NodeJob makes, of each Plan, the Job SUC v0.20.1's
// own job.New made of it (testdata/suc-jobs/README.md says how).
func TestNodeJobIsSUCs(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{corev1.LabelHostname: "node-1"}}}
	for name, o := range goldenOptions() {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "suc-jobs", name+".json"))
			assert.NilError(t, err)
			var want []batchv1.Job
			assert.NilError(t, json.Unmarshal(data, &want))
			plans, err := Plans(o)
			assert.NilError(t, err)
			assert.Assert(t, is.Len(want, len(plans)))
			for i, p := range plans {
				got := o.NodeJob(p, node, "0123456789abcdef")
				assert.Check(t, is.DeepEqual(got, want[i]), "the Job of Plan %s", p.Metadata.Name)
			}
		})
	}
}

// TestSafeConcatName: SUC's Job names, cut to 63 characters as wrangler
// cuts them (a long node name).
func TestSafeConcatName(t *testing.T) {
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{[]string{"apply", "kubelet-compat-workers", "on", "node-1", "with", "abc"}, "apply-kubelet-compat-workers-on-node-1-with-abc"},
		// wrangler v3's output for these parts.
		{[]string{"apply", "kubelet-compat-control-plane", "on", "node-1", "with", "0123456789abcdef"}, "apply-kubelet-compat-control-plane-on-node-1-with-0123456-8ebac"},
	} {
		assert.Check(t, is.Equal(safeConcatName(tc.parts...), tc.want))
	}
}

// TestImage: another upgrade image (the Cluster API extension's flag) is
// the Jobs' image, tagged with the version; a tagged one is refused.
func TestImage(t *testing.T) {
	o := DefaultOptions("1.31.14")
	o.Image = "registry.example/kc/upgrade"
	plans, err := Plans(o)
	assert.NilError(t, err)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	job := o.NodeJob(plans[0], node, "h")
	assert.Check(t, is.Equal(job.Spec.Template.Spec.Containers[0].Image, "registry.example/kc/upgrade:1.31.14"))
	for _, bad := range []string{"registry.example/kc/upgrade:1.31.14", "registry.example:5000/kc/upgrade@sha256:00", "a b"} {
		o.Image = bad
		_, err := Plans(o)
		assert.Check(t, is.ErrorContains(err, "want an image name without a tag"), bad)
	}
	o.Image = "registry.example:5000/kc/upgrade"
	_, err = Plans(o)
	assert.Check(t, err, "a registry's port is no tag")
}
