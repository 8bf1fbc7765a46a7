package nodeimage

import (
	"testing"

	"gotest.tools/v3/assert"
)

// The node images carry the product's bridge etcd (pkg/etcdbridge, whose
// tests hold the rule) next to the etcd 3.7 of the kubeadm that needs it.
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
	// The e2e's images build the bridge's release from the module proxy.
	v, err := etcdModuleVersion(etcdBridgeRef("registry.k8s.io/etcd:3.7.0-0")[len("registry.k8s.io/etcd:"):])
	assert.NilError(t, err)
	assert.Equal(t, v, "v"+EtcdBridgeVersion)
}
