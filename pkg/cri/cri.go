// Package cri is a small read-only client of a container runtime's CRI
// RuntimeService. It speaks runtime.v1 and runtime.v1alpha2 and picks the one
// the runtime serves (containerd 1.6 serves both; kubelets 1.18 to 1.21 use
// v1alpha2, 1.26 and later only v1), and reports sandboxes and containers in
// version-neutral types with the kubelet's labels and annotations decoded.
package cri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	runtimev1alpha2 "k8s.io/cri-api/pkg/apis/runtime/v1alpha2"
)

// The CRI API versions this package speaks.
const (
	APIv1       = "v1"
	APIv1alpha2 = "v1alpha2"
)

// Labels and annotations the kubelet puts on sandboxes and containers.
const (
	PodNameLabel            = "io.kubernetes.pod.name"
	PodNamespaceLabel       = "io.kubernetes.pod.namespace"
	PodUIDLabel             = "io.kubernetes.pod.uid"
	ContainerNameLabel      = "io.kubernetes.container.name"
	ContainerHashAnnotation = "io.kubernetes.container.hash"
	RestartCountAnnotation  = "io.kubernetes.container.restartCount"
	ConfigSourceAnnotation  = "kubernetes.io/config.source"
	ConfigMirrorAnnotation  = "kubernetes.io/config.mirror"
	ConfigSourceFile        = "file"
	DefaultRuntimeEndpoint  = "unix:///run/containerd/containerd.sock"
	DefaultCallTimeout      = 10 * time.Second
	maxMessageSize          = 16 << 20
)

// Sandbox is a pod sandbox as the runtime lists it.
type Sandbox struct {
	ID        string
	Name      string // the pod's name (metadata)
	Namespace string
	UID       string
	Attempt   uint32
	Ready     bool
	CreatedAt time.Time
	Labels    map[string]string
	// Annotations are the pod's annotations as the kubelet passed them; for
	// static pods they include kubernetes.io/config.source: file.
	Annotations map[string]string
}

// IsStatic reports whether the kubelet created the sandbox for a pod read
// from its manifest directory.
func (s Sandbox) IsStatic() bool { return s.Annotations[ConfigSourceAnnotation] == ConfigSourceFile }

// ContainerState is a container's runtime state.
type ContainerState string

// Container states, named as in the CRI.
const (
	ContainerCreated ContainerState = "CREATED"
	ContainerRunning ContainerState = "RUNNING"
	ContainerExited  ContainerState = "EXITED"
	ContainerUnknown ContainerState = "UNKNOWN"
)

// Container is a container as the runtime lists it.
type Container struct {
	ID        string
	SandboxID string
	// Name is the container's name in its pod (metadata).
	Name    string
	Attempt uint32
	// Image is what the runtime reports as the container's image: in a list,
	// usually the image ID the kubelet asked for; see Client.ContainerImage.
	Image     string
	ImageRef  string
	State     ContainerState
	CreatedAt time.Time
	// PodName, PodNamespace and PodUID come from the kubelet's labels.
	PodName      string
	PodNamespace string
	PodUID       string
	// Hash is the kubelet's io.kubernetes.container.hash, 0 when absent or
	// unparsable (HashErr says why), as the kubelet reads it.
	Hash        uint64
	HashErr     error
	Labels      map[string]string
	Annotations map[string]string
}

// Client reads from one runtime over its CRI socket. Every call is bounded by
// the client's call timeout in addition to the caller's context.
type Client struct {
	conn     *grpc.ClientConn
	endpoint string
	api      string
	timeout  time.Duration
	v1       runtimev1.RuntimeServiceClient
	v1alpha2 runtimev1alpha2.RuntimeServiceClient
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
	path, err := SocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	switch {
	case os.IsNotExist(err):
		return nil, fmt.Errorf("no CRI socket at %s (is the container runtime running? see --runtime-endpoint)", path)
	case os.IsPermission(err):
		return nil, fmt.Errorf("permission denied reaching CRI socket %s (run as root)", path)
	case err != nil:
		return nil, fmt.Errorf("CRI socket %s: %w", path, err)
	case fi.Mode()&os.ModeSocket == 0:
		return nil, fmt.Errorf("%s is not a unix socket (mode %s)", path, fi.Mode())
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}
	conn, err := grpc.DialContext(ctx, "passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("connecting to CRI socket %s: %w", path, err)
	}
	c := &Client{
		conn:     conn,
		endpoint: endpoint,
		timeout:  timeout,
		v1:       runtimev1.NewRuntimeServiceClient(conn),
		v1alpha2: runtimev1alpha2.NewRuntimeServiceClient(conn),
	}
	if err := c.detect(ctx, opts.API); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) detect(ctx context.Context, force string) error {
	if force != "" && force != APIv1 && force != APIv1alpha2 {
		return fmt.Errorf("unknown CRI API version %q (want %s or %s)", force, APIv1, APIv1alpha2)
	}
	if force != APIv1alpha2 {
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		resp, err := c.v1.Version(cctx, &runtimev1.VersionRequest{Version: "v1"})
		cancel()
		if err == nil {
			c.api = APIv1
			c.runtime = RuntimeVersion{resp.RuntimeName, resp.RuntimeVersion, resp.RuntimeApiVersion}
			return nil
		}
		if force == APIv1 || status.Code(err) != codes.Unimplemented {
			return c.wrap("Version", err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.v1alpha2.Version(cctx, &runtimev1alpha2.VersionRequest{Version: "v1alpha2"})
	if err != nil {
		return c.wrap("Version (v1alpha2, after v1 was unimplemented)", err)
	}
	c.api = APIv1alpha2
	c.runtime = RuntimeVersion{resp.RuntimeName, resp.RuntimeVersion, resp.RuntimeApiVersion}
	return nil
}

// wrap gives a CRI error one line of context and keeps its gRPC status.
func (c *Client) wrap(call string, err error) error {
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
	var out []Sandbox
	if c.api == APIv1 {
		resp, err := c.v1.ListPodSandbox(ctx, &runtimev1.ListPodSandboxRequest{})
		if err != nil {
			return nil, c.wrap("ListPodSandbox", err)
		}
		for _, s := range resp.Items {
			sb := Sandbox{ID: s.Id, Ready: s.State == runtimev1.PodSandboxState_SANDBOX_READY,
				CreatedAt: unixNano(s.CreatedAt), Labels: s.Labels, Annotations: s.Annotations}
			if m := s.Metadata; m != nil {
				sb.Name, sb.Namespace, sb.UID, sb.Attempt = m.Name, m.Namespace, m.Uid, m.Attempt
			}
			out = append(out, fillSandbox(sb))
		}
		return out, nil
	}
	resp, err := c.v1alpha2.ListPodSandbox(ctx, &runtimev1alpha2.ListPodSandboxRequest{})
	if err != nil {
		return nil, c.wrap("ListPodSandbox", err)
	}
	for _, s := range resp.Items {
		sb := Sandbox{ID: s.Id, Ready: s.State == runtimev1alpha2.PodSandboxState_SANDBOX_READY,
			CreatedAt: unixNano(s.CreatedAt), Labels: s.Labels, Annotations: s.Annotations}
		if m := s.Metadata; m != nil {
			sb.Name, sb.Namespace, sb.UID, sb.Attempt = m.Name, m.Namespace, m.Uid, m.Attempt
		}
		out = append(out, fillSandbox(sb))
	}
	return out, nil
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

// ListContainers lists every container in every state.
func (c *Client) ListContainers(ctx context.Context) ([]Container, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var out []Container
	if c.api == APIv1 {
		resp, err := c.v1.ListContainers(ctx, &runtimev1.ListContainersRequest{})
		if err != nil {
			return nil, c.wrap("ListContainers", err)
		}
		for _, ct := range resp.Containers {
			x := Container{ID: ct.Id, SandboxID: ct.PodSandboxId, ImageRef: ct.ImageRef,
				State:     ContainerState(strings.TrimPrefix(ct.State.String(), "CONTAINER_")),
				CreatedAt: unixNano(ct.CreatedAt), Labels: ct.Labels, Annotations: ct.Annotations}
			if m := ct.Metadata; m != nil {
				x.Name, x.Attempt = m.Name, m.Attempt
			}
			if ct.Image != nil {
				x.Image = ct.Image.Image
			}
			out = append(out, fillContainer(x))
		}
		return out, nil
	}
	resp, err := c.v1alpha2.ListContainers(ctx, &runtimev1alpha2.ListContainersRequest{})
	if err != nil {
		return nil, c.wrap("ListContainers", err)
	}
	for _, ct := range resp.Containers {
		x := Container{ID: ct.Id, SandboxID: ct.PodSandboxId, ImageRef: ct.ImageRef,
			State:     ContainerState(strings.TrimPrefix(ct.State.String(), "CONTAINER_")),
			CreatedAt: unixNano(ct.CreatedAt), Labels: ct.Labels, Annotations: ct.Annotations}
		if m := ct.Metadata; m != nil {
			x.Name, x.Attempt = m.Name, m.Attempt
		}
		if ct.Image != nil {
			x.Image = ct.Image.Image
		}
		out = append(out, fillContainer(x))
	}
	return out, nil
}

// ContainerImage returns the image the runtime reports in the container's
// status: the name the kubelet compares with the spec (ListContainers
// usually reports the image ID instead).
func (c *Client) ContainerImage(ctx context.Context, id string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if c.api == APIv1 {
		resp, err := c.v1.ContainerStatus(ctx, &runtimev1.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			return "", c.wrap("ContainerStatus", err)
		}
		if resp.Status == nil || resp.Status.Image == nil {
			return "", nil
		}
		return resp.Status.Image.Image, nil
	}
	resp, err := c.v1alpha2.ContainerStatus(ctx, &runtimev1alpha2.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return "", c.wrap("ContainerStatus", err)
	}
	if resp.Status == nil || resp.Status.Image == nil {
		return "", nil
	}
	return resp.Status.Image.Image, nil
}

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

// ParseHash reads an io.kubernetes.container.hash annotation as the kubelet
// does: lowercase hex; a missing or bad value reads as 0.
func ParseHash(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("no " + ContainerHashAnnotation + " annotation")
	}
	h, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("bad %s annotation %q", ContainerHashAnnotation, s)
	}
	return h, nil
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
