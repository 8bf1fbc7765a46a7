package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestDebianVersion(t *testing.T) {
	const debian = "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3\n"
	assert.Equal(t, DebianVersion(debian), "1.6.20")
	assert.Equal(t, DebianVersion("containerd github.com/containerd/containerd/v2 v2.4.2 h1:x"), "2.4.2")
	assert.Equal(t, DebianVersion("containerd"), "")
	assert.Assert(t, DebianVersionIs(debian, "1.6.20"))
	assert.Assert(t, !DebianVersionIs(debian, "1.6.2"))
	assert.Assert(t, !DebianVersionIs(debian, "1.7.35"))
}

func touch(t *testing.T, path string) {
	t.Helper()
	assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	assert.NilError(t, os.WriteFile(path, nil, 0o755))
}

// A build of make runtime brings the newest runc and CNI plugins built
// beside it; without them, Debian's.
func TestFindRuntimeBuilt(t *testing.T) {
	out := t.TempDir()
	touch(t, filepath.Join(out, "containerd-1.7.35", "containerd"))
	d, err := FindRuntime(context.Background(), out, "1.7.35")
	assert.NilError(t, err)
	assert.Equal(t, d, RuntimeDist{Version: "1.7.35", Containerd: filepath.Join(out, "containerd-1.7.35", "containerd"),
		BinDir: filepath.Join(out, "containerd-1.7.35"), CNIBinDir: "/usr/lib/cni"})
	assert.Assert(t, d.env()[0] == "PATH="+filepath.Join(out, "containerd-1.7.35")+":"+os.Getenv("PATH"))

	touch(t, filepath.Join(out, "runc-1.5.3", "runc"))
	touch(t, filepath.Join(out, "runc-1.10.0", "runc"))
	touch(t, filepath.Join(out, "runc-1.9.0", "README")) // not a build
	touch(t, filepath.Join(out, "cni-plugins-1.10.0", "bridge"))
	d, err = FindRuntime(context.Background(), out, "1.7.35")
	assert.NilError(t, err)
	assert.Equal(t, d.Runc, filepath.Join(out, "runc-1.10.0", "runc"))
	assert.Equal(t, d.CNIBinDir, filepath.Join(out, "cni-plugins-1.10.0"))
	assert.DeepEqual(t, d.env(), []string{"PATH=" + filepath.Join(out, "containerd-1.7.35") + ":" + filepath.Join(out, "runc-1.10.0") + ":" + os.Getenv("PATH")})
	assert.Assert(t, debianDist("1.6.20").env() == nil)
}
