package fake

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type v1Server struct {
	runtimev1.UnimplementedRuntimeServiceServer
	rt *Runtime
}

func (s *v1Server) Version(ctx context.Context, _ *runtimev1.VersionRequest) (*runtimev1.VersionResponse, error) {
	if _, _, _, err := s.rt.snapshot("Version"); err != nil {
		return nil, err
	}
	return &runtimev1.VersionResponse{Version: "0.1.0", RuntimeName: "crifake", RuntimeVersion: "1.0.0", RuntimeApiVersion: "v1"}, nil
}

func (s *v1Server) ListPodSandbox(ctx context.Context, _ *runtimev1.ListPodSandboxRequest) (*runtimev1.ListPodSandboxResponse, error) {
	sandboxes, _, _, err := s.rt.snapshot("ListPodSandbox")
	if err != nil {
		return nil, err
	}
	resp := &runtimev1.ListPodSandboxResponse{}
	for _, sb := range sandboxes {
		state := runtimev1.PodSandboxState_SANDBOX_NOTREADY
		if sb.Ready {
			state = runtimev1.PodSandboxState_SANDBOX_READY
		}
		resp.Items = append(resp.Items, &runtimev1.PodSandbox{
			Id:          sb.ID,
			Metadata:    &runtimev1.PodSandboxMetadata{Name: sb.Name, Namespace: sb.Namespace, Uid: sb.UID, Attempt: sb.Attempt},
			State:       state,
			CreatedAt:   nanos(sb.CreatedAt),
			Labels:      sb.Labels,
			Annotations: sb.Annotations,
		})
	}
	return resp, nil
}

func (s *v1Server) ListContainers(ctx context.Context, _ *runtimev1.ListContainersRequest) (*runtimev1.ListContainersResponse, error) {
	_, containers, _, err := s.rt.snapshot("ListContainers")
	if err != nil {
		return nil, err
	}
	resp := &runtimev1.ListContainersResponse{}
	for _, c := range containers {
		resp.Containers = append(resp.Containers, &runtimev1.Container{
			Id:           c.ID,
			PodSandboxId: c.SandboxID,
			Metadata:     &runtimev1.ContainerMetadata{Name: c.Name, Attempt: c.Attempt},
			Image:        &runtimev1.ImageSpec{Image: c.Image},
			ImageRef:     c.ImageRef,
			State:        runtimev1.ContainerState(runtimev1.ContainerState_value["CONTAINER_"+string(c.State)]),
			CreatedAt:    nanos(c.CreatedAt),
			Labels:       c.Labels,
			Annotations:  c.Annotations,
		})
	}
	return resp, nil
}

func (s *v1Server) ContainerStatus(ctx context.Context, req *runtimev1.ContainerStatusRequest) (*runtimev1.ContainerStatusResponse, error) {
	_, containers, images, err := s.rt.snapshot("ContainerStatus")
	if err != nil {
		return nil, err
	}
	img, ok := containerImage(containers, images, req.ContainerId)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	return &runtimev1.ContainerStatusResponse{Status: &runtimev1.ContainerStatus{Id: req.ContainerId, Image: &runtimev1.ImageSpec{Image: img}}}, nil
}
