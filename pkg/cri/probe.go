package cri

import (
	"context"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri/internal/v1alpha2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Served is what a runtime serves of the CRI.
type Served struct {
	Runtime RuntimeVersion
	// APIs are the CRI API versions it answers Version on, v1 first.
	APIs []string
	// RuntimeConfig: it implements the RuntimeConfig call (see
	// HasRuntimeConfig).
	RuntimeConfig bool
}

// Probe dials the runtime at endpoint and reports its version, every CRI
// API version it answers Version on, and whether it implements
// RuntimeConfig. Dial stops at the first API that answers (v1 before
// v1alpha2), so after a v1 answer v1alpha2 is asked too, on the same
// connection. A runtime that answers Unimplemented does not serve the API
// or the call; any other error is returned.
func Probe(ctx context.Context, endpoint string, opts Options) (Served, error) {
	c, err := Dial(ctx, endpoint, opts)
	if err != nil {
		return Served{}, err
	}
	defer c.Close()
	s := Served{Runtime: c.Runtime(), APIs: []string{c.APIVersion()}}
	if c.APIVersion() == APIv1alpha2 {
		return s, nil
	}
	if s.RuntimeConfig, err = c.HasRuntimeConfig(ctx); err != nil {
		return Served{}, err
	}
	// useAPI switches the client to v1alpha2 when it answers: last.
	err = c.useAPI(ctx, APIv1alpha2, v1alpha2.NewClient(c.conn))
	switch {
	case err == nil:
		s.APIs = append(s.APIs, APIv1alpha2)
	case status.Code(err) != codes.Unimplemented:
		return Served{}, c.wrap("Version (v1alpha2)", err)
	}
	return s, nil
}

// runtimeConfigMethod is runtime.v1's RuntimeConfig (cri-api >= v0.28,
// KEP-4033), which this module's cri-api (v0.25.16) has no stub for.
const runtimeConfigMethod = "/runtime.v1.RuntimeService/RuntimeConfig"

// HasRuntimeConfig reports whether the runtime implements the
// RuntimeConfig call from which kubelet 1.38 takes its cgroup driver. The
// call is made by name: its request has no fields, so an empty message is
// the request on the wire, and the answer is read into an empty message
// (its fields are kept as unknown and ignored). Unimplemented means no;
// another error is returned.
func (c *Client) HasRuntimeConfig(ctx context.Context) (bool, error) {
	if c.api != APIv1 {
		return false, nil // a v1alpha2-only runtime predates the call
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err := c.conn.Invoke(ctx, runtimeConfigMethod, &emptypb.Empty{}, &emptypb.Empty{})
	switch {
	case err == nil:
		return true, nil
	case status.Code(err) == codes.Unimplemented:
		return false, nil
	}
	return false, c.wrap("RuntimeConfig", err)
}
