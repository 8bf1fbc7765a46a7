package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri/internal/v1alpha2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// stopTimeout bounds StopPodSandbox and RemovePodSandbox, which wait for the
// sandbox's containers to stop: longer than a listing.
const stopTimeout = time.Minute

// runtimeService is the part of runtime.v1's RuntimeService the client
// calls: the generated v1 client, or v1alpha2.Client converting to v1alpha2.
type runtimeService interface {
	Version(context.Context, *runtimev1.VersionRequest, ...grpc.CallOption) (*runtimev1.VersionResponse, error)
	ListPodSandbox(context.Context, *runtimev1.ListPodSandboxRequest, ...grpc.CallOption) (*runtimev1.ListPodSandboxResponse, error)
	PodSandboxStatus(context.Context, *runtimev1.PodSandboxStatusRequest, ...grpc.CallOption) (*runtimev1.PodSandboxStatusResponse, error)
	StopPodSandbox(context.Context, *runtimev1.StopPodSandboxRequest, ...grpc.CallOption) (*runtimev1.StopPodSandboxResponse, error)
	RemovePodSandbox(context.Context, *runtimev1.RemovePodSandboxRequest, ...grpc.CallOption) (*runtimev1.RemovePodSandboxResponse, error)
	ListContainers(context.Context, *runtimev1.ListContainersRequest, ...grpc.CallOption) (*runtimev1.ListContainersResponse, error)
	ContainerStatus(context.Context, *runtimev1.ContainerStatusRequest, ...grpc.CallOption) (*runtimev1.ContainerStatusResponse, error)
	Status(context.Context, *runtimev1.StatusRequest, ...grpc.CallOption) (*runtimev1.StatusResponse, error)
}

// Client talks to one runtime over its CRI socket. Every call is bounded by
// the client's call timeout in addition to the caller's context.
type Client struct {
	conn     *grpc.ClientConn
	endpoint string
	api      string
	timeout  time.Duration
	rt       runtimeService
	runtime  RuntimeVersion
}

// RuntimeVersion is the runtime's answer to Version.
type RuntimeVersion struct {
	RuntimeName       string
	RuntimeVersion    string
	RuntimeAPIVersion string
}

// Options tune Dial.
type Options struct {
	// Timeout bounds every call, including the version probe; default
	// DefaultCallTimeout.
	Timeout time.Duration
	// API forces "v1" or "v1alpha2" instead of detecting it.
	API string
}

// SocketPath returns the filesystem path of a unix CRI endpoint such as
// unix:///run/containerd/containerd.sock or a bare absolute path.
func SocketPath(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		p := strings.TrimPrefix(endpoint, "unix://")
		if !strings.HasPrefix(p, "/") {
			return "", fmt.Errorf("runtime endpoint %q: want unix:///absolute/path", endpoint)
		}
		return p, nil
	case strings.HasPrefix(endpoint, "/"):
		return endpoint, nil
	}
	return "", fmt.Errorf("runtime endpoint %q: only unix sockets are supported", endpoint)
}

// Dial connects to the runtime at endpoint and detects its API version by
// calling runtime.v1 Version first and falling back to runtime.v1alpha2 when
// the runtime answers Unimplemented. A missing socket or a permission problem
// is reported before any gRPC call.
func Dial(ctx context.Context, endpoint string, opts Options) (*Client, error) {
	if opts.API != "" && opts.API != APIv1 && opts.API != APIv1alpha2 {
		return nil, fmt.Errorf("unknown CRI API version %q (want %s or %s)", opts.API, APIv1, APIv1alpha2)
	}
	path, err := SocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if err := checkSocket(path); err != nil {
		return nil, err
	}
	conn, err := grpc.DialContext(ctx, "passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("connecting to CRI socket %s: %w", path, err)
	}
	c := &Client{conn: conn, endpoint: endpoint, timeout: opts.Timeout}
	if c.timeout <= 0 {
		c.timeout = DefaultCallTimeout
	}
	if err := c.detect(ctx, opts.API); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

func checkSocket(path string) error {
	fi, err := os.Stat(path)
	switch {
	case os.IsNotExist(err):
		return fmt.Errorf("no CRI socket at %s (is the container runtime running? see --runtime-endpoint)", path)
	case os.IsPermission(err):
		return fmt.Errorf("permission denied reaching CRI socket %s (run as root)", path)
	case err != nil:
		return fmt.Errorf("CRI socket %s: %w", path, err)
	case fi.Mode()&os.ModeSocket == 0:
		return fmt.Errorf("%s is not a unix socket (mode %s)", path, fi.Mode())
	}
	return nil
}

// detect asks v1 first (unless v1alpha2 is forced) and falls back to
// v1alpha2 only when the runtime does not implement v1.
func (c *Client) detect(ctx context.Context, force string) error {
	if force != APIv1alpha2 {
		err := c.useAPI(ctx, APIv1, runtimev1.NewRuntimeServiceClient(c.conn))
		if err == nil || force == APIv1 || status.Code(err) != codes.Unimplemented {
			return c.wrap("Version", err)
		}
	}
	if err := c.useAPI(ctx, APIv1alpha2, v1alpha2.NewClient(c.conn)); err != nil {
		call := "Version"
		if force != APIv1alpha2 {
			call = "Version (v1alpha2, after v1 was unimplemented)"
		}
		return c.wrap(call, err)
	}
	return nil
}

func (c *Client) useAPI(ctx context.Context, api string, rt runtimeService) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := rt.Version(ctx, &runtimev1.VersionRequest{Version: api})
	if err != nil {
		return err
	}
	c.api, c.rt = api, rt
	c.runtime = RuntimeVersion{resp.RuntimeName, resp.RuntimeVersion, resp.RuntimeApiVersion}
	return nil
}

// wrap gives a CRI error one line of context and keeps its gRPC status.
func (c *Client) wrap(call string, err error) error {
	if err == nil {
		return nil
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Unavailable:
			return fmt.Errorf("CRI %s at %s: runtime unavailable: %s", call, c.endpoint, s.Message())
		case codes.DeadlineExceeded:
			return fmt.Errorf("CRI %s at %s: no answer within %s", call, c.endpoint, c.timeout)
		}
		return fmt.Errorf("CRI %s at %s: %s: %s", call, c.endpoint, s.Code(), s.Message())
	}
	return fmt.Errorf("CRI %s at %s: %w", call, c.endpoint, err)
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// APIVersion is the CRI API version in use: APIv1 or APIv1alpha2.
func (c *Client) APIVersion() string { return c.api }

// Runtime is what the runtime reported when the client connected.
func (c *Client) Runtime() RuntimeVersion { return c.runtime }

// ListSandboxes lists every pod sandbox, ready or not.
func (c *Client) ListSandboxes(ctx context.Context) ([]Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.ListPodSandbox(ctx, &runtimev1.ListPodSandboxRequest{})
	if err != nil {
		return nil, c.wrap("ListPodSandbox", err)
	}
	var out []Sandbox
	for _, s := range resp.Items {
		out = append(out, sandboxFromV1(s))
	}
	return out, nil
}

// SandboxStatus returns a sandbox's network and runtime handler.
func (c *Client) SandboxStatus(ctx context.Context, id string) (SandboxStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimev1.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return SandboxStatus{}, c.wrap("PodSandboxStatus "+shortID(id), err)
	}
	st := resp.GetStatus()
	return SandboxStatus{
		IP:             st.GetNetwork().GetIp(),
		HostNetwork:    st.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimev1.NamespaceMode_NODE,
		RuntimeHandler: st.GetRuntimeHandler(),
	}, nil
}

// StopSandbox stops a sandbox and its containers.
func (c *Client) StopSandbox(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, max(c.timeout, stopTimeout))
	defer cancel()
	_, err := c.rt.StopPodSandbox(ctx, &runtimev1.StopPodSandboxRequest{PodSandboxId: id})
	return c.wrap("StopPodSandbox "+shortID(id), err)
}

// RemoveSandbox removes a sandbox and its containers; stop it first.
func (c *Client) RemoveSandbox(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, max(c.timeout, stopTimeout))
	defer cancel()
	_, err := c.rt.RemovePodSandbox(ctx, &runtimev1.RemovePodSandboxRequest{PodSandboxId: id})
	return c.wrap("RemovePodSandbox "+shortID(id), err)
}

// ListContainers lists every container in every state.
func (c *Client) ListContainers(ctx context.Context) ([]Container, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.ListContainers(ctx, &runtimev1.ListContainersRequest{})
	if err != nil {
		return nil, c.wrap("ListContainers", err)
	}
	var out []Container
	for _, ct := range resp.Containers {
		out = append(out, containerFromV1(ct))
	}
	return out, nil
}

// ContainerStatus returns what the runtime reports in a container's status.
func (c *Client) ContainerStatus(ctx context.Context, id string) (ContainerStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.ContainerStatus(ctx, &runtimev1.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return ContainerStatus{}, c.wrap("ContainerStatus", err)
	}
	st := resp.GetStatus()
	return ContainerStatus{Image: st.GetImage().GetImage(), StartedAt: unixNano(st.GetStartedAt()), ExitCode: st.GetExitCode()}, nil
}

// ContainerImage returns the image the runtime reports in the container's
// status: the name the kubelet compares with the spec (ListContainers
// usually reports the image ID instead).
func (c *Client) ContainerImage(ctx context.Context, id string) (string, error) {
	st, err := c.ContainerStatus(ctx, id)
	return st.Image, err
}

func sandboxFromV1(s *runtimev1.PodSandbox) Sandbox {
	sb := Sandbox{ID: s.Id, Ready: s.State == runtimev1.PodSandboxState_SANDBOX_READY,
		CreatedAt: unixNano(s.CreatedAt), Labels: s.Labels, Annotations: s.Annotations}
	if m := s.Metadata; m != nil {
		sb.Name, sb.Namespace, sb.UID, sb.Attempt = m.Name, m.Namespace, m.Uid, m.Attempt
	}
	return fillSandbox(sb)
}

// fillSandbox falls back to the kubelet's labels when metadata is missing.
func fillSandbox(s Sandbox) Sandbox {
	if s.Name == "" {
		s.Name = s.Labels[PodNameLabel]
	}
	if s.Namespace == "" {
		s.Namespace = s.Labels[PodNamespaceLabel]
	}
	if s.UID == "" {
		s.UID = s.Labels[PodUIDLabel]
	}
	return s
}

func containerFromV1(ct *runtimev1.Container) Container {
	x := Container{ID: ct.Id, SandboxID: ct.PodSandboxId, ImageRef: ct.ImageRef,
		State:     ContainerState(strings.TrimPrefix(ct.State.String(), "CONTAINER_")),
		CreatedAt: unixNano(ct.CreatedAt), Labels: ct.Labels, Annotations: ct.Annotations}
	if m := ct.Metadata; m != nil {
		x.Name, x.Attempt = m.Name, m.Attempt
	}
	if ct.Image != nil {
		x.Image = ct.Image.Image
	}
	return fillContainer(x)
}

// fillContainer decodes the kubelet's labels and hash annotation.
func fillContainer(x Container) Container {
	if x.Name == "" {
		x.Name = x.Labels[ContainerNameLabel]
	}
	x.PodName = x.Labels[PodNameLabel]
	x.PodNamespace = x.Labels[PodNamespaceLabel]
	x.PodUID = x.Labels[PodUIDLabel]
	x.Hash, x.HashErr = ParseHash(x.Annotations[ContainerHashAnnotation])
	return x
}

// shortID is the 13-character prefix the CRI tools print.
func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// RuntimeHandlers are the runtime handlers containerd's CRI plugin is
// configured with, each with its runtime type (io.containerd.runc.v2),
// and the handler a sandbox without one runs under: read from the verbose
// Status's "config" (containerd 1.x's CRI configuration as JSON). An
// error when the runtime sends no such configuration.
func (c *Client) RuntimeHandlers(ctx context.Context) (handlers map[string]string, def string, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.Status(ctx, &runtimev1.StatusRequest{Verbose: true})
	if err != nil {
		return nil, "", c.wrap("Status", err)
	}
	return parseRuntimeHandlers(resp.GetInfo()["config"])
}

// parseRuntimeHandlers reads containerd 1.x's CRI configuration as its
// verbose Status sends it.
func parseRuntimeHandlers(config string) (map[string]string, string, error) {
	if config == "" {
		return nil, "", errors.New("the runtime's verbose Status has no \"config\": not containerd's CRI plugin of 1.x")
	}
	var cfg struct {
		Containerd struct {
			DefaultRuntimeName string `json:"defaultRuntimeName"`
			Runtimes           map[string]struct {
				Type string `json:"runtimeType"`
			} `json:"runtimes"`
		} `json:"containerd"`
	}
	if err := json.Unmarshal([]byte(config), &cfg); err != nil {
		return nil, "", fmt.Errorf("the runtime's verbose Status \"config\": %w", err)
	}
	handlers := map[string]string{}
	for name, rt := range cfg.Containerd.Runtimes {
		handlers[name] = rt.Type
	}
	return handlers, cfg.Containerd.DefaultRuntimeName, nil
}
