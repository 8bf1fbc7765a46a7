package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/manifest"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	v1 "k8s.io/api/core/v1"
)

// apiServer serves this node's pods as an API server would, and writes a
// kubeconfig for it.
func apiServer(t *testing.T, dir string, pods ...v1.Pod) string {
	return apiServerWithNode(t, dir, nil, pods...)
}

// apiServerWithNode also serves node (GET /api/v1/nodes/<testNode>) when
// it is not nil.
func apiServerWithNode(t *testing.T, dir string, node *v1.Node, pods ...v1.Pod) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1/pods" && r.URL.Query().Get("fieldSelector") == "spec.nodeName="+testNode:
			json.NewEncoder(w).Encode(v1.PodList{Items: pods})
		case node != nil && r.URL.Path == "/api/v1/nodes/"+testNode:
			json.NewEncoder(w).Encode(node)
		default:
			http.Error(w, "unexpected "+r.URL.String(), http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if node != nil {
		kubeconfig += "-node"
	}
	os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0600)
	return kubeconfig
}

// An API pod's legacy container: without its spec sweep keeps the file; with
// the spec from the API server it sees the hash is unchanged and deletes it.
func TestSweepWithKubeconfig(t *testing.T) {
	f := newFixture(t, cri.APIv1alpha2)
	spec := v1.Pod{}
	spec.Name, spec.Namespace, spec.UID = "web", "default", "web-uid"
	spec.Spec.NodeName = testNode
	spec.Spec.Containers = []v1.Container{{Name: "nginx", Image: "nginx:1.25"}}
	manifest.SetDefaults(&spec)
	h, err := kubeletcompat.ContainerHash(kubeletcompat.Version{Major: 1, Minor: 18, Patch: 19}, &spec.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Set([]cri.Sandbox{{ID: "sb-web", Name: "web", Namespace: "default", UID: "web-uid", Ready: true, CreatedAt: beforeStart}},
		[]cri.Container{{ID: "c-web", SandboxID: "sb-web", Name: "nginx", Image: "nginx:1.25", State: cri.ContainerRunning, CreatedAt: beforeStart,
			Labels:      map[string]string{cri.PodNameLabel: "web", cri.PodNamespaceLabel: "default", cri.PodUIDLabel: "web-uid", cri.ContainerNameLabel: "nginx"},
			Annotations: map[string]string{cri.ContainerHashAnnotation: strconv.FormatUint(h, 16)}}})
	if code := f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19")); code != 0 {
		t.Fatalf("record exit %d: %s", code, f.stderr.String())
	}
	f.runKubelet("v1.19.16")

	if code := f.run("sweep"); code != ExitKept || !strings.Contains(f.stdout.String(), "default/web/nginx (c-web): no pod spec found") {
		t.Fatalf("without kubeconfig: exit %d, stdout %q", code, f.stdout.String())
	}
	kubeconfig := apiServer(t, f.dir, spec)
	if code := f.run("status", "--kubeconfig", kubeconfig); code != 0 || !strings.Contains(f.stdout.String(), "hash matches") {
		t.Fatalf("status: exit %d, stdout %q stderr %q", code, f.stdout.String(), f.stderr.String())
	}
	if code := f.run("sweep", "--kubeconfig", kubeconfig); code != ExitOK {
		t.Fatalf("with kubeconfig: exit %d, stdout %q stderr %q", code, f.stdout.String(), f.stderr.String())
	}
	if _, err := os.Stat(f.compatPath()); !os.IsNotExist(err) {
		t.Errorf("the file was not deleted: %v", err)
	}
	if code := f.run("sweep", "--kubeconfig", filepath.Join(f.dir, "missing")); code != ExitOK {
		t.Errorf("no file and a bad kubeconfig: exit %d (nothing to do comes first)", code)
	}
	if code := f.run("status", "--kubeconfig", filepath.Join(f.dir, "missing")); code != ExitError {
		t.Errorf("status with a missing kubeconfig: exit %d", code)
	}
	assertOneErrorLine(t, f.stderr.String(), "kubeconfig "+filepath.Join(f.dir, "missing"))
}
