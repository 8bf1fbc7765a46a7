package rpm

import (
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// TestRuntimeRPMs: the runtime set's RPMs, from the same templates as the
// Kubernetes ones: per component and version one package with its files
// under /usr/local/runtime/<component>/<version>, requiring
// runtime-unversioned, with the removal guard as %preun; runtime-unversioned
// noarch, with runtime-select, current/ and the /usr/bin/crictl link, and no
// scriptlet.
func TestRuntimeRPMs(t *testing.T) {
	requireRPMTools(t)
	in := filepath.Join(t.TempDir(), "runtime")
	packagingtest.FakeRuntime(t, in, "containerd@1.7.35", "runc@1.5.3")
	_, built := buildRPMs(t, []string{"containerd@1.7.35", "runc@1.5.3"}, Config{Options: packaging.Options{Set: layout.SetRuntime, InputDir: in}})
	var names []string
	for _, p := range built {
		names = append(names, filepath.Base(p))
	}
	assert.Check(t, is.DeepEqual(names, []string{
		"runtime-unversioned-1.0.0-3.kc.noarch.rpm",
		"runtime-containerd-1.7.35-1.7.35-1.kc.x86_64.rpm",
		"runtime-runc-1.5.3-1.5.3-1.kc.x86_64.rpm",
	}))
	query := func(rpm string, args ...string) string {
		return run(t, "rpm", append([]string{"-qp", "--nosignature"}, append(args, rpm)...)...)
	}
	containerd := built[1]
	files := query(containerd, "--queryformat", `[%{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILENAMES}\n]`)
	assert.Check(t, is.Equal(files, `drwxr-xr-x root:root /usr/local/runtime/containerd/1.7.35
drwxr-xr-x root:root /usr/local/runtime/containerd/1.7.35/bin
-rwxr-xr-x root:root /usr/local/runtime/containerd/1.7.35/bin/containerd
-rwxr-xr-x root:root /usr/local/runtime/containerd/1.7.35/bin/containerd-shim-runc-v2
-rwxr-xr-x root:root /usr/local/runtime/containerd/1.7.35/bin/ctr
`))
	requires := query(containerd, "--requires")
	assert.Check(t, is.Contains(requires, "runtime-unversioned\n"))
	assert.Check(t, is.Contains(query(built[2], "--requires"), "libseccomp\n"))
	assert.Check(t, is.Contains(query(containerd, "--provides"), "runtime-containerd = 1.7.35-1.kc\n"))
	scripts := query(containerd, "--scripts")
	assert.Check(t, is.Contains(scripts, "preuninstall scriptlet"))
	assert.Check(t, is.Contains(scripts, "this=$(stat -c %d:%i /usr/local/runtime/containerd/1.7.35 2>/dev/null)"))
	assert.Check(t, is.Contains(scripts, "refusing to erase containerd 1.7.35: it is the selected containerd"))
	u := built[0]
	assert.Check(t, is.Equal(strings.TrimSpace(query(u, "--scripts")), ""), "runtime-unversioned has no scriptlet")
	ufiles := query(u, "--queryformat", `[%{FILEMODES:perms} %{FILENAMES} %{FILELINKTOS}\n]`)
	for _, want := range []string{
		"-rwxr-xr-x /usr/bin/runtime-select \n",
		"lrwxrwxrwx /usr/bin/crictl ../local/runtime/current/crictl/bin/crictl\n",
		"drwxr-xr-x /usr/local/runtime/current \n",
	} {
		assert.Check(t, is.Contains(ufiles, want))
	}
}

// TestPatchedRuntimeRPM: this project's patched build of a release is
// named by its build metadata in the package's name, version and paths,
// so it installs beside the release it patches.
func TestPatchedRuntimeRPM(t *testing.T) {
	requireRPMTools(t)
	in := filepath.Join(t.TempDir(), "runtime")
	packagingtest.FakeRuntime(t, in, "containerd@1.7.36+compat.1")
	_, built := buildRPMs(t, []string{"containerd@1.7.36+compat.1"}, Config{Options: packaging.Options{Set: layout.SetRuntime, InputDir: in}})
	var names []string
	for _, p := range built {
		names = append(names, filepath.Base(p))
	}
	assert.Check(t, is.DeepEqual(names, []string{
		"runtime-unversioned-1.0.0-3.kc.noarch.rpm",
		"runtime-containerd-1.7.36+compat.1-1.7.36+compat.1-1.kc.x86_64.rpm",
	}))
	query := func(args ...string) string {
		return run(t, "rpm", append([]string{"-qp", "--nosignature"}, append(args, built[1])...)...)
	}
	assert.Check(t, is.Contains(query("--queryformat", `[%{FILENAMES}\n]`), "/usr/local/runtime/containerd/1.7.36+compat.1/bin/containerd\n"))
	assert.Check(t, is.Contains(query("--provides"), "runtime-containerd = 1.7.36+compat.1-1.kc\n"))
	assert.Check(t, is.Contains(query("--scripts"), "refusing to erase containerd 1.7.36+compat.1: it is the selected containerd"))
}
