// Package fake is an in-process kubelet pod-resources service for tests: a
// real gRPC server on a unix socket answering List (v1 and v1alpha1) with
// the pods a test says the kubelet has.
package fake

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	podresourcesv1alpha1 "k8s.io/kubelet/pkg/apis/podresources/v1alpha1"
)

// The API versions a fake serves.
const (
	APIv1       = "v1"
	APIv1alpha1 = "v1alpha1"
)

// Pod is a pod the fake kubelet has: namespace and name, as List reports it.
type Pod struct{ Namespace, Name string }

// Server is a running fake pod-resources service.
type Server struct {
	// Endpoint is unix://<socket>.
	Endpoint string
	Socket   string

	mu     sync.Mutex
	pods   []Pod
	lister func() []Pod
	calls  int
}

// Start serves the given APIs (default v1 and v1alpha1, as kubelets 1.20+
// do; 1.18 and 1.19 serve v1alpha1 only) on a socket in a short temporary
// directory (socket paths are limited to 108 bytes) until the test ends.
func Start(t testing.TB, apis ...string) *Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "podresfake")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return StartAt(t, filepath.Join(dir, "kubelet.sock"), apis...)
}

// StartAt is Start on the socket path sock, whose directory it creates.
func StartAt(t testing.TB, sock string, apis ...string) *Server {
	t.Helper()
	if len(apis) == 0 {
		apis = []string{APIv1, APIv1alpha1}
	}
	if err := os.MkdirAll(filepath.Dir(sock), 0755); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Endpoint: "unix://" + sock, Socket: sock}
	g := grpc.NewServer()
	for _, api := range apis {
		switch api {
		case APIv1:
			podresourcesv1.RegisterPodResourcesListerServer(g, &v1Server{s: s})
		case APIv1alpha1:
			podresourcesv1alpha1.RegisterPodResourcesListerServer(g, &v1alpha1Server{s: s})
		default:
			t.Fatalf("podresources/fake: unknown API %q", api)
		}
	}
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return s
}

// Set replaces the pods the kubelet has.
func (s *Server) Set(pods ...Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = append([]Pod(nil), pods...)
}

// SetLister makes the kubelet have whatever lister returns at each List,
// e.g. every pod the fake runtime runs.
func (s *Server) SetLister(lister func() []Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lister = lister
}

// Calls is how many List calls the server answered.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *Server) list() []Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.lister != nil {
		return s.lister()
	}
	return append([]Pod(nil), s.pods...)
}

type v1Server struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	s *Server
}

func (v *v1Server) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	var out []*podresourcesv1.PodResources
	for _, p := range v.s.list() {
		out = append(out, &podresourcesv1.PodResources{Namespace: p.Namespace, Name: p.Name})
	}
	return &podresourcesv1.ListPodResourcesResponse{PodResources: out}, nil
}

type v1alpha1Server struct {
	podresourcesv1alpha1.UnimplementedPodResourcesListerServer
	s *Server
}

func (v *v1alpha1Server) List(context.Context, *podresourcesv1alpha1.ListPodResourcesRequest) (*podresourcesv1alpha1.ListPodResourcesResponse, error) {
	var out []*podresourcesv1alpha1.PodResources
	for _, p := range v.s.list() {
		out = append(out, &podresourcesv1alpha1.PodResources{Namespace: p.Namespace, Name: p.Name})
	}
	return &podresourcesv1alpha1.ListPodResourcesResponse{PodResources: out}, nil
}
