package fake

import (
	"context"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// v1Server answers runtime.v1 from a Runtime's state.
type v1Server struct {
	runtimev1.UnimplementedRuntimeServiceServer
	rt *Runtime
}

func (s *v1Server) Version(_ context.Context, req *runtimev1.VersionRequest) (*runtimev1.VersionResponse, error) {
	if err := s.rt.answer("Version", ""); err != nil {
		return nil, err
	}
	// The API version is what the kubelet asked for: v1, or v1alpha2
	// through the conversion.
	name, version := s.rt.runtimeVersion()
	return &runtimev1.VersionResponse{Version: "0.1.0", RuntimeName: name, RuntimeVersion: version, RuntimeApiVersion: req.Version}, nil
}

func (s *v1Server) ListPodSandbox(context.Context, *runtimev1.ListPodSandboxRequest) (*runtimev1.ListPodSandboxResponse, error) {
	if err := s.rt.answer("ListPodSandbox", ""); err != nil {
		return nil, err
	}
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	resp := &runtimev1.ListPodSandboxResponse{}
	for _, sb := range s.rt.sandboxes {
		resp.Items = append(resp.Items, sandboxToV1(sb))
	}
	return resp, nil
}

func (s *v1Server) PodSandboxStatus(_ context.Context, req *runtimev1.PodSandboxStatusRequest) (*runtimev1.PodSandboxStatusResponse, error) {
	if err := s.rt.answer("PodSandboxStatus", req.PodSandboxId); err != nil {
		return nil, err
	}
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	i := s.rt.sandboxIndex(req.PodSandboxId)
	if i < 0 {
		return nil, status.Errorf(codes.NotFound, "sandbox %q not found", req.PodSandboxId)
	}
	sb, network := sandboxToV1(s.rt.sandboxes[i]), s.rt.networks[req.PodSandboxId]
	mode := runtimev1.NamespaceMode_POD
	if network.HostNetwork {
		mode = runtimev1.NamespaceMode_NODE
	}
	return &runtimev1.PodSandboxStatusResponse{Status: &runtimev1.PodSandboxStatus{
		Id: sb.Id, Metadata: sb.Metadata, State: sb.State, CreatedAt: sb.CreatedAt, Labels: sb.Labels, Annotations: sb.Annotations,
		RuntimeHandler: network.RuntimeHandler,
		Network:        &runtimev1.PodSandboxNetworkStatus{Ip: network.IP},
		Linux:          &runtimev1.LinuxPodSandboxStatus{Namespaces: &runtimev1.Namespace{Options: &runtimev1.NamespaceOption{Network: mode}}},
	}}, nil
}

func (s *v1Server) StopPodSandbox(_ context.Context, req *runtimev1.StopPodSandboxRequest) (*runtimev1.StopPodSandboxResponse, error) {
	if err := s.rt.answer("StopPodSandbox", req.PodSandboxId); err != nil {
		return nil, err
	}
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	if i := s.rt.sandboxIndex(req.PodSandboxId); i >= 0 {
		s.rt.sandboxes[i].Ready = false
	}
	for i, c := range s.rt.containers {
		if c.SandboxID == req.PodSandboxId && c.State == cri.ContainerRunning {
			s.rt.containers[i].State = cri.ContainerExited
		}
	}
	// As the CRI asks, stopping what is not there succeeds.
	return &runtimev1.StopPodSandboxResponse{}, nil
}

func (s *v1Server) RemovePodSandbox(_ context.Context, req *runtimev1.RemovePodSandboxRequest) (*runtimev1.RemovePodSandboxResponse, error) {
	if err := s.rt.answer("RemovePodSandbox", req.PodSandboxId); err != nil {
		return nil, err
	}
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	if i := s.rt.sandboxIndex(req.PodSandboxId); i >= 0 {
		s.rt.sandboxes = append(s.rt.sandboxes[:i:i], s.rt.sandboxes[i+1:]...)
	}
	var kept []cri.Container
	for _, c := range s.rt.containers {
		if c.SandboxID != req.PodSandboxId {
			kept = append(kept, c)
		}
	}
	s.rt.containers = kept
	return &runtimev1.RemovePodSandboxResponse{}, nil
}

func (s *v1Server) ListContainers(context.Context, *runtimev1.ListContainersRequest) (*runtimev1.ListContainersResponse, error) {
	if err := s.rt.answer("ListContainers", ""); err != nil {
		return nil, err
	}
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	resp := &runtimev1.ListContainersResponse{}
	for _, c := range s.rt.containers {
		resp.Containers = append(resp.Containers, containerToV1(c))
	}
	return resp, nil
}

func (s *v1Server) Status(_ context.Context, req *runtimev1.StatusRequest) (*runtimev1.StatusResponse, error) {
	if err := s.rt.answer("Status", ""); err != nil {
		return nil, err
	}
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	resp := &runtimev1.StatusResponse{Status: &runtimev1.RuntimeStatus{}}
	if req.Verbose && s.rt.config != "" {
		resp.Info = map[string]string{"config": s.rt.config}
	}
	return resp, nil
}

func (s *v1Server) ContainerStatus(_ context.Context, req *runtimev1.ContainerStatusRequest) (*runtimev1.ContainerStatusResponse, error) {
	if err := s.rt.answer("ContainerStatus", req.ContainerId); err != nil {
		return nil, err
	}
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	for _, c := range s.rt.containers {
		if c.ID != req.ContainerId {
			continue
		}
		img, ok := s.rt.images[c.ID]
		if !ok {
			img = c.Image
		}
		ct := containerToV1(c)
		// The fake starts a container when it creates it.
		return &runtimev1.ContainerStatusResponse{Status: &runtimev1.ContainerStatus{
			Id: ct.Id, Metadata: ct.Metadata, State: ct.State, CreatedAt: ct.CreatedAt, StartedAt: ct.CreatedAt,
			Image: &runtimev1.ImageSpec{Image: img}, ImageRef: ct.ImageRef, Labels: ct.Labels, Annotations: ct.Annotations,
		}}, nil
	}
	return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
}

// sandboxIndex finds a sandbox; the caller holds mu.
func (r *Runtime) sandboxIndex(id string) int {
	for i, sb := range r.sandboxes {
		if sb.ID == id {
			return i
		}
	}
	return -1
}

func sandboxToV1(sb cri.Sandbox) *runtimev1.PodSandbox {
	state := runtimev1.PodSandboxState_SANDBOX_NOTREADY
	if sb.Ready {
		state = runtimev1.PodSandboxState_SANDBOX_READY
	}
	return &runtimev1.PodSandbox{
		Id:          sb.ID,
		Metadata:    &runtimev1.PodSandboxMetadata{Name: sb.Name, Namespace: sb.Namespace, Uid: sb.UID, Attempt: sb.Attempt},
		State:       state,
		CreatedAt:   nanos(sb.CreatedAt),
		Labels:      sb.Labels,
		Annotations: sb.Annotations,
	}
}

func containerToV1(c cri.Container) *runtimev1.Container {
	return &runtimev1.Container{
		Id:           c.ID,
		PodSandboxId: c.SandboxID,
		Metadata:     &runtimev1.ContainerMetadata{Name: c.Name, Attempt: c.Attempt},
		Image:        &runtimev1.ImageSpec{Image: c.Image},
		ImageRef:     c.ImageRef,
		State:        runtimev1.ContainerState(runtimev1.ContainerState_value["CONTAINER_"+string(c.State)]),
		CreatedAt:    nanos(c.CreatedAt),
		Labels:       c.Labels,
		Annotations:  c.Annotations,
	}
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
