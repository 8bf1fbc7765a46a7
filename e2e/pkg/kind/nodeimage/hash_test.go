package nodeimage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestContentHash(t *testing.T) {
	base := map[string][]byte{"a": []byte("xy"), "b": []byte("z")}
	h := contentHash(base)
	assert.Equal(t, len(h), 64)
	assert.Equal(t, contentHash(map[string][]byte{"b": []byte("z"), "a": []byte("xy")}), h, "order of insertion must not matter")
	for _, tc := range []struct {
		name  string
		parts map[string][]byte
	}{
		{"bytes moved between parts", map[string][]byte{"a": []byte("x"), "b": []byte("yz")}},
		{"renamed part", map[string][]byte{"a": []byte("xy"), "c": []byte("z")}},
		{"changed content", map[string][]byte{"a": []byte("xy"), "b": []byte("Z")}},
		{"extra empty part", map[string][]byte{"a": []byte("xy"), "b": []byte("z"), "c": nil}},
		{"name and content swapped", map[string][]byte{"xy": []byte("a"), "b": []byte("z")}},
	} {
		assert.Assert(t, contentHash(tc.parts) != h, tc.name)
	}
}

func TestRootfsKeyFollowsPackages(t *testing.T) {
	k := rootfsKey(basePackages)
	assert.Equal(t, rootfsKey(basePackages), k)
	assert.Assert(t, rootfsKey(append(append([]string{}, basePackages...), "curl")) != k)
	assert.Assert(t, rootfsKey(componentPackages) != k)
}

func TestEmbeddedFilesExist(t *testing.T) {
	files := allFiles()
	for _, name := range append([]string{"Dockerfile.base", "containerd-config.toml.tmpl", "node-setup.sh", "kube-proxy-wrapper"}, baseFiles...) {
		_, ok := files[name]
		assert.Assert(t, ok, name)
	}
}

func TestContainerdConfig(t *testing.T) {
	for _, tc := range []struct {
		version string
		driver  string
	}{
		{"1.21.14", "SystemdCgroup = false"},
		{"1.23.17", "SystemdCgroup = false"},
		{"1.24.17", "SystemdCgroup = true"},
		{"1.31.14", "SystemdCgroup = true"},
	} {
		cfg, err := containerdConfig("k8s.gcr.io/pause:3.4.1", systemdCgroup(tc.version))
		assert.NilError(t, err)
		for _, want := range []string{`sandbox_image = "k8s.gcr.io/pause:3.4.1"`, tc.driver, "restrict_oom_score_adj = true", `bin_dir = "/usr/lib/cni"`} {
			assert.Assert(t, strings.Contains(string(cfg), want), "%s: %s", tc.version, want)
		}
	}
}

// A version's tar is up to date by its images' inputs alone: the engine
// may have dropped the images, and a rebuilt image has a new ID.
func TestTarInputs(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kube-apiserver")
	assert.NilError(t, os.WriteFile(bin, []byte("v1"), 0o755))
	pause := filepath.Join(dir, "pause")
	assert.NilError(t, os.WriteFile(pause, []byte("p"), 0o755))
	specs := []imageSpec{
		scratchImage("registry.k8s.io/pause:3.10", "pause", pause),
		binaryImage("registry.k8s.io/kube-apiserver:v1.31.14", "kubelet-compat/kind-components:abc", "kube-apiserver", bin),
	}
	got, err := tarInputs(specs)
	assert.NilError(t, err)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	assert.Equal(t, len(lines), 2)
	assert.Assert(t, strings.HasPrefix(lines[0], "registry.k8s.io/kube-apiserver:v1.31.14 "), "sorted by ref")

	reversed, err := tarInputs([]imageSpec{specs[1], specs[0]})
	assert.NilError(t, err)
	assert.Equal(t, reversed, got, "the specs' order must not matter")

	later := time.Now().Add(time.Hour)
	assert.NilError(t, os.Chtimes(bin, later, later))
	touched, err := tarInputs(specs)
	assert.NilError(t, err)
	assert.Equal(t, touched, got, "a rebuilt binary with the same bytes is the same input")

	assert.NilError(t, os.WriteFile(bin, []byte("v2"), 0o755))
	changed, err := tarInputs(specs)
	assert.NilError(t, err)
	assert.Assert(t, changed != got, "a changed binary must make the tar stale")

	specs[1] = binaryImage("registry.k8s.io/kube-apiserver:v1.31.14", "kubelet-compat/kind-components:def", "kube-apiserver", bin)
	rebased, err := tarInputs(specs)
	assert.NilError(t, err)
	assert.Assert(t, rebased != changed, "another component root must make the tar stale")

	assert.NilError(t, os.Remove(pause))
	_, err = tarInputs(specs)
	assert.ErrorContains(t, err, "image registry.k8s.io/pause:3.10")
}
