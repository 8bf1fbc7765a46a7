package fake

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimev1alpha2 "k8s.io/cri-api/pkg/apis/runtime/v1alpha2"
)

type v1alpha2Server struct {
	runtimev1alpha2.UnimplementedRuntimeServiceServer
	rt *Runtime
}

func (s *v1alpha2Server) Version(ctx context.Context, _ *runtimev1alpha2.VersionRequest) (*runtimev1alpha2.VersionResponse, error) {
	if _, _, _, err := s.rt.snapshot("Version"); err != nil {
		return nil, err
	}
	return &runtimev1alpha2.VersionResponse{Version: "0.1.0", RuntimeName: "crifake", RuntimeVersion: "1.0.0", RuntimeApiVersion: "v1alpha2"}, nil
}

func (s *v1alpha2Server) ListPodSandbox(ctx context.Context, _ *runtimev1alpha2.ListPodSandboxRequest) (*runtimev1alpha2.ListPodSandboxResponse, error) {
	sandboxes, _, _, err := s.rt.snapshot("ListPodSandbox")
	if err != nil {
		return nil, err
	}
	resp := &runtimev1alpha2.ListPodSandboxResponse{}
	for _, sb := range sandboxes {
		state := runtimev1alpha2.PodSandboxState_SANDBOX_NOTREADY
		if sb.Ready {
			state = runtimev1alpha2.PodSandboxState_SANDBOX_READY
		}
		resp.Items = append(resp.Items, &runtimev1alpha2.PodSandbox{
			Id:          sb.ID,
			Metadata:    &runtimev1alpha2.PodSandboxMetadata{Name: sb.Name, Namespace: sb.Namespace, Uid: sb.UID, Attempt: sb.Attempt},
			State:       state,
			CreatedAt:   nanos(sb.CreatedAt),
			Labels:      sb.Labels,
			Annotations: sb.Annotations,
		})
	}
	return resp, nil
}

func (s *v1alpha2Server) ListContainers(ctx context.Context, _ *runtimev1alpha2.ListContainersRequest) (*runtimev1alpha2.ListContainersResponse, error) {
	_, containers, _, err := s.rt.snapshot("ListContainers")
	if err != nil {
		return nil, err
	}
	resp := &runtimev1alpha2.ListContainersResponse{}
	for _, c := range containers {
		resp.Containers = append(resp.Containers, &runtimev1alpha2.Container{
			Id:           c.ID,
			PodSandboxId: c.SandboxID,
			Metadata:     &runtimev1alpha2.ContainerMetadata{Name: c.Name, Attempt: c.Attempt},
			Image:        &runtimev1alpha2.ImageSpec{Image: c.Image},
			ImageRef:     c.ImageRef,
			State:        runtimev1alpha2.ContainerState(runtimev1alpha2.ContainerState_value["CONTAINER_"+string(c.State)]),
			CreatedAt:    nanos(c.CreatedAt),
			Labels:       c.Labels,
			Annotations:  c.Annotations,
		})
	}
	return resp, nil
}

func (s *v1alpha2Server) ContainerStatus(ctx context.Context, req *runtimev1alpha2.ContainerStatusRequest) (*runtimev1alpha2.ContainerStatusResponse, error) {
	_, containers, images, err := s.rt.snapshot("ContainerStatus")
	if err != nil {
		return nil, err
	}
	img, ok := containerImage(containers, images, req.ContainerId)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	return &runtimev1alpha2.ContainerStatusResponse{Status: &runtimev1alpha2.ContainerStatus{Id: req.ContainerId, Image: &runtimev1alpha2.ImageSpec{Image: img}}}, nil
}
