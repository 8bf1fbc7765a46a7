package cri_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri/fake"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"gotest.tools/v3/assert"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestProbe(t *testing.T) {
	for _, tc := range []struct {
		name string
		apis []string
		want []string
	}{
		{name: "v1 only", apis: []string{cri.APIv1}, want: []string{cri.APIv1}},
		{name: "v1alpha2 only (containerd < 1.5)", apis: []string{cri.APIv1alpha2}, want: []string{cri.APIv1alpha2}},
		{name: "both (containerd 1.6, 1.7)", apis: []string{cri.APIv1, cri.APIv1alpha2}, want: []string{cri.APIv1, cri.APIv1alpha2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fake.Start(t, tc.apis...)
			srv.SetVersion("containerd", "v9.9.9")
			got, err := cri.Probe(context.Background(), srv.Endpoint, cri.Options{})
			assert.NilError(t, err)
			assert.DeepEqual(t, got.APIs, tc.want)
			assert.Equal(t, got.Runtime.RuntimeName+" "+got.Runtime.RuntimeVersion, "containerd v9.9.9")
			// The fake is written against cri-api v0.25, which has no
			// RuntimeConfig: its server answers Unimplemented.
			assert.Equal(t, got.RuntimeConfig, false)
		})
	}
}

// TestProbeRuntimeConfig: a runtime.v1 server that implements RuntimeConfig
// (as containerd 2.x does), written by hand since this module's cri-api has
// no stub for it.
func TestProbeRuntimeConfig(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "c.sock")
	if len(sock) > 100 {
		t.Skip("socket path too long")
	}
	lis, err := net.Listen("unix", sock)
	assert.NilError(t, err)
	s := grpc.NewServer()
	calls := 0
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "runtime.v1.RuntimeService",
		HandlerType: (*interface{})(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Version", Handler: func(_ interface{}, _ context.Context, dec func(interface{}) error, _ grpc.UnaryServerInterceptor) (interface{}, error) {
				req := new(runtimev1.VersionRequest)
				if err := dec(req); err != nil {
					return nil, err
				}
				return &runtimev1.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "v2.4.2", RuntimeApiVersion: "v1"}, nil
			}},
			{MethodName: "RuntimeConfig", Handler: func(_ interface{}, _ context.Context, dec func(interface{}) error, _ grpc.UnaryServerInterceptor) (interface{}, error) {
				calls++
				if err := dec(new(emptypb.Empty)); err != nil {
					return nil, err
				}
				// A RuntimeConfigResponse with linux.cgroup_driver set: the
				// probe reads it as an empty message.
				return &runtimev1.VersionResponse{Version: "cgroup-driver-stand-in"}, nil
			}},
		},
	}, struct{}{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)

	got, err := cri.Probe(context.Background(), "unix://"+sock, cri.Options{})
	assert.NilError(t, err)
	assert.DeepEqual(t, got.APIs, []string{cri.APIv1})
	assert.Equal(t, got.RuntimeConfig, true)
	assert.Equal(t, calls, 1)
}
