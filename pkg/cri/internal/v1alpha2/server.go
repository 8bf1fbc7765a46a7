package v1alpha2

import (
	"context"

	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	runtimev1alpha2 "k8s.io/cri-api/pkg/apis/runtime/v1alpha2"
)

// Server serves runtime.v1alpha2 from a runtime.v1 server: the methods
// Client calls; the others answer Unimplemented.
type Server struct {
	runtimev1alpha2.UnimplementedRuntimeServiceServer
	v1 runtimev1.RuntimeServiceServer
}

// NewServer serves v1alpha2 from v1.
func NewServer(v1 runtimev1.RuntimeServiceServer) *Server { return &Server{v1: v1} }

func (s *Server) Version(ctx context.Context, req *runtimev1alpha2.VersionRequest) (*runtimev1alpha2.VersionResponse, error) {
	return serve(ctx, req, &runtimev1.VersionRequest{}, s.v1.Version, &runtimev1alpha2.VersionResponse{})
}

func (s *Server) ListPodSandbox(ctx context.Context, req *runtimev1alpha2.ListPodSandboxRequest) (*runtimev1alpha2.ListPodSandboxResponse, error) {
	return serve(ctx, req, &runtimev1.ListPodSandboxRequest{}, s.v1.ListPodSandbox, &runtimev1alpha2.ListPodSandboxResponse{})
}

func (s *Server) PodSandboxStatus(ctx context.Context, req *runtimev1alpha2.PodSandboxStatusRequest) (*runtimev1alpha2.PodSandboxStatusResponse, error) {
	return serve(ctx, req, &runtimev1.PodSandboxStatusRequest{}, s.v1.PodSandboxStatus, &runtimev1alpha2.PodSandboxStatusResponse{})
}

func (s *Server) StopPodSandbox(ctx context.Context, req *runtimev1alpha2.StopPodSandboxRequest) (*runtimev1alpha2.StopPodSandboxResponse, error) {
	return serve(ctx, req, &runtimev1.StopPodSandboxRequest{}, s.v1.StopPodSandbox, &runtimev1alpha2.StopPodSandboxResponse{})
}

func (s *Server) RemovePodSandbox(ctx context.Context, req *runtimev1alpha2.RemovePodSandboxRequest) (*runtimev1alpha2.RemovePodSandboxResponse, error) {
	return serve(ctx, req, &runtimev1.RemovePodSandboxRequest{}, s.v1.RemovePodSandbox, &runtimev1alpha2.RemovePodSandboxResponse{})
}

func (s *Server) ListContainers(ctx context.Context, req *runtimev1alpha2.ListContainersRequest) (*runtimev1alpha2.ListContainersResponse, error) {
	return serve(ctx, req, &runtimev1.ListContainersRequest{}, s.v1.ListContainers, &runtimev1alpha2.ListContainersResponse{})
}

func (s *Server) Status(ctx context.Context, req *runtimev1alpha2.StatusRequest) (*runtimev1alpha2.StatusResponse, error) {
	return serve(ctx, req, &runtimev1.StatusRequest{}, s.v1.Status, &runtimev1alpha2.StatusResponse{})
}

func (s *Server) ContainerStatus(ctx context.Context, req *runtimev1alpha2.ContainerStatusRequest) (*runtimev1alpha2.ContainerStatusResponse, error) {
	return serve(ctx, req, &runtimev1.ContainerStatusRequest{}, s.v1.ContainerStatus, &runtimev1alpha2.ContainerStatusResponse{})
}
