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

func TestMountsUnderCleansTheDir(t *testing.T) {
	mountinfo := strings.Join([]string{
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
		"100 22 0:50 / /var/lib/x rw shared:2 - tmpfs tmpfs rw",
		"101 100 0:51 / /var/lib/x/containerd/state/t/rootfs rw shared:3 - overlay overlay rw",
		"102 22 0:52 / /var/lib/xy rw shared:4 - tmpfs tmpfs rw",
		`103 100 0:53 / /var/lib/x/with\040space rw shared:5 - tmpfs tmpfs rw`,
	}, "\n")
	want := []string{"/var/lib/x/containerd/state/t/rootfs", "/var/lib/x/with space", "/var/lib/x"}
	for _, dir := range []string{"/var/lib/x", "/var/lib/x/", "/var/lib//x", "/var/lib/y/../x"} {
		got, err := mountsUnder(strings.NewReader(mountinfo), dir)
		assert.NilError(t, err)
		assert.DeepEqual(t, got, want)
	}
}
