package cachedir

import (
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestResolve(t *testing.T) {
	t.Setenv("HOME", "/home/builder")
	for _, tc := range []struct{ kcCache, want string }{
		{"", filepath.Join("/home/builder", ".cache", "kubelet-compat")},
		{"/srv/kc-cache", "/srv/kc-cache"},
	} {
		assert.Equal(t, Resolve(tc.kcCache), tc.want)
	}
}
