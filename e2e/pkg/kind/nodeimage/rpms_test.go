package nodeimage

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestRPMSetForVersion(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{
		"kubernetes-unversioned-1.0.0-1.kc.noarch.rpm",
		"kubernetes-1.20.15-node-1.20.15-1.kc.x86_64.rpm", "kubernetes-1.20.15-kubeadm-1.20.15-1.kc.x86_64.rpm", "kubernetes-1.20.15-client-1.20.15-1.kc.x86_64.rpm",
		"kubernetes-1.21.14-node-1.21.14-1.kc.x86_64.rpm", "kubernetes-1.21.14-kubeadm-1.21.14-1.kc.x86_64.rpm",
	} {
		assert.NilError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	set := rpmSet{patched: dir}
	got, err := set.forVersion("1.20.15")
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []string{
		filepath.Join(dir, "kubernetes-unversioned-1.0.0-1.kc.noarch.rpm"),
		filepath.Join(dir, "kubernetes-1.20.15-node-1.20.15-1.kc.x86_64.rpm"),
		filepath.Join(dir, "kubernetes-1.20.15-kubeadm-1.20.15-1.kc.x86_64.rpm"),
		filepath.Join(dir, "kubernetes-1.20.15-client-1.20.15-1.kc.x86_64.rpm"),
	})
	_, err = set.forVersion("1.21.14")
	assert.ErrorContains(t, err, "want one kubernetes-1.21.14-client-*.rpm")
	_, err = set.forVersion("1.21.1")
	assert.ErrorContains(t, err, "want one kubernetes-1.21.1-node-*.rpm")
}
