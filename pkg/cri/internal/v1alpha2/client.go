package v1alpha2

import (
	"context"

	"google.golang.org/grpc"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	runtimev1alpha2 "k8s.io/cri-api/pkg/apis/runtime/v1alpha2"
)

// Client calls a runtime.v1alpha2 RuntimeService with runtime.v1 messages.
// It has the methods pkg/cri uses, with the signatures of
// runtimev1.RuntimeServiceClient.
type Client struct {
	rt runtimev1alpha2.RuntimeServiceClient
}

// NewClient speaks v1alpha2 over conn.
func NewClient(conn *grpc.ClientConn) Client {
	return Client{rt: runtimev1alpha2.NewRuntimeServiceClient(conn)}
}

func (c Client) Version(ctx context.Context, req *runtimev1.VersionRequest, _ ...grpc.CallOption) (*runtimev1.VersionResponse, error) {
	return call(ctx, req, &runtimev1alpha2.VersionRequest{}, c.rt.Version, &runtimev1.VersionResponse{})
}

func (c Client) ListPodSandbox(ctx context.Context, req *runtimev1.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimev1.ListPodSandboxResponse, error) {
	return call(ctx, req, &runtimev1alpha2.ListPodSandboxRequest{}, c.rt.ListPodSandbox, &runtimev1.ListPodSandboxResponse{})
}

func (c Client) PodSandboxStatus(ctx context.Context, req *runtimev1.PodSandboxStatusRequest, _ ...grpc.CallOption) (*runtimev1.PodSandboxStatusResponse, error) {
	return call(ctx, req, &runtimev1alpha2.PodSandboxStatusRequest{}, c.rt.PodSandboxStatus, &runtimev1.PodSandboxStatusResponse{})
}

func (c Client) StopPodSandbox(ctx context.Context, req *runtimev1.StopPodSandboxRequest, _ ...grpc.CallOption) (*runtimev1.StopPodSandboxResponse, error) {
	return call(ctx, req, &runtimev1alpha2.StopPodSandboxRequest{}, c.rt.StopPodSandbox, &runtimev1.StopPodSandboxResponse{})
}

func (c Client) RemovePodSandbox(ctx context.Context, req *runtimev1.RemovePodSandboxRequest, _ ...grpc.CallOption) (*runtimev1.RemovePodSandboxResponse, error) {
	return call(ctx, req, &runtimev1alpha2.RemovePodSandboxRequest{}, c.rt.RemovePodSandbox, &runtimev1.RemovePodSandboxResponse{})
}

func (c Client) ListContainers(ctx context.Context, req *runtimev1.ListContainersRequest, _ ...grpc.CallOption) (*runtimev1.ListContainersResponse, error) {
	return call(ctx, req, &runtimev1alpha2.ListContainersRequest{}, c.rt.ListContainers, &runtimev1.ListContainersResponse{})
}

func (c Client) Status(ctx context.Context, req *runtimev1.StatusRequest, _ ...grpc.CallOption) (*runtimev1.StatusResponse, error) {
	return call(ctx, req, &runtimev1alpha2.StatusRequest{}, c.rt.Status, &runtimev1.StatusResponse{})
}

func (c Client) ContainerStatus(ctx context.Context, req *runtimev1.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimev1.ContainerStatusResponse, error) {
	return call(ctx, req, &runtimev1alpha2.ContainerStatusRequest{}, c.rt.ContainerStatus, &runtimev1.ContainerStatusResponse{})
}
