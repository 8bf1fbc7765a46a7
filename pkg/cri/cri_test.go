package cri_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri/fake"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestDialDetectsAPIAndLists(t *testing.T) {
	created := time.Unix(1700000000, 123)
	for _, tc := range []struct {
		name    string
		serve   []string
		force   string
		wantAPI string
		wantErr string
	}{
		{name: "v1 only (containerd 2, kubelet 1.26+)", serve: []string{cri.APIv1}, wantAPI: cri.APIv1},
		{name: "v1alpha2 only (old runtimes)", serve: []string{cri.APIv1alpha2}, wantAPI: cri.APIv1alpha2},
		{name: "both (containerd 1.6) prefers v1", serve: []string{cri.APIv1, cri.APIv1alpha2}, wantAPI: cri.APIv1},
		{name: "both, forced v1alpha2", serve: []string{cri.APIv1, cri.APIv1alpha2}, force: cri.APIv1alpha2, wantAPI: cri.APIv1alpha2},
		{name: "forced v1 on a v1alpha2 runtime", serve: []string{cri.APIv1alpha2}, force: cri.APIv1, wantErr: "Unimplemented"},
		{name: "neither", serve: nil, wantErr: "v1alpha2, after v1 was unimplemented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fake.Start(t, tc.serve...)
			srv.Set([]cri.Sandbox{{ID: "sb1", Name: "etcd-node1", Namespace: "kube-system", UID: "u1", Ready: true, CreatedAt: created,
				Annotations: map[string]string{cri.ConfigSourceAnnotation: "file"}}},
				[]cri.Container{{ID: "c1", SandboxID: "sb1", Name: "etcd", Image: "sha256:abc", State: cri.ContainerRunning, CreatedAt: created,
					Labels:      map[string]string{cri.PodNameLabel: "etcd-node1", cri.PodNamespaceLabel: "kube-system", cri.PodUIDLabel: "u1", cri.ContainerNameLabel: "etcd"},
					Annotations: map[string]string{cri.ContainerHashAnnotation: "3c42280f"}}})
			srv.SetStatusImage("c1", "registry.k8s.io/etcd:3.4.13-0")
			c, err := cri.Dial(context.Background(), srv.Endpoint, cri.Options{API: tc.force, Timeout: 5 * time.Second})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Dial error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.APIVersion() != tc.wantAPI {
				t.Errorf("APIVersion = %s, want %s", c.APIVersion(), tc.wantAPI)
			}
			sbs, err := c.ListSandboxes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(sbs) != 1 || !sbs[0].Ready || !sbs[0].IsStatic() || sbs[0].UID != "u1" || !sbs[0].CreatedAt.Equal(created) {
				t.Errorf("sandboxes = %+v", sbs)
			}
			cs, err := c.ListContainers(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 1 || cs[0].Hash != 0x3c42280f || cs[0].State != cri.ContainerRunning || cs[0].PodUID != "u1" || cs[0].PodName != "etcd-node1" {
				t.Errorf("containers = %+v", cs)
			}
			img, err := c.ContainerImage(context.Background(), "c1")
			if err != nil || img != "registry.k8s.io/etcd:3.4.13-0" {
				t.Errorf("ContainerImage = %q, %v", img, err)
			}
		})
	}
}

func TestDialErrors(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0644)
	for _, tc := range []struct{ endpoint, want string }{
		{"unix://" + filepath.Join(dir, "missing.sock"), "no CRI socket at"},
		{"unix://" + plain, "is not a unix socket"},
		{"tcp://127.0.0.1:1", "only unix sockets"},
		{"unix://relative", "want unix:///absolute/path"},
	} {
		_, err := cri.Dial(context.Background(), tc.endpoint, cri.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Dial(%s) = %v, want %q", tc.endpoint, err, tc.want)
		}
	}
}

func TestCallErrorsAreWrapped(t *testing.T) {
	srv := fake.Start(t, cri.APIv1alpha2)
	c, err := cri.Dial(context.Background(), srv.Endpoint, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Fail("ListContainers", status.Error(codes.Internal, "boom"))
	_, err = c.ListContainers(context.Background())
	if err == nil || !strings.Contains(err.Error(), "CRI ListContainers at unix://") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("err = %v", err)
	}
}

func TestParseHash(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{{"3c42280f", 0x3c42280f, true}, {"", 0, false}, {"zz", 0, false}, {"ffffffff", 0xffffffff, true}} {
		got, err := cri.ParseHash(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseHash(%q) = %x, %v", tc.in, got, err)
		}
	}
}

// TestStatusStopRemove runs the calls the e2e needs over each API version:
// both are the one v1 code path, v1alpha2 converted at the boundary.
func TestStatusStopRemove(t *testing.T) {
	started := time.Unix(1700000000, 0)
	for _, api := range []string{cri.APIv1, cri.APIv1alpha2} {
		t.Run(api, func(t *testing.T) {
			srv := fake.Start(t, api)
			srv.Set([]cri.Sandbox{{ID: "sb1", Name: "web", Namespace: "kc-e2e", Ready: true}, {ID: "sb2", Name: "host", Namespace: "kc-e2e", Ready: true}},
				[]cri.Container{{ID: "c1", SandboxID: "sb1", Name: "nginx", Image: "sha256:abc", State: cri.ContainerRunning, CreatedAt: started}})
			srv.SetSandboxNetwork("sb1", cri.SandboxStatus{IP: "10.88.0.5"})
			srv.SetSandboxNetwork("sb2", cri.SandboxStatus{HostNetwork: true, RuntimeHandler: "runc-v1"})
			c, err := cri.Dial(context.Background(), srv.Endpoint, cri.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.APIVersion() != api || c.Runtime().RuntimeAPIVersion != api {
				t.Errorf("speaking %s, runtime %+v, want %s", c.APIVersion(), c.Runtime(), api)
			}
			for id, want := range map[string]cri.SandboxStatus{"sb1": {IP: "10.88.0.5"}, "sb2": {HostNetwork: true, RuntimeHandler: "runc-v1"}} {
				if got, err := c.SandboxStatus(context.Background(), id); err != nil || got != want {
					t.Errorf("SandboxStatus(%s) = %+v, %v; want %+v", id, got, err, want)
				}
			}
			st, err := c.ContainerStatus(context.Background(), "c1")
			if err != nil || st.Image != "sha256:abc" || !st.StartedAt.Equal(started) {
				t.Errorf("ContainerStatus = %+v, %v", st, err)
			}
			if err := c.StopSandbox(context.Background(), "sb1"); err != nil {
				t.Fatal(err)
			}
			if cs, _ := c.ListContainers(context.Background()); len(cs) != 1 || cs[0].State != cri.ContainerExited {
				t.Errorf("after StopSandbox, containers = %+v", cs)
			}
			if err := c.RemoveSandbox(context.Background(), "sb1"); err != nil {
				t.Fatal(err)
			}
			sbs, _ := c.ListSandboxes(context.Background())
			cs, _ := c.ListContainers(context.Background())
			if len(sbs) != 1 || sbs[0].ID != "sb2" || len(cs) != 0 {
				t.Errorf("after RemoveSandbox, sandboxes = %+v, containers = %+v", sbs, cs)
			}
			srv.FailFor("StopPodSandbox", "sb2", status.Error(codes.Internal, "stuck"))
			if err := c.StopSandbox(context.Background(), "sb2"); err == nil || !strings.Contains(err.Error(), "CRI StopPodSandbox sb2 at unix://") {
				t.Errorf("StopSandbox error = %v", err)
			}
		})
	}
}

// TestRuntimeHandlers reads the handlers from the verbose Status's
// "config" as containerd 1.7.36's CRI plugin sends it (its
// criconfig.Config as JSON; trimmed), on both APIs.
func TestRuntimeHandlers(t *testing.T) {
	config := `{"containerd":{"snapshotter":"overlayfs","defaultRuntimeName":"runc","runtimes":{"runc":{"runtimeType":"io.containerd.runc.v2","options":{"SystemdCgroup":false}},"legacy":{"runtimeType":"io.containerd.runc.v1"}}},"cni":{"binDir":"/opt/cni/bin"}}`
	for _, api := range []string{cri.APIv1, cri.APIv1alpha2} {
		t.Run(api, func(t *testing.T) {
			srv := fake.Start(t, api)
			c, err := cri.Dial(context.Background(), srv.Endpoint, cri.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, _, err := c.RuntimeHandlers(context.Background()); err == nil || !strings.Contains(err.Error(), `has no "config"`) {
				t.Errorf("without a config: %v", err)
			}
			srv.SetConfig(config)
			handlers, def, err := c.RuntimeHandlers(context.Background())
			want := map[string]string{"runc": "io.containerd.runc.v2", "legacy": "io.containerd.runc.v1"}
			if err != nil || def != "runc" || len(handlers) != 2 || handlers["runc"] != want["runc"] || handlers["legacy"] != want["legacy"] {
				t.Errorf("RuntimeHandlers = %v, %q, %v; want %v, runc", handlers, def, err, want)
			}
			srv.SetConfig("{not json")
			if _, _, err := c.RuntimeHandlers(context.Background()); err == nil || !strings.Contains(err.Error(), `"config"`) {
				t.Errorf("bad config: %v", err)
			}
		})
	}
}
