package snapshot

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"gotest.tools/v3/assert"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// removeServer is a CRI runtime.v1 server that lists sandboxes and fails
// StopPodSandbox or RemovePodSandbox for the IDs in failStop / failRemove.
type removeServer struct {
	runtimev1.UnimplementedRuntimeServiceServer
	mu         sync.Mutex
	sandboxes  []*runtimev1.PodSandbox
	failStop   map[string]bool
	failRemove map[string]bool
	stopped    []string
	removed    []string
}

func (s *removeServer) Version(context.Context, *runtimev1.VersionRequest) (*runtimev1.VersionResponse, error) {
	return &runtimev1.VersionResponse{Version: "0.1.0", RuntimeName: "fake", RuntimeVersion: "1", RuntimeApiVersion: "v1"}, nil
}

func (s *removeServer) ListPodSandbox(context.Context, *runtimev1.ListPodSandboxRequest) (*runtimev1.ListPodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &runtimev1.ListPodSandboxResponse{Items: s.sandboxes}, nil
}

func (s *removeServer) StopPodSandbox(_ context.Context, r *runtimev1.StopPodSandboxRequest) (*runtimev1.StopPodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = append(s.stopped, r.PodSandboxId)
	if s.failStop[r.PodSandboxId] {
		return nil, status.Error(codes.Internal, "stop failed")
	}
	return &runtimev1.StopPodSandboxResponse{}, nil
}

func (s *removeServer) RemovePodSandbox(_ context.Context, r *runtimev1.RemovePodSandboxRequest) (*runtimev1.RemovePodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failRemove[r.PodSandboxId] {
		return nil, status.Error(codes.Internal, "remove failed")
	}
	s.removed = append(s.removed, r.PodSandboxId)
	return &runtimev1.RemovePodSandboxResponse{}, nil
}

func TestRemoveAllTriesEverySandbox(t *testing.T) {
	tests := []struct {
		name        string
		namespace   string
		failStop    []string
		failRemove  []string
		wantRemoved []string
		wantN       int
		wantErrs    []string
	}{
		{name: "all removed", wantRemoved: []string{"aaa", "bbb", "ccc", "ddd"}, wantN: 4},
		{name: "namespace only", namespace: "kc-e2e", wantRemoved: []string{"aaa", "bbb", "ccc"}, wantN: 3},
		{name: "the first fails to stop", failStop: []string{"aaa"}, wantRemoved: []string{"bbb", "ccc", "ddd"}, wantN: 3,
			wantErrs: []string{"sandbox aaa of kc-e2e/p1", "stop failed"}},
		{name: "two fail", failStop: []string{"bbb"}, failRemove: []string{"ddd"}, wantRemoved: []string{"aaa", "ccc"}, wantN: 2,
			wantErrs: []string{"sandbox bbb of kc-e2e/p2", "stop failed", "sandbox ddd of other/p4", "remove failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &removeServer{failStop: set(tt.failStop), failRemove: set(tt.failRemove)}
			for _, sb := range []struct{ id, ns, name string }{{"aaa", "kc-e2e", "p1"}, {"bbb", "kc-e2e", "p2"}, {"ccc", "kc-e2e", "p3"}, {"ddd", "other", "p4"}} {
				srv.sandboxes = append(srv.sandboxes, &runtimev1.PodSandbox{Id: sb.id, Metadata: &runtimev1.PodSandboxMetadata{Name: sb.name, Namespace: sb.ns, Uid: sb.id}, State: runtimev1.PodSandboxState_SANDBOX_READY})
			}
			endpoint := serve(t, srv)
			rt, err := Dial(context.Background(), endpoint)
			assert.NilError(t, err)
			defer rt.Close()
			n, err := rt.RemoveAll(context.Background(), tt.namespace)
			assert.Equal(t, n, tt.wantN)
			sort.Strings(srv.removed)
			assert.DeepEqual(t, srv.removed, tt.wantRemoved)
			if len(tt.wantErrs) == 0 {
				assert.NilError(t, err)
			}
			for _, w := range tt.wantErrs {
				assert.Assert(t, err != nil && strings.Contains(err.Error(), w), "error %v lacks %q", err, w)
			}
		})
	}
}

func set(ids []string) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func serve(t *testing.T, srv runtimev1.RuntimeServiceServer) string {
	t.Helper()
	// Unix socket paths are limited to 108 bytes: t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "e2e-cri")
	assert.NilError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "cri.sock")
	lis, err := net.Listen("unix", sock)
	assert.NilError(t, err)
	g := grpc.NewServer()
	runtimev1.RegisterRuntimeServiceServer(g, srv)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return "unix://" + sock
}
