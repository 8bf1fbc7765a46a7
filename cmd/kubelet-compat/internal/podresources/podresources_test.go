package podresources

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/podresources/fake"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestList(t *testing.T) {
	pods := []fake.Pod{{Namespace: "kube-system", Name: "etcd-node-1"}, {Namespace: "default", Name: "web"}}
	want := []Pod{{Namespace: "kube-system", Name: "etcd-node-1"}, {Namespace: "default", Name: "web"}}
	for _, tc := range []struct {
		name    string
		apis    []string
		wantAPI string
	}{
		{name: "1.20 and later: v1", apis: []string{fake.APIv1, fake.APIv1alpha1}, wantAPI: "v1"},
		{name: "1.18 and 1.19: v1alpha1 only", apis: []string{fake.APIv1alpha1}, wantAPI: "v1alpha1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fake.Start(t, tc.apis...)
			srv.Set(pods...)
			got, api, err := List(context.Background(), srv.Endpoint, os.Getuid(), 5*time.Second)
			assert.NilError(t, err)
			assert.Equal(t, api, tc.wantAPI)
			assert.DeepEqual(t, got, want)
		})
	}
}

func TestListErrors(t *testing.T) {
	dir, err := os.MkdirTemp("", "podres")
	assert.NilError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })

	// A socket the previous kubelet left and nobody serves any more.
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	assert.NilError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()

	regular := filepath.Join(dir, "regular")
	assert.NilError(t, os.WriteFile(regular, nil, 0600))

	served := fake.Start(t)
	for _, tc := range []struct {
		name, endpoint string
		owner          int
		want           string
	}{
		{name: "no socket", endpoint: "unix://" + filepath.Join(dir, "none.sock"), owner: os.Getuid(), want: "no pod-resources socket at "},
		{name: "relative endpoint", endpoint: "unix://kubelet.sock", owner: os.Getuid(), want: `pod-resources endpoint "unix://kubelet.sock": want unix:///absolute/path`},
		{name: "not a socket", endpoint: regular, owner: os.Getuid(), want: "is not a unix socket"},
		{name: "someone else's socket", endpoint: served.Endpoint, owner: os.Getuid() + 1, want: "is not owned by uid"},
		{name: "nobody serves it", endpoint: "unix://" + stale, owner: os.Getuid(), want: "the kubelet does not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := List(context.Background(), tc.endpoint, tc.owner, 2*time.Second)
			assert.Check(t, is.ErrorContains(err, tc.want))
		})
	}
}
