// Package podresources asks the running kubelet which pods it has, over the
// kubelet's pod-resources socket (<root-dir>/pod-resources/kubelet.sock).
//
// It is sweep's evidence that the kubelet that runs now has taken the
// node's pods in: the kubelet serves List from its pod manager (GetPods;
// GetActivePods, the admitted pods that are not terminal, where the later
// minors' KubeletPodResourcesListUseActivePods is on), and
// HandlePodAdditions adds a pod to the pod manager right before it decides
// its admission and dispatches its first sync. List is not quite read-only:
// before answering, the device manager drops the allocations of pods that
// are not active (UpdateAllocatedDevices, which the kubelet also runs before
// each allocation), so sweep asks only once the kubelet has had time to take
// its pods in. The socket is created by the kubelet process
// itself when it starts (an old socket is removed first), so the answer is
// that process's and nothing a previous kubelet left: a socket nobody serves
// refuses the connection. Every kubelet from 1.13 serves v1alpha1
// (KubeletPodResources, beta and on by default from 1.15); from 1.20 also v1.
package podresources

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	podresourcesv1alpha1 "k8s.io/kubelet/pkg/apis/podresources/v1alpha1"
)

// The socket's place under the kubelet's --root-dir (upstream's
// config.DefaultKubeletPodResourcesDirName and podresources.Socket).
const (
	DirName    = "pod-resources"
	SocketName = "kubelet.sock"
)

// maxMessageSize is what the kubelet's own pod-resources client accepts.
const maxMessageSize = 16 << 20

// Pod is a pod the kubelet has, as List names it (List gives no UID).
type Pod struct{ Namespace, Name string }

func (p Pod) String() string { return p.Namespace + "/" + p.Name }

// DefaultEndpoint is the socket of a kubelet with the given --root-dir.
func DefaultEndpoint(rootDir string) string {
	return "unix://" + filepath.Join(rootDir, DirName, SocketName)
}

// List asks the kubelet at endpoint for its pods: v1 first, v1alpha1 when the
// kubelet does not implement v1 (1.18, 1.19). The socket must be owned by
// ownerUID (the kubelet runs as root), so that nobody else's socket answers
// for the kubelet. timeout bounds each call. It returns the API version that
// answered.
func List(ctx context.Context, endpoint string, ownerUID int, timeout time.Duration) ([]Pod, string, error) {
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, "", err
	}
	if err := checkSocket(path, ownerUID); err != nil {
		return nil, "", err
	}
	conn, err := grpc.DialContext(ctx, "passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize)),
	)
	if err != nil {
		return nil, "", fmt.Errorf("connecting to the kubelet's pod-resources socket %s: %w", path, err)
	}
	defer conn.Close()

	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v1, err := podresourcesv1.NewPodResourcesListerClient(conn).List(cctx, &podresourcesv1.ListPodResourcesRequest{})
	if err == nil {
		var pods []Pod
		for _, p := range v1.GetPodResources() {
			pods = append(pods, Pod{Namespace: p.GetNamespace(), Name: p.GetName()})
		}
		return pods, "v1", nil
	}
	if status.Code(err) != codes.Unimplemented {
		return nil, "", wrap(path, "v1", timeout, err)
	}
	cctx2, cancel2 := context.WithTimeout(ctx, timeout)
	defer cancel2()
	v1alpha1, err := podresourcesv1alpha1.NewPodResourcesListerClient(conn).List(cctx2, &podresourcesv1alpha1.ListPodResourcesRequest{})
	if err != nil {
		return nil, "", wrap(path, "v1alpha1, after v1 was unimplemented", timeout, err)
	}
	var pods []Pod
	for _, p := range v1alpha1.GetPodResources() {
		pods = append(pods, Pod{Namespace: p.GetNamespace(), Name: p.GetName()})
	}
	return pods, "v1alpha1", nil
}

func socketPath(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		p := strings.TrimPrefix(endpoint, "unix://")
		if strings.HasPrefix(p, "/") {
			return p, nil
		}
	case strings.HasPrefix(endpoint, "/"):
		return endpoint, nil
	}
	return "", fmt.Errorf("pod-resources endpoint %q: want unix:///absolute/path", endpoint)
}

func checkSocket(path string, ownerUID int) error {
	fi, err := os.Lstat(path)
	switch {
	case os.IsNotExist(err):
		return fmt.Errorf("no pod-resources socket at %s (does the kubelet run, with this --root-dir and the KubeletPodResources feature on?)", path)
	case os.IsPermission(err):
		return fmt.Errorf("permission denied reaching the pod-resources socket %s (run as root)", path)
	case err != nil:
		return fmt.Errorf("pod-resources socket %s: %w", path, err)
	case fi.Mode()&os.ModeSocket == 0:
		return fmt.Errorf("%s is not a unix socket (mode %s)", path, fi.Mode())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != ownerUID {
		return fmt.Errorf("pod-resources socket %s is not owned by uid %d: not the kubelet's", path, ownerUID)
	}
	return nil
}

func wrap(path, api string, timeout time.Duration, err error) error {
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Unavailable:
			return fmt.Errorf("pod-resources List (%s) at %s: the kubelet does not answer: %s", api, path, s.Message())
		case codes.DeadlineExceeded:
			return fmt.Errorf("pod-resources List (%s) at %s: no answer within %s", api, path, timeout)
		}
		return fmt.Errorf("pod-resources List (%s) at %s: %s: %s", api, path, s.Code(), s.Message())
	}
	return fmt.Errorf("pod-resources List (%s) at %s: %w", api, path, err)
}
