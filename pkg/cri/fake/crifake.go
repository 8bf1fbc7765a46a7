// Package fake is an in-process CRI runtime for tests: a real gRPC server
// on a unix socket serving the read-only part of RuntimeService for
// runtime.v1, runtime.v1alpha2 or both, from in-memory sandboxes and
// containers. Everything else answers Unimplemented.
package fake

import (
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
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
	images     map[string]string // container ID -> status image
	fail       map[string]error  // method name -> error to return
	hooks      map[string]func() // method name -> run before answering
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
	s := &Server{Runtime: &Runtime{images: map[string]string{}, fail: map[string]error{}},
		Endpoint: "unix://" + sock, Socket: sock, grpc: grpc.NewServer()}
	for _, api := range apis {
		switch api {
		case cri.APIv1:
			runtimev1.RegisterRuntimeServiceServer(s.grpc, &v1Server{rt: s.Runtime})
		case cri.APIv1alpha2:
			runtimev1alpha2.RegisterRuntimeServiceServer(s.grpc, &v1alpha2Server{rt: s.Runtime})
		default:
			t.Fatalf("crifake: unknown API %q", api)
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

// Fail makes a method ("ListPodSandbox", "ListContainers", "ContainerStatus",
// "Version") return err; nil restores it.
func (r *Runtime) Fail(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.fail, method)
		return
	}
	r.fail[method] = err
}

func (r *Runtime) snapshot(method string) ([]cri.Sandbox, []cri.Container, map[string]string, error) {
	r.runHook(method)
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]cri.Sandbox(nil), r.sandboxes...), append([]cri.Container(nil), r.containers...), r.images, r.fail[method]
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// containerImage answers ContainerStatus's image: the status image when set,
// else the listed image.
func containerImage(containers []cri.Container, images map[string]string, id string) (string, bool) {
	for _, c := range containers {
		if c.ID == id {
			if img, ok := images[id]; ok {
				return img, true
			}
			return c.Image, true
		}
	}
	return "", false
}

func mkShortTempDir(t testing.TB) (string, error) {
	dir, err := os.MkdirTemp("", "crifake")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir, nil
}
