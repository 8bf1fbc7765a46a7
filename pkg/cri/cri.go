// Package cri is a small client of a container runtime's CRI
// RuntimeService, shared by the CLI and the e2e: it lists and inspects
// sandboxes and containers, and stops and removes sandboxes. It speaks
// runtime.v1 and runtime.v1alpha2 and picks the one the runtime serves
// (containerd 1.6 serves both; kubelets 1.18 to 1.21 use v1alpha2, 1.26 and
// later only v1). As the kubelet's remote runtime does, every call is
// written once for v1 and converted to v1alpha2 at the call boundary
// (internal/v1alpha2). Sandboxes and containers come back in
// version-neutral types with the kubelet's labels and annotations decoded.
package cri

import (
	"errors"
	"fmt"
	"strconv"
	"time"
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

// SandboxStatus is what PodSandboxStatus adds to a listed sandbox.
type SandboxStatus struct {
	IP string
	// HostNetwork is true for a pod in the node's network namespace.
	HostNetwork bool
	// RuntimeHandler is the handler (a RuntimeClass's) the sandbox runs
	// under; empty: the runtime's default.
	RuntimeHandler string
}

// ContainerStatus is what ContainerStatus adds to a listed container.
type ContainerStatus struct {
	// Image is the name the kubelet compares with the spec (a listing
	// usually reports the image ID instead).
	Image     string
	StartedAt time.Time
	ExitCode  int32
}

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
