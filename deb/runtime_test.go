package deb

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// buildRuntimeDebs builds the runtime set's .debs of the fake make runtime
// output (packagingtest.FakeRuntime).
func buildRuntimeDebs(t *testing.T) map[string]string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "runtime")
	packagingtest.FakeRuntime(t, in)
	_, debs := buildDebs(t, Config{Options: packaging.Options{Set: layout.SetRuntime, InputDir: in, Versions: packagingtest.RuntimeComponents}})
	return byName(t, debs)
}

// TestRuntimeDebs: the runtime set's .debs hold the description's files
// with its modes, name their upstream, depend on runtime-unversioned, and
// each component's version has the removal guard as prerm and no other
// script; runtime-unversioned has none.
func TestRuntimeDebs(t *testing.T) {
	requireTools(t, "dpkg-deb")
	pkgs := buildRuntimeDebs(t)
	var names []string
	for n := range pkgs {
		names = append(names, n)
	}
	assert.Check(t, is.Len(names, 6), "%v", names)
	c := debContents(t, pkgs["runtime-containerd-1.7.35"])
	for p, mode := range map[string]os.FileMode{
		"/usr/local/runtime/containerd/1.7.35/bin/containerd":              0o755,
		"/usr/local/runtime/containerd/1.7.35/bin/containerd-shim-runc-v2": 0o755,
		"/usr/local/runtime/containerd/1.7.35/bin/ctr":                     0o755,
		"/usr/share/doc/runtime-containerd-1.7.35/copyright":               0o644,
	} {
		assert.Check(t, is.Equal(c[p].mode, mode), p)
		assert.Check(t, is.Equal(c[p].owner, "root:root 0:0"), p)
	}
	assert.Check(t, is.Contains(string(c["/usr/local/runtime/containerd/1.7.35/bin/containerd"].content), "fake containerd 1.7.35"))
	assert.Check(t, is.Contains(string(c["/usr/share/doc/runtime-containerd-1.7.35/copyright"].content), "Upstream-Name: containerd\n"))
	_, debianOwned := c["/usr/bin/containerd"]
	assert.Check(t, !debianOwned, "Debian's /usr/bin/containerd is the containerd package's")
	assert.Check(t, is.Equal(control(t, pkgs["runtime-containerd-1.7.35"], "Depends"), "runtime-unversioned"))
	assert.Check(t, is.Equal(control(t, pkgs["runtime-runc-1.5.3"], "Depends"), "runtime-unversioned, libseccomp2 (>= 2.5.0), libc6 (>= 2.34)"))
	assert.Check(t, is.Equal(control(t, pkgs["runtime-crictl-1.34.0"], "Provides"), "runtime-crictl (= 1.34.0-1)"))
	assert.Check(t, is.Equal(control(t, pkgs["runtime-cni-1.10.0"], "Homepage"), "https://github.com/containernetworking/plugins"))
	u := debContents(t, pkgs[layout.RuntimeUnversionedName])
	assert.Check(t, is.Equal(u["/usr/bin/runtime-select"].mode, os.FileMode(0o755)))
	assert.Check(t, is.Equal(u["/usr/bin/crictl"].target, "../local/runtime/current/crictl/bin/crictl"))
	assert.Check(t, is.Equal(u["/usr/local/runtime/current"].typ, "dir"))
	for name, deb := range pkgs {
		for _, s := range []string{"preinst", "postinst", "postrm"} {
			assert.Check(t, is.Equal(maintainerScript(t, deb, s), ""), "%s has a %s", name, s)
		}
		prerm := maintainerScript(t, deb, "prerm")
		assert.Check(t, is.Equal(prerm != "", name != layout.RuntimeUnversionedName), "%s prerm", name)
	}
}

// TestRuntimePrerm unpacks the runtime .debs into one tree, selects
// containerd 1.7.35 with the packaged runtime-select and runs the
// packages' prerm as dpkg would, under dash and busybox sh: "prerm remove"
// of the selected version is refused in one line, its upgrade and the
// removal of another version are not; once containerd goes back to the
// system's, its removal goes on and makes it unselectable.
func TestRuntimePrerm(t *testing.T) {
	requireTools(t, "dpkg-deb", "flock")
	pkgs := buildRuntimeDebs(t)
	var debs []string
	for _, d := range pkgs {
		debs = append(debs, d)
	}
	inRuntimeRoot := func(root, script string) string {
		return strings.ReplaceAll(script, layout.RuntimeRoot+"/", filepath.Join(root, layout.RuntimeRoot)+"/")
	}
	for _, shell := range [][]string{{"dash"}, {"busybox", "sh"}} {
		t.Run(shell[0], func(t *testing.T) {
			requireTools(t, shell[0])
			root := t.TempDir()
			extract(t, root, debs)
			sel := filepath.Join(root, "usr/bin/runtime-select")
			for _, args := range [][]string{{"containerd", "1.7.35"}, {"crictl", "1.34.0"}} {
				r := runResult(t, nil, sel, append([]string{"--root", root}, args...)...)
				assert.Assert(t, is.Equal(r.Code, 0), "runtime-select %v: %s", args, r.Stderr)
			}
			out := run(t, filepath.Join(root, "usr/bin/crictl"))
			assert.Check(t, is.Contains(out, "fake crictl 1.34.0"), "/usr/bin/crictl follows the selection")
			prerm := func(pkg, arg string) result {
				script := maintainerScript(t, pkgs[pkg], "prerm")
				assert.Assert(t, script != "", "%s has no prerm", pkg)
				return runResult(t, nil, shell[0], append(shell[1:], "-c", inRuntimeRoot(root, script), "prerm", arg)...)
			}
			for _, tc := range []struct {
				pkg, arg string
				refused  bool
			}{
				{"runtime-containerd-1.7.35", "remove", true},
				{"runtime-containerd-1.7.35", "upgrade", false},
				{"runtime-crictl-1.34.0", "remove", true},
				{"runtime-containerd-2.4.2", "remove", false},
				{"runtime-runc-1.5.3", "remove", false},
			} {
				r := prerm(tc.pkg, tc.arg)
				assert.Check(t, is.Equal(r.Code != 0, tc.refused), "%s prerm %s: exit %d, %q", tc.pkg, tc.arg, r.Code, r.Stderr)
				if tc.refused {
					assert.Check(t, is.Contains(r.Stderr, "it is the selected"))
					assert.Check(t, is.Contains(r.Stderr, "select another version first (runtime-select "))
					assert.Check(t, is.Equal(strings.Count(strings.TrimSpace(r.Stderr), "\n"), 0))
				}
			}
			// The removed 2.4.2 is no longer selectable.
			r := runResult(t, nil, sel, "--root", root, "containerd", "2.4.2")
			assert.Check(t, is.Equal(r.Code, 1))
			assert.Check(t, is.Contains(r.Stderr, "containerd 2.4.2 is not installed"))
			// Back to Debian's containerd: now 1.7.35 may go.
			r = runResult(t, nil, sel, "--root", root, "containerd", "system")
			assert.Assert(t, is.Equal(r.Code, 0), r.Stderr)
			_, err := os.Stat(filepath.Join(root, "etc/systemd/system/containerd.service.d/50-runtime-select.conf"))
			assert.Check(t, os.IsNotExist(err), "the drop-in is gone with the selection")
			r = prerm("runtime-containerd-1.7.35", "remove")
			assert.Check(t, is.Equal(r.Code, 0), r.Stderr)
		})
	}
}

// TestPatchedRuntimeDeb: this project's patched build of a release is
// named by its build metadata in the package's name, version and paths,
// so it installs beside the release it patches; lintian accepts the name.
func TestPatchedRuntimeDeb(t *testing.T) {
	requireTools(t, "dpkg-deb", "lintian")
	in := filepath.Join(t.TempDir(), "runtime")
	packagingtest.FakeRuntime(t, in, "containerd@1.7.35", "containerd@1.7.36+compat.1")
	_, debs := buildDebs(t, Config{Options: packaging.Options{Set: layout.SetRuntime, InputDir: in, Versions: []string{"containerd@1.7.35", "containerd@1.7.36+compat.1"}}})
	var files []string
	for _, d := range debs {
		files = append(files, filepath.Base(d))
	}
	assert.Check(t, is.Contains(files, "runtime-containerd-1.7.36+compat.1_1.7.36+compat.1-1_amd64.deb"))
	assert.Check(t, is.Contains(files, "runtime-containerd-1.7.35_1.7.35-1_amd64.deb"))
	pkgs := byName(t, debs)
	deb := pkgs["runtime-containerd-1.7.36+compat.1"]
	assert.Check(t, is.Equal(control(t, deb, "Version"), "1.7.36+compat.1-1"))
	assert.Check(t, is.Equal(control(t, deb, "Provides"), "runtime-containerd (= 1.7.36+compat.1-1)"))
	c := debContents(t, deb)
	assert.Check(t, is.Contains(string(c["/usr/local/runtime/containerd/1.7.36+compat.1/bin/containerd"].content), "fake containerd 1.7.36+compat.1"))
	assert.Check(t, is.Contains(maintainerScript(t, deb, "prerm"), "refusing to erase containerd 1.7.36+compat.1: it is the selected containerd"))
	out, err := exec.Command("lintian", "--fail-on", "error,warning", deb).CombinedOutput()
	assert.Check(t, err, "lintian:\n%s", out)
}
