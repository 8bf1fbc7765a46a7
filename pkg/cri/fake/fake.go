// Package fake is an in-process CRI runtime for tests: a real gRPC server
// on a unix socket serving the part of RuntimeService that pkg/cri calls,
// from in-memory sandboxes and containers. It is written for runtime.v1;
// runtime.v1alpha2 is the same server behind pkg/cri's conversion. Every
// other method answers Unimplemented.
package fake

import (
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri/internal/v1alpha2"
	"google.golang.org/grpc"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	runtimev1alpha2 "k8s.io/cri-api/pkg/apis/runtime/v1alpha2"
)

// Runtime is the fake runtime's state; tests may change it between calls
// through Set.
type Runtime struct {
	mu         sync.Mutex
	sandboxes  []cri.Sandbox
	containers []cri.Container
	images     map[string]string            // container ID -> status image
	networks   map[string]cri.SandboxStatus // sandbox ID -> its network
	fail       map[string]error             // method name, or method/ID -> error to return
	hooks      map[string]func()            // method name -> run before answering
	// name and version are what Version reports (SetVersion); empty:
	// crifake 1.0.0.
	name, version string
	// config is the verbose Status's "config" (SetConfig).
	config string
}

// Server is a running fake runtime.
type Server struct {
	*Runtime
	// Endpoint is unix://<socket> for cri.Dial.
	Endpoint string
	Socket   string
	grpc     *grpc.Server
}

// Start serves the given API versions (cri.APIv1, cri.APIv1alpha2) on a
// socket in t.TempDir() until the test ends.
func Start(t testing.TB, apis ...string) *Server {
	t.Helper()
	// Socket paths are limited to 108 bytes: t.TempDir() can be longer.
	dir, err := mkShortTempDir(t)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Runtime: &Runtime{images: map[string]string{}, networks: map[string]cri.SandboxStatus{}, fail: map[string]error{}},
		Endpoint: "unix://" + sock, Socket: sock, grpc: grpc.NewServer()}
	v1 := &v1Server{rt: s.Runtime}
	for _, api := range apis {
		switch api {
		case cri.APIv1:
			runtimev1.RegisterRuntimeServiceServer(s.grpc, v1)
		case cri.APIv1alpha2:
			runtimev1alpha2.RegisterRuntimeServiceServer(s.grpc, v1alpha2.NewServer(v1))
		default:
			t.Fatalf("cri/fake: unknown API %q", api)
		}
	}
	go s.grpc.Serve(lis)
	t.Cleanup(s.grpc.Stop)
	return s
}

// Set replaces the runtime's sandboxes and containers.
func (r *Runtime) Set(sandboxes []cri.Sandbox, containers []cri.Container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sandboxes, r.containers = sandboxes, containers
}

// SetStatusImage sets the image ContainerStatus reports for a container.
func (r *Runtime) SetStatusImage(containerID, image string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[containerID] = image
}

// SetConfig sets what the verbose Status sends as "config" (containerd
// 1.x's CRI configuration as JSON; empty: none).
func (r *Runtime) SetConfig(config string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.config = config
}

// SetSandboxNetwork sets what PodSandboxStatus reports for a sandbox (its
// network and runtime handler).
func (r *Runtime) SetSandboxNetwork(sandboxID string, network cri.SandboxStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.networks[sandboxID] = network
}

// Sandboxes returns the sandboxes the runtime has now (StopPodSandbox
// makes one not ready, RemovePodSandbox removes it and its containers).
func (r *Runtime) Sandboxes() []cri.Sandbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]cri.Sandbox(nil), r.sandboxes...)
}

// Containers returns the containers the runtime has now.
func (r *Runtime) Containers() []cri.Container {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]cri.Container(nil), r.containers...)
}

// Fail makes a method ("Version", "ListPodSandbox", "PodSandboxStatus",
// "StopPodSandbox", "RemovePodSandbox", "ListContainers",
// "ContainerStatus") return err; nil restores it.
func (r *Runtime) Fail(method string, err error) { r.FailFor(method, "", err) }

// FailFor makes a method return err for one sandbox or container ID only.
func (r *Runtime) FailFor(method, id string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := failKey(method, id)
	if err == nil {
		delete(r.fail, key)
		return
	}
	r.fail[key] = err
}

func failKey(method, id string) string {
	if id == "" {
		return method
	}
	return method + "/" + id
}

// answer runs the method's hook and returns the error it must answer with
// for id ("" for a call about no one object), if any.
func (r *Runtime) answer(method, id string) error {
	r.runHook(method)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail[method]; err != nil {
		return err
	}
	if id == "" {
		return nil
	}
	return r.fail[failKey(method, id)]
}

func mkShortTempDir(t testing.TB) (string, error) {
	dir, err := os.MkdirTemp("", "crifake")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir, nil
}
