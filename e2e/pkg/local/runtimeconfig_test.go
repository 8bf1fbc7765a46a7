package local

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
)

func testSpec(runc string) ContainerdSpec {
	return ContainerdSpec{Paths: Paths{Root: "/var/lib/x"}, SandboxImage: "kubelet-compat.local/e2e/pause:1",
		CNIBinDir: "/usr/lib/cni", RestrictOOMScoreAdj: true, RuncBinary: runc}
}

// The exact text of each version's file (go test -update writes them).
func TestContainerdSpecRender(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		spec    ContainerdSpec
		golden  string
	}{
		{"v2 Debian's runc", 2, testSpec(""), "containerd-config-v2.golden"},
		{"v2 built runc", 2, func() ContainerdSpec {
			s := testSpec("/r/runc-1.5.3/runc")
			s.CNIBinDir = "/r/cni-plugins-1.10.0"
			return s
		}(), "containerd-config-v2-runc.golden"},
		{"v3 built runc", 3, func() ContainerdSpec {
			s := testSpec("/r/runc-1.5.3/runc")
			s.CNIBinDir = "/r/cni-plugins-1.10.0"
			return s
		}(), "containerd-config-v3-runc.golden"},
		{"v3 systemd, no restriction", 3, func() ContainerdSpec {
			s := testSpec("")
			s.SystemdCgroup, s.RestrictOOMScoreAdj = true, false
			return s
		}(), "containerd-config-v3-systemd.golden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.spec.Render(tc.version)
			assert.NilError(t, err)
			golden.Assert(t, got, tc.golden)
		})
	}
}

// ContainerdConfig, what the run starts with, is Render(2) of the same
// description: the file of Debian's 1.6.20 did not change.
func TestContainerdConfigIsRenderV2(t *testing.T) {
	legacy := ContainerdConfig(Paths{Root: "/var/lib/x"}, "kubelet-compat.local/e2e/pause:1", "/usr/lib/cni", true)
	golden.Assert(t, legacy, "containerd-config-v2.golden")
}

// Every setting of the description is in both formats, under each
// version's table.
func TestContainerdSpecBothVersions(t *testing.T) {
	s := testSpec("/r/runc")
	v2, err := s.Render(2)
	assert.NilError(t, err)
	v3, err := s.Render(3)
	assert.NilError(t, err)
	for _, want := range []string{`restrict_oom_score_adj = true`, `SystemdCgroup = false`, `Root = "/var/lib/x/containerd/runc"`,
		`BinaryName = "/r/runc"`, `conf_dir = "/var/lib/x/cni/net.d"`, `netns_mounts_under_state_dir = true`, `stream_server_port = "0"`,
		`root = "/var/lib/x/containerd/root"`, `state = "/var/lib/x/containerd/state"`, `address = "/var/lib/x/containerd/containerd.sock"`,
		`path = "/var/lib/x/containerd/opt"`, `runtime_type = "io.containerd.runc.v2"`} {
		assert.Assert(t, strings.Contains(v2, want), "v2 lacks %q", want)
		assert.Assert(t, strings.Contains(v3, want), "v3 lacks %q", want)
	}
	assert.Assert(t, strings.HasPrefix(v2, "version = 2\n"))
	assert.Assert(t, strings.HasPrefix(v3, "version = 3\n"))
	assert.Assert(t, strings.Contains(v2, `sandbox_image = "kubelet-compat.local/e2e/pause:1"`))
	assert.Assert(t, strings.Contains(v3, "[plugins.\"io.containerd.cri.v1.images\".pinned_images]\n    sandbox = \"kubelet-compat.local/e2e/pause:1\""))
	assert.Assert(t, strings.Contains(v2, `bin_dir = "/usr/lib/cni"`))
	assert.Assert(t, strings.Contains(v3, `bin_dirs = ["/usr/lib/cni"]`))
	// containerd 2.0 reads only bin_dir.
	s.CNIBinDirSingle = true
	v3for20, err := s.Render(3)
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(v3for20, `    bin_dir = "/usr/lib/cni"`) && !strings.Contains(v3for20, "bin_dirs"))
	assert.Assert(t, CNIBinDirSingle("2.0.14+compat.1") && CNIBinDirSingle("v2.0.0") && !CNIBinDirSingle("2.1.9") && !CNIBinDirSingle("1.7.35"))
	// 2.x has no CRI setting left in the old table but the stream server's.
	assert.Assert(t, !strings.Contains(v3, `plugins."io.containerd.grpc.v1.cri".containerd`))
	_, err = s.Render(1)
	assert.ErrorContains(t, err, "only 2 (containerd 1.x) and 3 (2.x)")
}

func TestConfigVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  string
	}{
		{"1.6.20", 2, ""}, {"1.6.20~ds1", 2, ""}, {"v1.7.35", 2, ""}, {"2.4.2", 3, ""}, {"v2.0.0", 3, ""},
		{"3.0.0", 0, "no configuration format known for major 3"}, {"x", 0, "want MAJOR.MINOR.PATCH"}, {"2", 0, "want MAJOR.MINOR.PATCH"},
	} {
		got, err := ConfigVersion(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		assert.NilError(t, err, tc.in)
		assert.Equal(t, got, tc.want, tc.in)
	}
}
