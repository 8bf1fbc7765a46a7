package mounts

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestUnderCleansTheDir(t *testing.T) {
	mountinfo := strings.Join([]string{
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
		"100 22 0:50 / /var/lib/x rw shared:2 - tmpfs tmpfs rw",
		"101 100 0:51 / /var/lib/x/containerd/state/t/rootfs rw shared:3 - overlay overlay rw",
		"102 22 0:52 / /var/lib/xy rw shared:4 - tmpfs tmpfs rw",
		`103 100 0:53 / /var/lib/x/with\040space rw shared:5 - tmpfs tmpfs rw`,
	}, "\n")
	want := []string{"/var/lib/x/containerd/state/t/rootfs", "/var/lib/x/with space", "/var/lib/x"}
	for _, dir := range []string{"/var/lib/x", "/var/lib/x/", "/var/lib//x", "/var/lib/y/../x"} {
		got, err := Under(strings.NewReader(mountinfo), dir)
		assert.NilError(t, err)
		assert.DeepEqual(t, got, want)
	}
}
