package rootdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestClaimRefuses(t *testing.T) {
	tmp := t.TempDir()
	wd, err := os.Getwd()
	assert.NilError(t, err)
	assert.NilError(t, os.Chdir(tmp))
	defer func() { assert.NilError(t, os.Chdir(wd)) }()
	foreign := filepath.Join(tmp, "foreign")
	assert.NilError(t, os.MkdirAll(foreign, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(foreign, "precious"), []byte("x"), 0o644))
	file := filepath.Join(tmp, "a-file")
	assert.NilError(t, os.WriteFile(file, nil, 0o644))
	link := filepath.Join(tmp, "link-to-var-lib")
	assert.NilError(t, os.Symlink("/var/lib", link))
	for _, p := range []string{"", "/", "//", "/var", "/var/", "/var/lib", "/var/lib/", "//var//lib//", "/var/lib/../lib",
		"/var/tmp/..", "/usr", "/usr/local", "/etc", "/home", "/root", "/tmp", "/run", "/var/run", "/var/log", "/opt", "/srv",
		"/sys/fs/cgroup", "/proc/self", "/dev/shm", "/boot", "/bin", "/sbin", "/lib", "/mnt", "/media",
		"relative/dir", foreign, foreign + "/", file, link, link + "/sub/.."} {
		if filepath.IsAbs(p) && !strings.HasPrefix(p, tmp) {
			if _, err := os.Lstat(p); err != nil {
				continue // never create a system directory, whatever Claim does
			}
		}
		got, err := Claim(p)
		assert.Check(t, err != nil, "Claim(%q) = %q, want an error", p, got)
	}
	_, err = os.Stat(filepath.Join(foreign, "precious"))
	assert.NilError(t, err)
	_, err = os.Stat(filepath.Join(tmp, "relative"))
	assert.Assert(t, os.IsNotExist(err), "a relative -root was created")
}

func TestClaimAccepts(t *testing.T) {
	tmp := t.TempDir()
	empty := filepath.Join(tmp, "empty")
	assert.NilError(t, os.Mkdir(empty, 0o755))
	marked := filepath.Join(tmp, "marked")
	assert.NilError(t, os.Mkdir(marked, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(marked, Marker), []byte(markerText), 0o644))
	assert.NilError(t, os.WriteFile(filepath.Join(marked, "left-over"), nil, 0o644))
	tests := []struct{ in, want string }{
		{filepath.Join(tmp, "new") + "/", filepath.Join(tmp, "new")},
		{empty + "//", empty},
		{filepath.Join(tmp, "x", "..", "marked"), marked},
	}
	for _, tt := range tests {
		got, err := Claim(tt.in)
		assert.Check(t, err, "Claim(%q)", tt.in)
		assert.Check(t, got == tt.want, "Claim(%q) = %q, want %q", tt.in, got, tt.want)
		_, err = os.Stat(filepath.Join(tt.want, Marker))
		assert.Check(t, err, "no marker in %s", tt.want)
		assert.Check(t, Owned(tt.want))
	}
	assert.Assert(t, Owned(tmp) != nil, "a directory without the marker is not ours")
}

func TestLock(t *testing.T) {
	root, err := Claim(filepath.Join(t.TempDir(), "root"))
	assert.NilError(t, err)
	release, err := Lock(root)
	assert.NilError(t, err)
	_, err = Lock(root)
	assert.Assert(t, errors.Is(err, ErrBusy), "%v", err)
	release()
	release2, err := Lock(root)
	assert.NilError(t, err)
	release2()
}
