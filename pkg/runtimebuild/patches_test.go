package runtimebuild

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// onePatch is a series that changes hello.txt as the tree below has it.
const onePatch = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: kubelet-compat <kubelet-compat@users.noreply.github.com>
Date: Mon, 7 Dec 2026 00:00:00 +0000
Subject: [PATCH] hello: say it twice

---
 hello.txt | 1 +
 1 file changed, 1 insertion(+)

diff --git a/hello.txt b/hello.txt
--- a/hello.txt
+++ b/hello.txt
@@ -1,3 +1,4 @@
 one
 hello
+hello
 three
`

// fakeSeries writes a series directory <patches>/fake/v1 listing order,
// with those of patches that it has.
func fakeSeries(t *testing.T, patches map[string]string, order ...string) (patchesDir string, c Component) {
	t.Helper()
	patchesDir = t.TempDir()
	dir := filepath.Join(patchesDir, "fake", "v1")
	assert.NilError(t, os.MkdirAll(dir, 0o755))
	list := "# comment\n"
	for _, n := range order {
		list += n + "\n"
		if body, ok := patches[n]; ok {
			assert.NilError(t, os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644))
		}
	}
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "series"), []byte(list), 0o644))
	c = patched(Component{Name: "fake", Module: "example.com/fake", Version: "v1.0.0", Sum: "h1:x"}, "compat.1", "fake/v1")
	return patchesDir, c
}

func tree(t *testing.T, hello string) string {
	t.Helper()
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte(hello), 0o644))
	return dir
}

func TestApplySeries(t *testing.T) {
	for _, tc := range []struct {
		name, hello, want, wantErr string
	}{
		{name: "applies", hello: "one\nhello\nthree\n", want: "one\nhello\nhello\nthree\n"},
		{name: "no fuzz", hello: "zero\nhello\nthree\n", wantErr: "0001-hello.patch does not apply to example.com/fake@v1.0.0 (h1:x)"},
		{name: "not twice", hello: "one\nhello\nhello\nthree\n", wantErr: "0001-hello.patch does not apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patchesDir, c := fakeSeries(t, map[string]string{"0001-hello.patch": onePatch}, "0001-hello.patch")
			dir := tree(t, tc.hello)
			got, err := ApplySeries(context.Background(), patchesDir, c, dir)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			assert.Check(t, is.Len(got, 1))
			assert.Check(t, is.Equal(got[0].Name, "0001-hello.patch"))
			data, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
			assert.NilError(t, err)
			assert.Check(t, is.Equal(string(data), tc.want))
			assert.Check(t, is.Len(mustGlob(t, filepath.Join(dir, "*.orig")), 0))
		})
	}
}

func TestSeries(t *testing.T) {
	patchesDir, c := fakeSeries(t, map[string]string{"0001-hello.patch": onePatch}, "0001-hello.patch")
	got, err := Series(patchesDir, c)
	assert.NilError(t, err)
	// sha256 of onePatch, so that a changed series rebuilds a cached build.
	assert.DeepEqual(t, got, []Patch{{Name: "0001-hello.patch", SHA256: "3895130ac6d6d9395f4e5ef99f08f76af845ed9cbc2f18be36be4706098bab1c"}})

	stock := Component{Name: "fake", Version: "v1.0.0"}
	got, err = Series(patchesDir, stock)
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 0))

	empty, c := fakeSeries(t, nil)
	_, err = Series(empty, c)
	assert.ErrorContains(t, err, "fake@1.0.0+compat.1's patch series "+filepath.Join(empty, "fake", "v1", "series")+" lists no patch")

	_, err = Series(t.TempDir(), c)
	assert.ErrorContains(t, err, "fake@1.0.0+compat.1's patch series: open ")

	missing, c := fakeSeries(t, map[string]string{}, "0001-gone.patch")
	_, err = Series(missing, c)
	assert.ErrorContains(t, err, "0001-gone.patch: no such file or directory")
}

func TestSamePatches(t *testing.T) {
	a := []Patch{{Name: "0001-a.patch", SHA256: "1"}}
	assert.Check(t, SamePatches(nil, nil))
	assert.Check(t, SamePatches(a, []Patch{{Name: "0001-a.patch", SHA256: "1"}}))
	assert.Check(t, !SamePatches(a, nil))
	assert.Check(t, !SamePatches(a, []Patch{{Name: "0001-a.patch", SHA256: "2"}}))
}

// TestCopyTree: the module cache's copy is read-only; the copy to patch
// must not be.
func TestCopyTree(t *testing.T) {
	src := t.TempDir()
	assert.NilError(t, os.MkdirAll(filepath.Join(src, "a", "b"), 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(src, "a", "b", "f.go"), []byte("package b\n"), 0o444))
	assert.NilError(t, os.Chmod(filepath.Join(src, "a", "b"), 0o555))
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "a", "b"), 0o755) })

	dst := filepath.Join(t.TempDir(), "module")
	assert.NilError(t, copyTree(src, dst))
	data, err := os.ReadFile(filepath.Join(dst, "a", "b", "f.go"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(data), "package b\n"))
	fi, err := os.Stat(filepath.Join(dst, "a", "b", "f.go"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(fi.Mode().Perm(), os.FileMode(0o644)))
	assert.NilError(t, os.WriteFile(filepath.Join(dst, "a", "b", "new.go"), nil, 0o644))

	assert.Check(t, copyTree(src, dst) != nil, "copied over an existing copy")
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	assert.NilError(t, err)
	return m
}
