package update

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster: {server: "https://172.18.0.3:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: t}
contexts:
- name: c1
  context: {cluster: c1, user: admin}
current-context: c1
`

// TestManagement reads a Machine as the API server serves it (status and
// all) and a workload cluster's client from CAPI's kubeconfig Secret.
func TestManagement(t *testing.T) {
	m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
		"metadata": map[string]any{"name": "c1-md-0-y", "namespace": "default"},
		"spec":     map[string]any{"clusterName": "c1", "version": "v1.31.14", "bootstrap": map[string]any{"dataSecretName": "s"}},
		"status":   map[string]any{"nodeRef": map[string]any{"name": "c1-md-0-y"}, "phase": "Running"},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{machines: "MachineList"}, m)
	core := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-kubeconfig", Namespace: "default"}, Data: map[string][]byte{"value": []byte(kubeconfig)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c2-kubeconfig", Namespace: "default"}, Data: map[string][]byte{"other": []byte(kubeconfig)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c3-kubeconfig", Namespace: "default"}, Data: map[string][]byte{"value": []byte("not: [a kubeconfig")}},
	)
	mgmt := Management{Dynamic: dyn, Core: core}
	ctx := context.Background()

	got, err := mgmt.Machine(ctx, types.NamespacedName{Namespace: "default", Name: "c1-md-0-y"})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got.Status.NodeRef.Name, "c1-md-0-y"))
	assert.Check(t, is.Equal(got.Spec.ClusterName, "c1"))
	_, err = mgmt.Machine(ctx, types.NamespacedName{Namespace: "default", Name: "gone"})
	assert.Check(t, is.ErrorContains(err, "reading Machine default/gone: "))

	w, err := mgmt.Workload(ctx, types.NamespacedName{Namespace: "default", Name: "c1"})
	assert.NilError(t, err)
	cs, ok := w.(*kubernetes.Clientset)
	assert.Assert(t, ok)
	assert.Check(t, is.Equal(cs.CoreV1().RESTClient().Get().URL().Host, "172.18.0.3:6443"))
	for name, want := range map[string]string{
		"c0": "reading the kubeconfig of cluster default/c0: ",
		"c2": "Secret default/c2-kubeconfig has no key value (CAPI's kubeconfig)",
		"c3": "the kubeconfig of cluster default/c3 (Secret default/c3-kubeconfig): ",
	} {
		_, err := mgmt.Workload(ctx, types.NamespacedName{Namespace: "default", Name: name})
		assert.Check(t, is.ErrorContains(err, want))
	}
}
