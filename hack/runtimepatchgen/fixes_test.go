package main

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/runtimebuild"
)

func TestFixVariants(t *testing.T) {
	patches := t.TempDir()
	for _, p := range []string{
		"containerd/fixes/1-pids/v1.6.patch",
		"containerd/fixes/1-pids/v1.7.patch",
		"containerd/fixes/1-pids/v2.3.end",
		"containerd/fixes/2-socket/v1.7.patch",
		"containerd/fixes/2-socket/v2.4.patch",
	} {
		write(t, filepath.Join(patches, p), "")
	}
	g := generator{patchesDir: patches}
	for _, tc := range []struct {
		version string
		want    []string
		wantErr string
	}{
		{version: "v1.6.36", want: []string{"1-pids/v1.6.patch"}},
		{version: "v1.7.36", want: []string{"1-pids/v1.7.patch", "2-socket/v1.7.patch"}},
		{version: "v2.2.10", wantErr: "no fix of " + filepath.Join(patches, "containerd", "fixes") + " applies to v2.2.10"},
		{version: "v2.4.2", want: []string{"2-socket/v2.4.patch"}},
		{version: "v1.5.18", wantErr: "no fix of"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			got, err := g.fixPatches(runtimebuild.Component{Name: "containerd", Version: tc.version})
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			var names []string
			for _, v := range got {
				rel, err := filepath.Rel(filepath.Join(patches, "containerd", "fixes"), v.path)
				assert.NilError(t, err)
				names = append(names, rel)
			}
			assert.DeepEqual(t, names, tc.want)
		})
	}
}

// TestContainerdFixes: which fix each of the project's containerds
// carries. Fix 1 (containerd#13790) ends where upstream released it, 2.3;
// fix 2 has no upstream fix and serves every 2.x minor with one variant.
func TestContainerdFixes(t *testing.T) {
	g := generator{patchesDir: filepath.Join("..", "..", runtimebuild.PatchesDir)}
	fixes := filepath.Join(g.patchesDir, "containerd", "fixes")
	for version, want := range map[string][]string{
		"v1.7.36": {"1-shim-leaked-only-without-pids/v1.7.patch", "2-keep-live-shim-group-socket/v1.7.patch"},
		"v2.0.14": {"1-shim-leaked-only-without-pids/v2.0.patch", "2-keep-live-shim-group-socket/v2.0.patch"},
		"v2.1.9":  {"1-shim-leaked-only-without-pids/v2.0.patch", "2-keep-live-shim-group-socket/v2.0.patch"},
		"v2.2.10": {"1-shim-leaked-only-without-pids/v2.2.patch", "2-keep-live-shim-group-socket/v2.0.patch"},
		"v2.3.7":  {"2-keep-live-shim-group-socket/v2.0.patch"},
		"v2.4.2":  {"2-keep-live-shim-group-socket/v2.0.patch"},
	} {
		got, err := g.fixPatches(runtimebuild.Component{Name: "containerd", Version: version})
		assert.NilError(t, err)
		var names []string
		for _, v := range got {
			rel, err := filepath.Rel(fixes, v.path)
			assert.NilError(t, err)
			names = append(names, filepath.ToSlash(rel))
		}
		assert.Check(t, is.DeepEqual(names, want), version)
	}
}

func TestLoadFixesRejects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   []string
		dirs    []string
		wantErr string
	}{
		{name: "stray file in a fix", files: []string{"1-pids/1.7.patch"}, wantErr: "1.7.patch is not a variant"},
		{name: "stray file in the set", files: []string{"README.md"}, wantErr: "README.md is not a fix directory"},
		{name: "fix without variant", dirs: []string{"1-pids"}, wantErr: "has no variant"},
		{name: "empty set", wantErr: "holds no fix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				write(t, filepath.Join(dir, f), "x")
			}
			for _, d := range tc.dirs {
				assert.NilError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
			}
			_, err := loadFixes(dir)
			assert.Check(t, is.ErrorContains(err, tc.wantErr))
		})
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	assert.NilError(t, os.WriteFile(path, []byte(data), 0o644))
}
