package runtimebuild

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/filehash"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
	"github.com/kubelet-compat/kubelet-compat/pkg/series"
)

// PatchesDir holds the runtime's patch series, relative to the
// repository's root: <PatchesDir>/<Component.Patches>/series and the
// patches it lists, which hack/update-runtime-patches writes from the fix
// set in <PatchesDir>/<name>/fixes (runtime/patches/README.md).
const PatchesDir = "runtime/patches"

// patchedModuleDir is where, in a patched component's scratch main module,
// the patched copy of its module's source is, which go.mod's replace
// directive names.
const patchedModuleDir = "module"

// Patch is one patch of a component's series, as a build applied it.
type Patch struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// Series reads c's patch series in patchesDir: the patches its series file
// lists, in order, with their sha256. A component without patches has none.
func Series(patchesDir string, c Component) ([]Patch, error) {
	if c.Patches == "" {
		return nil, nil
	}
	dir := filepath.Join(patchesDir, c.Patches)
	names, err := series.Read(dir)
	if err != nil {
		return nil, fmt.Errorf("%s's patch series: %w", c, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s's patch series %s lists no patch", c, filepath.Join(dir, series.File))
	}
	out := make([]Patch, 0, len(names))
	for _, n := range names {
		sum, err := filehash.SHA256(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("%s's patch series: %w", c, err)
		}
		out = append(out, Patch{Name: n, SHA256: sum})
	}
	return out, nil
}

// SamePatches tells whether two builds applied the same series.
func SamePatches(a, b []Patch) bool { return slices.Equal(a, b) }

// PatchedSource writes into dst (which must not exist) c's module source as
// the proxy serves it at c.Sum, with c's series applied; it returns the
// series. This is what a build compiles and what hack/verify-runtime-patches
// checks the series against.
func PatchedSource(ctx context.Context, cacheDir, patchesDir string, c Component, dst string) ([]Patch, error) {
	m, err := modfetch.Download(ctx, cacheDir, c.Module, c.Version, c.Sum)
	if err != nil {
		return nil, err
	}
	return PatchTree(ctx, m.Dir, patchesDir, c, dst)
}

// PatchTree writes into dst (which must not exist) a copy of pristine, c's
// module source, with c's series applied; it returns the series.
func PatchTree(ctx context.Context, pristine, patchesDir string, c Component, dst string) ([]Patch, error) {
	if err := copyTree(pristine, dst); err != nil {
		return nil, fmt.Errorf("copying %s@%s: %w", c.Module, c.Version, err)
	}
	return ApplySeries(ctx, patchesDir, c, dst)
}

// ApplySeries applies c's series to tree, a copy of its module's source,
// with `patch -p1` as distribution builds do, and without fuzz: the series
// is generated against this very source.
func ApplySeries(ctx context.Context, patchesDir string, c Component, tree string) ([]Patch, error) {
	patches, err := Series(patchesDir, c)
	if err != nil {
		return nil, err
	}
	for _, p := range patches {
		abs, err := filepath.Abs(filepath.Join(patchesDir, c.Patches, p.Name))
		if err != nil {
			return nil, err
		}
		cmd := &exec.Cmd{Name: "patch", Args: []string{"-p1", "--forward", "--batch", "--fuzz=0", "--no-backup-if-mismatch", "-i", abs}, Dir: tree}
		if _, err := cmd.Output(ctx); err != nil {
			return nil, fmt.Errorf("%s does not apply to %s@%s (%s): %w", p.Name, c.Module, c.Version, c.Sum, err)
		}
	}
	return patches, nil
}

// copyTree copies the regular files and directories under src to dst,
// writable (the module cache's copy is read-only); a module zip holds
// nothing else.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyRegular(path, target)
		}
		return fmt.Errorf("%s is neither a file nor a directory", path)
	})
}

func copyRegular(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
