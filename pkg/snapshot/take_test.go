package snapshot

import (
	"context"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri/fake"
	"gotest.tools/v3/assert"
)

// TestTake reads the namespace's sandboxes and containers with their
// statuses, over either CRI API version; "" reads every namespace.
func TestTake(t *testing.T) {
	created := time.Unix(1700000000, 0)
	for _, api := range []string{cri.APIv1, cri.APIv1alpha2} {
		t.Run(api, func(t *testing.T) {
			srv := fake.Start(t, api)
			srv.Set([]cri.Sandbox{
				{ID: "sb1", Name: "web", Namespace: "kc-e2e", UID: "u1", Ready: true, CreatedAt: created},
				{ID: "sb2", Name: "host", Namespace: "kc-e2e", UID: "u2", Ready: true, CreatedAt: created},
				{ID: "sb3", Name: "etcd", Namespace: "kube-system", UID: "u3", Ready: true, CreatedAt: created},
			}, []cri.Container{
				{ID: "c1", SandboxID: "sb1", Name: "nginx", Image: "sha256:abc", State: cri.ContainerRunning, CreatedAt: created,
					Annotations: map[string]string{cri.ContainerHashAnnotation: "3c42280f", cri.RestartCountAnnotation: "0"}},
				{ID: "c3", SandboxID: "sb3", Name: "etcd", State: cri.ContainerRunning, CreatedAt: created},
			})
			srv.SetStatusImage("c1", "docker.io/library/nginx:1.25")
			srv.SetSandboxNetwork("sb1", cri.SandboxStatus{IP: "10.217.77.5"})
			srv.SetSandboxNetwork("sb2", cri.SandboxStatus{HostNetwork: true})
			rt, err := Dial(context.Background(), srv.Endpoint)
			assert.NilError(t, err)
			defer rt.Close()
			s, err := rt.Take(context.Background(), "kc-e2e")
			assert.NilError(t, err)
			assert.DeepEqual(t, s.Sandboxes, []Sandbox{
				{Pod: "kc-e2e/host", ID: "sb2", UID: "u2", Ready: true, HostNetwork: true, CreatedAt: created},
				{Pod: "kc-e2e/web", ID: "sb1", UID: "u1", Ready: true, IP: "10.217.77.5", CreatedAt: created},
			})
			assert.DeepEqual(t, s.Containers, []Container{
				{Pod: "kc-e2e/web", Name: "nginx", ID: "c1", SandboxID: "sb1", State: "RUNNING", CreatedAt: created, StartedAt: created,
					RestartCount: "0", Hash: "3c42280f", Image: "docker.io/library/nginx:1.25"},
			})
			all, err := rt.Take(context.Background(), "")
			assert.NilError(t, err)
			var pods []string
			for _, sb := range all.Sandboxes {
				pods = append(pods, sb.Pod)
			}
			assert.DeepEqual(t, pods, []string{"kc-e2e/host", "kc-e2e/web", "kube-system/etcd"})
			assert.Equal(t, len(all.Containers), 2)
		})
	}
}
