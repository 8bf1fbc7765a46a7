package nodeimage

import (
	"testing"

	"gotest.tools/v3/assert"
)

// The node images carry the product's bridge etcd (pkg/etcdbridge, whose
// tests hold the rule and the references) next to the etcd 3.7 of the
// kubeadm that needs it, built from the module proxy at its release.
func TestImagesCarryTheBridge(t *testing.T) {
	got, err := bridgeFor("registry.k8s.io/etcd:3.7.0-0")
	assert.NilError(t, err)
	assert.Check(t, got, "a kubeadm that wants 3.7 gets the bridge in its images")
	v, err := etcdModuleVersion(etcdBridgeRef("registry.k8s.io/etcd:3.7.0-0")[len("registry.k8s.io/etcd:"):])
	assert.NilError(t, err)
	assert.Equal(t, v, "v"+EtcdBridgeVersion)
}
