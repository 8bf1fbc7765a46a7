package nodeimage

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestEtcdBridge(t *testing.T) {
	const repo = "registry.k8s.io/etcd:"
	for _, tc := range []struct {
		running, want string
		bridge        string
		err           string
	}{
		// kubeadm 1.36 -> 1.37 on a cluster kubeadm 1.36 made or upgraded.
		{running: "3.6.8-0", want: "3.7.0-0", bridge: repo + "3.6.16-0"},
		// Already at a 3.6 etcd 3.7 accepts: its WAL may still hold 3.5's entries.
		{running: "3.6.16-0", want: "3.7.0-0", bridge: repo + "3.6.16-0"},
		{running: "3.6.8-0", want: "3.8.1-0", bridge: repo + "3.6.16-0"},
		// Within 3.6, within 3.7, and 3.5 -> 3.6 are kubeadm's own steps.
		{running: "3.6.5-0", want: "3.6.8-0"},
		{running: "3.7.0-0", want: "3.7.2-0"},
		{running: "3.5.24-0", want: "3.6.5-0"},
		{running: "3.6.8-0", want: "latest", err: `etcd tag "latest" is not a 3.x release`},
		{running: "", want: "3.7.0-0", err: `etcd tag "" is not a 3.x release`},
	} {
		running, want := repo+tc.running, repo+tc.want
		if tc.running == "" {
			running = "registry.k8s.io/etcd"
		}
		got, need, err := EtcdBridge(running, want)
		if tc.err != "" {
			assert.Error(t, err, tc.err)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, need, tc.bridge != "", "%s -> %s", tc.running, tc.want)
		assert.Equal(t, got, tc.bridge, "%s -> %s", tc.running, tc.want)
	}
}

func TestImagesCarryTheBridge(t *testing.T) {
	for _, tc := range []struct {
		want   string
		bridge bool
	}{
		{want: "registry.k8s.io/etcd:3.7.0-0", bridge: true},
		{want: "registry.k8s.io/etcd:3.6.8-0"},
		{want: "registry.k8s.io/etcd:3.5.24-0"},
	} {
		got, err := bridgeFor(tc.want)
		assert.NilError(t, err)
		assert.Equal(t, got, tc.bridge, tc.want)
	}
	assert.Equal(t, etcdBridgeRef("registry.k8s.io/etcd:3.7.0-0"), "registry.k8s.io/etcd:3.6.16-0")
	// The bridge is itself a 3.6 that 3.7 accepts (3.6.11 or later).
	minor, err := etcdMinor(etcdBridgeTag)
	assert.NilError(t, err)
	assert.Equal(t, minor, 6)
}
