package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimebuild"
	"github.com/kubelet-compat/kubelet-compat/pkg/series"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// The identity and date git records for the replay; the patches keep their
// mails' authors and dates, so regenerating gives the same bytes.
const (
	committerName  = "kubelet-compat"
	committerEmail = "kubelet-compat@users.noreply.github.com"
	committerDate  = "2026-12-07T00:00:00Z"
)

type generator struct {
	// patchesDir is runtimebuild.PatchesDir: the fix sets and the series.
	patchesDir string
	// source returns the directory of c's module source as the proxy
	// serves it at c.Sum (runtimebuild's download), and says so on log.
	source func(ctx context.Context, c runtimebuild.Component) (string, error)
}

func (g generator) seriesDir(c runtimebuild.Component) string {
	return filepath.Join(g.patchesDir, c.Patches)
}

// fixPatches returns the variants of c's fix set that apply to its
// release, in order.
func (g generator) fixPatches(c runtimebuild.Component) ([]variant, error) {
	v, err := versions.ParseRelease(c.Version)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(g.patchesDir, c.Name, fixesDir)
	fixes, err := loadFixes(dir)
	if err != nil {
		return nil, err
	}
	var out []variant
	for _, f := range fixes {
		if fv, ok := f.variantFor(v.Major, v.Minor); ok {
			out = append(out, fv)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fix of %s applies to %s", dir, c.Version)
	}
	return out, nil
}

// fixFailure is a fix whose variant does not apply to the module's source.
type fixFailure struct {
	variant string
	err     error
}

// fixesError lists every fix of a series that does not apply: the fix
// needs a new variant (runtime/patches/README.md).
type fixesError struct {
	c      runtimebuild.Component
	failed []fixFailure
}

func (e *fixesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d fix(es) do not apply to %s@%s: write a variant v<major>.<minor>.patch for each (runtime/patches/README.md)", len(e.failed), e.c.Module, e.c.Version)
	for _, f := range e.failed {
		fmt.Fprintf(&b, "\n  %s: %v", f.variant, f.err)
	}
	return b.String()
}

// render replays c's fixes with git am in a scratch repository holding
// the pristine files they touch, and returns the series as git
// format-patch exports it, by file name, and the patches' names in order.
func (g generator) render(ctx context.Context, c runtimebuild.Component) (map[string][]byte, []string, error) {
	fixes, err := g.fixPatches(c)
	if err != nil {
		return nil, nil, err
	}
	pristine, err := g.source(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	repo, err := os.MkdirTemp("", "runtimepatchgen-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(repo)
	git := gitIn(repo)
	if err := git(ctx, "init", "-q"); err != nil {
		return nil, nil, err
	}
	var paths []string
	for _, f := range fixes {
		abs, err := filepath.Abs(f.path)
		if err != nil {
			return nil, nil, err
		}
		paths = append(paths, abs)
	}
	touched, err := series.TouchedFiles(paths)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range touched {
		if err := copyFile(filepath.Join(pristine, f), filepath.Join(repo, f)); err != nil && !os.IsNotExist(err) {
			return nil, nil, fmt.Errorf("pristine %s: %w", f, err)
		}
	}
	if err := git(ctx, "add", "-A"); err != nil {
		return nil, nil, err
	}
	if err := git(ctx, "commit", "-q", "--allow-empty", "-m", "pristine "+c.Module+" "+c.Version); err != nil {
		return nil, nil, err
	}
	var failed []fixFailure
	for i, p := range paths {
		if err := git(ctx, "am", "-q", "--keep-cr", p); err != nil {
			failed = append(failed, fixFailure{variant: fixes[i].path, err: err})
			if err := git(ctx, "am", "--abort"); err != nil {
				return nil, nil, err
			}
		}
	}
	if len(failed) > 0 {
		return nil, nil, &fixesError{c: c, failed: failed}
	}
	out := filepath.Join(repo, ".out")
	if err := git(ctx, "format-patch", "-q", "--no-signature", "--zero-commit", "--full-index", "-o", out, fmt.Sprintf("HEAD~%d", len(paths))); err != nil {
		return nil, nil, err
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return nil, nil, err
	}
	patches := map[string][]byte{}
	var names []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			return nil, nil, err
		}
		patches[e.Name()] = data
		names = append(names, e.Name())
	}
	sort.Strings(names)
	patches[series.File] = []byte(seriesHeader(c) + strings.Join(names, "\n") + "\n")
	return patches, names, nil
}

// seriesHeader names the source the series applies to.
func seriesHeader(c runtimebuild.Component) string {
	return fmt.Sprintf("# %s: apply in order with `git am`, `git apply` or `patch -p1` to the source of\n# %s %s (%s) as the Go module proxy serves it.\n# Generated by hack/update-runtime-patches from %s; do not edit.\n",
		c, c.Module, c.Version, c.Sum, filepath.ToSlash(filepath.Join(runtimebuild.PatchesDir, c.Name, fixesDir)))
}

// update rewrites c's series directory from render's output.
func (g generator) update(ctx context.Context, c runtimebuild.Component) ([]string, error) {
	patches, names, err := g.render(ctx, c)
	if err != nil {
		return nil, err
	}
	dir := g.seriesDir(c)
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	for name, data := range patches {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	old := dir + ".old"
	if err := os.RemoveAll(old); err != nil {
		return nil, err
	}
	if err := os.Rename(dir, old); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if rerr := os.Rename(old, dir); rerr != nil && !os.IsNotExist(rerr) {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return names, os.RemoveAll(old)
}

type staleError struct{ msg string }

func (e *staleError) Error() string { return e.msg }

// verify fails with a staleError when c's series differs from what update
// would write, and with another error when it does not apply to the whole
// module source as the build applies it (runtimebuild.PatchTree).
func (g generator) verify(ctx context.Context, c runtimebuild.Component) error {
	want, _, err := g.render(ctx, c)
	if err != nil {
		return err
	}
	dir := g.seriesDir(c)
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return &staleError{fmt.Sprintf("%s is missing", dir)}
	}
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, e := range entries {
		have[e.Name()] = true
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if w, ok := want[e.Name()]; !ok {
			return &staleError{fmt.Sprintf("%s/%s is not part of the generated series", dir, e.Name())}
		} else if !bytes.Equal(w, data) {
			return &staleError{fmt.Sprintf("%s/%s is stale", dir, e.Name())}
		}
	}
	for name := range want {
		if !have[name] {
			return &staleError{fmt.Sprintf("%s/%s is missing", dir, name)}
		}
	}
	pristine, err := g.source(ctx, c)
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "runtimepatchgen-apply-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	_, err = runtimebuild.PatchTree(ctx, pristine, g.patchesDir, c, filepath.Join(scratch, "module"))
	return err
}

// strays are the series directories of the components' fix sets that no
// component applies: a left-over series is stale.
func (g generator) strays(comps []runtimebuild.Component) ([]string, error) {
	used := map[string]bool{}
	names := map[string]bool{}
	for _, c := range comps {
		used[filepath.Clean(g.seriesDir(c))] = true
		names[c.Name] = true
	}
	var out []string
	for name := range names {
		found, err := filepath.Glob(filepath.Join(g.patchesDir, name, "v*"))
		if err != nil {
			return nil, err
		}
		for _, f := range found {
			if !used[filepath.Clean(f)] {
				out = append(out, f)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func gitIn(repo string) func(ctx context.Context, args ...string) error {
	return func(ctx context.Context, args ...string) error {
		base := []string{
			"-c", "user.name=" + committerName,
			"-c", "user.email=" + committerEmail,
			"-c", "core.autocrlf=false",
			"-c", "commit.gpgsign=false",
			"-c", "format.signature=",
			"-c", "diff.noprefix=false",
			"-c", "diff.renames=true",
		}
		cmd := &exec.Cmd{Name: "git", Args: append(base, args...), Dir: repo, Env: []string{
			"GIT_COMMITTER_NAME=" + committerName,
			"GIT_COMMITTER_EMAIL=" + committerEmail,
			"GIT_COMMITTER_DATE=" + committerDate,
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"TZ=UTC",
		}}
		return cmd.Run(ctx)
	}
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
