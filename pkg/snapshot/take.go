package snapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
)

// callTimeout bounds every CRI call of this package but stopping and
// removing sandboxes, which the client bounds more generously.
const callTimeout = 10 * time.Second

// Runtime reads snapshots from a CRI runtime (and, for the e2e, removes
// pods) through the project's CRI client, pkg/cri.
type Runtime struct {
	cri *cri.Client
}

// Dial connects to the runtime's unix socket endpoint (unix:///path).
func Dial(ctx context.Context, endpoint string) (*Runtime, error) {
	c, err := cri.Dial(ctx, endpoint, cri.Options{Timeout: callTimeout})
	if err != nil {
		return nil, err
	}
	return &Runtime{cri: c}, nil
}

// New reads snapshots through a client the caller dialed (with its own
// timeout); Close closes that client.
func New(c *cri.Client) *Runtime { return &Runtime{cri: c} }

// Close closes the connection.
func (r *Runtime) Close() error { return r.cri.Close() }

// Take snapshots the sandboxes and containers of one namespace ("" for
// every namespace: the whole node).
func (r *Runtime) Take(ctx context.Context, namespace string) (*Snapshot, error) {
	s := &Snapshot{Taken: time.Now()}
	sandboxes, err := r.cri.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	podOf := map[string]string{}
	for _, sb := range sandboxes {
		if namespace != "" && sb.Namespace != namespace {
			continue
		}
		pod := sb.Namespace + "/" + sb.Name
		podOf[sb.ID] = pod
		out := Sandbox{Pod: pod, ID: sb.ID, UID: sb.UID, Attempt: sb.Attempt, Ready: sb.Ready, CreatedAt: sb.CreatedAt}
		if sb.Ready {
			st, err := r.cri.SandboxStatus(ctx, sb.ID)
			if err != nil {
				return nil, err
			}
			out.IP, out.HostNetwork = st.IP, st.HostNetwork
		}
		s.Sandboxes = append(s.Sandboxes, out)
	}
	containers, err := r.cri.ListContainers(ctx)
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
		st, err := r.cri.ContainerStatus(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		out.StartedAt, out.ExitCode, out.Image = st.StartedAt, st.ExitCode, st.Image
		s.Containers = append(s.Containers, out)
	}
	s.Sort()
	return s, nil
}

// RemoveAll stops and removes every sandbox of the namespace ("" for all)
// and so its containers and network: the e2e's reset between two
// baselines, and its cleanup. It tries every sandbox even when some fail,
// and returns how many it removed and every failure, joined.
func (r *Runtime) RemoveAll(ctx context.Context, namespace string) (int, error) {
	sandboxes, err := r.cri.ListSandboxes(ctx)
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
		err := r.cri.StopSandbox(ctx, sb.ID)
		if err == nil {
			err = r.cri.RemoveSandbox(ctx, sb.ID)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing sandbox %s of %s/%s: %w", short(sb.ID), sb.Namespace, sb.Name, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
