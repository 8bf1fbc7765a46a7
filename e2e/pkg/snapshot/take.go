package snapshot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// callTimeout bounds every CRI call of this package.
const callTimeout = 10 * time.Second

// Runtime reads snapshots from a CRI runtime: listings through the
// project's cri client, per-object status (StartedAt, pod IP) and the
// e2e's pod removal through runtime.v1, which containerd 1.6 serves.
type Runtime struct {
	list *cri.Client
	conn *grpc.ClientConn
	rt   runtimev1.RuntimeServiceClient
}

// Dial connects to the runtime's unix socket endpoint (unix:///path).
func Dial(ctx context.Context, endpoint string) (*Runtime, error) {
	list, err := cri.Dial(ctx, endpoint, cri.Options{Timeout: callTimeout})
	if err != nil {
		return nil, err
	}
	path, err := cri.SocketPath(endpoint)
	if err != nil {
		list.Close()
		return nil, err
	}
	conn, err := grpc.DialContext(ctx, "passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}))
	if err != nil {
		list.Close()
		return nil, fmt.Errorf("connecting to %s: %w", path, err)
	}
	return &Runtime{list: list, conn: conn, rt: runtimev1.NewRuntimeServiceClient(conn)}, nil
}

// Close closes both connections.
func (r *Runtime) Close() error {
	r.conn.Close()
	return r.list.Close()
}

// Take snapshots the sandboxes and containers of one namespace.
func (r *Runtime) Take(ctx context.Context, namespace string) (*Snapshot, error) {
	s := &Snapshot{Taken: time.Now()}
	sandboxes, err := r.list.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	podOf := map[string]string{}
	for _, sb := range sandboxes {
		if sb.Namespace != namespace {
			continue
		}
		pod := sb.Namespace + "/" + sb.Name
		podOf[sb.ID] = pod
		out := Sandbox{Pod: pod, ID: sb.ID, UID: sb.UID, Attempt: sb.Attempt, Ready: sb.Ready, CreatedAt: sb.CreatedAt}
		if sb.Ready {
			st, err := r.sandboxStatus(ctx, sb.ID)
			if err != nil {
				return nil, err
			}
			if st.GetNetwork() != nil {
				out.IP = st.GetNetwork().GetIp()
			}
			out.HostNetwork = st.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimev1.NamespaceMode_NODE
		}
		s.Sandboxes = append(s.Sandboxes, out)
	}
	containers, err := r.list.ListContainers(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range containers {
		pod, ok := podOf[c.SandboxID]
		if !ok {
			continue
		}
		out := Container{Pod: pod, Name: c.Name, ID: c.ID, SandboxID: c.SandboxID, Attempt: c.Attempt,
			State: string(c.State), CreatedAt: c.CreatedAt, RestartCount: c.Annotations[cri.RestartCountAnnotation],
			Hash: c.Annotations[cri.ContainerHashAnnotation]}
		st, err := r.containerStatus(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		out.StartedAt = unixNano(st.GetStartedAt())
		out.ExitCode = st.GetExitCode()
		out.Image = st.GetImage().GetImage()
		s.Containers = append(s.Containers, out)
	}
	s.Sort()
	return s, nil
}

func (r *Runtime) sandboxStatus(ctx context.Context, id string) (*runtimev1.PodSandboxStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := r.rt.PodSandboxStatus(ctx, &runtimev1.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, fmt.Errorf("CRI PodSandboxStatus %s: %w", short(id), err)
	}
	return resp.GetStatus(), nil
}

func (r *Runtime) containerStatus(ctx context.Context, id string) (*runtimev1.ContainerStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := r.rt.ContainerStatus(ctx, &runtimev1.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, fmt.Errorf("CRI ContainerStatus %s: %w", short(id), err)
	}
	return resp.GetStatus(), nil
}

// RemoveAll stops and removes every sandbox of the namespace ("" for all)
// and so its containers and network: the e2e's reset between two
// baselines, and its cleanup. It tries every sandbox even when some fail,
// and returns how many it removed and every failure, joined.
func (r *Runtime) RemoveAll(ctx context.Context, namespace string) (int, error) {
	sandboxes, err := r.list.ListSandboxes(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, sb := range sandboxes {
		if namespace != "" && sb.Namespace != namespace {
			continue
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("sandbox %s of %s/%s not removed: %w", short(sb.ID), sb.Namespace, sb.Name, err))
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		_, err := r.rt.StopPodSandbox(cctx, &runtimev1.StopPodSandboxRequest{PodSandboxId: sb.ID})
		if err == nil {
			_, err = r.rt.RemovePodSandbox(cctx, &runtimev1.RemovePodSandboxRequest{PodSandboxId: sb.ID})
		}
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("removing sandbox %s of %s/%s: %w", short(sb.ID), sb.Namespace, sb.Name, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
