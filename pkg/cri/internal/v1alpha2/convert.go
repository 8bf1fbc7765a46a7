// Package v1alpha2 speaks CRI runtime.v1alpha2 in terms of runtime.v1, as
// the kubelet's remote runtime does: the two APIs are wire-compatible (same
// messages, same field numbers), so a message converts by marshalling it in
// one version and unmarshalling it in the other. Everything else in pkg/cri
// is written once, for v1; convert_test.go fails when a field of one version
// has no counterpart in the other.
package v1alpha2

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
)

// message is what gogo-generated CRI messages of both versions implement.
type message interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// Convert copies from into to, a message of the other API version.
func Convert(from, to message) error {
	data, err := from.Marshal()
	if err != nil {
		return fmt.Errorf("converting %T to %T: %w", from, to, err)
	}
	if err := to.Unmarshal(data); err != nil {
		return fmt.Errorf("converting %T to %T: %w", from, to, err)
	}
	return nil
}

// call converts req into req2, calls rpc of the other version, and converts
// its answer into resp.
func call[Req2, Resp2 message, Resp message](ctx context.Context, req message, req2 Req2,
	rpc func(context.Context, Req2, ...grpc.CallOption) (Resp2, error), resp Resp) (Resp, error) {
	var none Resp
	if err := Convert(req, req2); err != nil {
		return none, err
	}
	got, err := rpc(ctx, req2)
	if err != nil {
		return none, err
	}
	if err := Convert(got, resp); err != nil {
		return none, err
	}
	return resp, nil
}

// serve is call for servers: their methods take no call options.
func serve[Req2, Resp2 message, Resp message](ctx context.Context, req message, req2 Req2,
	rpc func(context.Context, Req2) (Resp2, error), resp Resp) (Resp, error) {
	return call(ctx, req, req2, func(ctx context.Context, r Req2, _ ...grpc.CallOption) (Resp2, error) { return rpc(ctx, r) }, resp)
}
