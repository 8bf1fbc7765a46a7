package snapshot

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri/fake"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"gotest.tools/v3/assert"
)

func TestRemoveAllTriesEverySandbox(t *testing.T) {
	tests := []struct {
		name       string
		namespace  string
		failStop   []string
		failRemove []string
		wantLeft   []string
		wantN      int
		wantErrs   []string
	}{
		{name: "all removed", wantN: 4},
		{name: "namespace only", namespace: "kc-e2e", wantLeft: []string{"ddd"}, wantN: 3},
		{name: "the first fails to stop", failStop: []string{"aaa"}, wantLeft: []string{"aaa"}, wantN: 3,
			wantErrs: []string{"sandbox aaa of kc-e2e/p1", "stop failed"}},
		{name: "two fail", failStop: []string{"bbb"}, failRemove: []string{"ddd"}, wantLeft: []string{"bbb", "ddd"}, wantN: 2,
			wantErrs: []string{"sandbox bbb of kc-e2e/p2", "stop failed", "sandbox ddd of other/p4", "remove failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fake.Start(t, cri.APIv1)
			var sandboxes []cri.Sandbox
			for _, sb := range []struct{ id, ns, name string }{{"aaa", "kc-e2e", "p1"}, {"bbb", "kc-e2e", "p2"}, {"ccc", "kc-e2e", "p3"}, {"ddd", "other", "p4"}} {
				sandboxes = append(sandboxes, cri.Sandbox{ID: sb.id, Name: sb.name, Namespace: sb.ns, UID: sb.id, Ready: true})
			}
			srv.Set(sandboxes, nil)
			for _, id := range tt.failStop {
				srv.FailFor("StopPodSandbox", id, status.Error(codes.Internal, "stop failed"))
			}
			for _, id := range tt.failRemove {
				srv.FailFor("RemovePodSandbox", id, status.Error(codes.Internal, "remove failed"))
			}
			rt, err := Dial(context.Background(), srv.Endpoint)
			assert.NilError(t, err)
			defer rt.Close()
			n, err := rt.RemoveAll(context.Background(), tt.namespace)
			assert.Equal(t, n, tt.wantN)
			var left []string
			for _, sb := range srv.Sandboxes() {
				left = append(left, sb.ID)
			}
			sort.Strings(left)
			assert.DeepEqual(t, left, tt.wantLeft)
			if len(tt.wantErrs) == 0 {
				assert.NilError(t, err)
			}
			for _, w := range tt.wantErrs {
				assert.Assert(t, err != nil && strings.Contains(err.Error(), w), "error %v lacks %q", err, w)
			}
		})
	}
}
