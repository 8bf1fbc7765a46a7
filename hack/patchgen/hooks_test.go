package main

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestHookVariants(t *testing.T) {
	patches := t.TempDir()
	for path, content := range map[string]string{
		"hooks/1-containers/v1.18.patch": "own @KUBE_VERSION@, 1.18 era\n",
		"hooks/1-containers/v1.21.patch": "own @KUBE_VERSION@, 1.21 era\n",
		"hooks/2-sidecars/v1.32.patch":   "sidecars @KUBE_VERSION@\n",
		"hooks/3-ready/v1.18.patch":      "ready @KUBE_VERSION@\n",
		"hooks/3-ready/v1.35.end":        "",
	} {
		write(t, mkdirFor(t, filepath.Join(patches, path)), content)
	}
	g := generator{patchesDir: patches}
	for _, tc := range []struct {
		version string
		want    []string
	}{
		{version: "1.18.19", want: []string{"own v1.18.19, 1.18 era\n", "ready v1.18.19\n"}},
		{version: "1.20.15", want: []string{"own v1.20.15, 1.18 era\n", "ready v1.20.15\n"}},
		{version: "1.21.14", want: []string{"own v1.21.14, 1.21 era\n", "ready v1.21.14\n"}},
		{version: "1.31.14", want: []string{"own v1.31.14, 1.21 era\n", "ready v1.31.14\n"}},
		{version: "1.34.12", want: []string{"own v1.34.12, 1.21 era\n", "sidecars v1.34.12\n", "ready v1.34.12\n"}},
		{version: "1.35.8", want: []string{"own v1.35.8, 1.21 era\n", "sidecars v1.35.8\n"}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			paths, err := g.hookPatches(row(tc.version), t.TempDir())
			assert.NilError(t, err)
			var got []string
			for _, p := range paths {
				data, err := os.ReadFile(p.path)
				assert.NilError(t, err)
				got = append(got, string(data))
			}
			assert.DeepEqual(t, got, tc.want)
		})
	}
	_, err := g.hookPatches(row("1.17.17"), t.TempDir())
	assert.Check(t, is.ErrorContains(err, "no hook of"))
}

func TestLoadHooksRejectsStrayFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, mkdirFor(t, filepath.Join(dir, "1-containers", "1.21.patch")), "x")
	_, err := loadHooks(dir)
	assert.Check(t, is.ErrorContains(err, "is not a variant"))

	empty := t.TempDir()
	assert.NilError(t, os.Mkdir(filepath.Join(empty, "1-containers"), 0o755))
	_, err = loadHooks(empty)
	assert.Check(t, is.ErrorContains(err, "has no variant"))

	ended := t.TempDir()
	write(t, mkdirFor(t, filepath.Join(ended, "1-containers", "v1.21.end")), "")
	_, err = loadHooks(ended)
	assert.Check(t, is.ErrorContains(err, "ends before its first variant"))
}

func mkdirFor(t *testing.T, path string) string {
	t.Helper()
	assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	return path
}
