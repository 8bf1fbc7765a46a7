package local

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestContainerdConfig(t *testing.T) {
	cfg := ContainerdConfig(Paths{Root: "/var/lib/x"}, "kubelet-compat.local/e2e/pause:1", "/usr/lib/cni", true)
	for _, want := range []string{
		`address = "/var/lib/x/containerd/containerd.sock"`,
		`sandbox_image = "kubelet-compat.local/e2e/pause:1"`,
		`restrict_oom_score_adj = true`,
		`conf_dir = "/var/lib/x/cni/net.d"`,
		`SystemdCgroup = false`,
		`netns_mounts_under_state_dir = true`,
		`Root = "/var/lib/x/containerd/runc"`,
		`path = "/var/lib/x/containerd/opt"`,
	} {
		assert.Assert(t, strings.Contains(cfg, want), "config lacks %q:\n%s", want, cfg)
	}
}

func TestCNIConfList(t *testing.T) {
	s, err := CNIConfList(DefaultNetwork, "/x/ipam")
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(s, `"subnet": "10.217.77.0/24"`))
	assert.Assert(t, strings.Contains(s, `"ipMasq": false`))
}
