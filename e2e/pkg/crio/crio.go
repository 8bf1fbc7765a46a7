// Package crio is what the runtime-swap checks do to an old container
// through CRI v1 (every containerd of the runtime road serves it): exec
// into it, read its log, attach to it, stop it. The project's CRI client (pkg/cri) lists
// and reads; this one acts.
package crio

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Client acts on containers over one runtime's CRI v1.
type Client struct {
	conn *grpc.ClientConn
	rt   runtimev1.RuntimeServiceClient
}

// Dial connects to socket (a path); gRPC reconnects across a runtime swap.
func Dial(socket string) (*Client, error) {
	conn, err := grpc.Dial("passthrough:///"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}))
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, rt: runtimev1.NewRuntimeServiceClient(conn)}, nil
}

func (c *Client) Close() error { return c.conn.Close() }

// Exec runs cmd in the container (ExecSync) and returns its stdout; a
// non-zero exit is an error carrying stderr.
func (c *Client) Exec(ctx context.Context, id string, timeout time.Duration, cmd ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	resp, err := c.rt.ExecSync(ctx, &runtimev1.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout.Seconds())})
	if err != nil {
		return "", fmt.Errorf("ExecSync %s: %w", short(id), err)
	}
	if resp.ExitCode != 0 {
		return string(resp.Stdout), fmt.Errorf("ExecSync %s: exit %d: %s", short(id), resp.ExitCode, strings.TrimSpace(string(resp.Stderr)))
	}
	return string(resp.Stdout), nil
}

// Status is a container's state and log path.
func (c *Client) Status(ctx context.Context, id string) (*runtimev1.ContainerStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.rt.ContainerStatus(ctx, &runtimev1.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, fmt.Errorf("ContainerStatus %s: %w", short(id), err)
	}
	return resp.Status, nil
}

// Stop stops the container (StopContainer with a grace of timeout).
func (c *Client) Stop(ctx context.Context, id string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	_, err := c.rt.StopContainer(ctx, &runtimev1.StopContainerRequest{ContainerId: id, Timeout: int64(timeout.Seconds())})
	if err != nil {
		return fmt.Errorf("StopContainer %s: %w", short(id), err)
	}
	return nil
}

// Attach attaches to the container's stdout and stderr as the kubelet
// does for kubectl attach (the CRI's Attach, then the runtime's streaming
// server over SPDY) and copies them to out until ctx ends.
func (c *Client) Attach(ctx context.Context, id string, out io.Writer) error {
	resp, err := c.rt.Attach(ctx, &runtimev1.AttachRequest{ContainerId: id, Stdout: true, Stderr: true})
	if err != nil {
		return fmt.Errorf("Attach %s: %w", short(id), err)
	}
	u, err := url.Parse(resp.Url)
	if err != nil {
		return fmt.Errorf("Attach %s: the runtime's stream URL %q: %w", short(id), resp.Url, err)
	}
	// The runtime's streaming server listens on loopback without TLS, as
	// containerd's default configuration has it.
	stream, err := remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
	if err != nil {
		return fmt.Errorf("Attach %s: %w", short(id), err)
	}
	if err := stream.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: out}); err != nil {
		return fmt.Errorf("Attach %s: streaming from %s: %w", short(id), u.Host, err)
	}
	return nil
}

// LogHas waits up to timeout until the container's log file (its status's
// log path, which the runtime writes from the container's stdout) holds
// marker.
func (c *Client) LogHas(ctx context.Context, id, marker string, timeout time.Duration) (string, error) {
	st, err := c.Status(ctx, id)
	if err != nil {
		return "", err
	}
	path := st.GetLogPath()
	if path == "" {
		return "", fmt.Errorf("container %s has no log path", short(id))
	}
	deadline := time.Now().Add(timeout)
	for {
		data, err := os.ReadFile(path)
		if err == nil && bytes.Contains(data, []byte(marker)) {
			return path, nil
		}
		if time.Now().After(deadline) {
			return path, fmt.Errorf("%s lacks %q %s after it was written to the container's stdout (read: %v)", path, marker, timeout, err)
		}
		select {
		case <-ctx.Done():
			return path, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func short(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
