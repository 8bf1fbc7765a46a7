package nodeimage

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestPackageSetForVersion(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{
		"kubernetes-unversioned_1.0.0-1_all.deb",
		"kubernetes-1.20.15-node_1.20.15-1_amd64.deb", "kubernetes-1.20.15-kubeadm_1.20.15-1_amd64.deb", "kubernetes-1.20.15-client_1.20.15-1_amd64.deb",
		"kubernetes-1.20.15-master_1.20.15-1_amd64.deb",
		"kubernetes-1.21.14-node_1.21.14-1_amd64.deb", "kubernetes-1.21.14-kubeadm_1.21.14-1_amd64.deb",
	} {
		assert.NilError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	set := packageSet{patched: dir}
	got, err := set.forVersion("1.20.15")
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []string{
		filepath.Join(dir, "kubernetes-unversioned_1.0.0-1_all.deb"),
		filepath.Join(dir, "kubernetes-1.20.15-node_1.20.15-1_amd64.deb"),
		filepath.Join(dir, "kubernetes-1.20.15-kubeadm_1.20.15-1_amd64.deb"),
		filepath.Join(dir, "kubernetes-1.20.15-client_1.20.15-1_amd64.deb"),
	})
	_, err = set.forVersion("1.21.14")
	assert.ErrorContains(t, err, "want one kubernetes-1.21.14-client_*.deb")
	// 1.21.1 is not 1.21.14
	_, err = set.forVersion("1.21.1")
	assert.ErrorContains(t, err, "want one kubernetes-1.21.1-node_*.deb")
}
