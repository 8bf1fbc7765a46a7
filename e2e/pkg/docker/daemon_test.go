package docker

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestDaemonArgs(t *testing.T) {
	p := Paths{Root: "/var/lib/kc/docker"}
	stock := strings.Join(DaemonArgs(p, "/cache/docker", ""), " ")
	// Nothing of the host's network configuration changes.
	for _, want := range []string{"--iptables=false", "--ip-forward=false", "--ip-masq=false", "--bridge=kce2edock0",
		"--data-root=/cache/docker", "--exec-root=/var/lib/kc/docker/exec", "--host=unix:///var/lib/kc/docker/docker.sock",
		"--containerd=/var/lib/kc/docker/containerd/containerd.sock", "--config-file=/var/lib/kc/docker/daemon.json", "--cgroup-parent=kc-e2e-docker"} {
		assert.Check(t, is.Contains(stock, want))
	}
	assert.Check(t, !strings.Contains(stock, "--bridge=none"), "dockerd deletes docker0 with --bridge=none")
	// With every capability nothing is wrapped.
	assert.Check(t, !strings.Contains(stock, "runtime"), stock)

	wrapped := strings.Join(DaemonArgs(p, "/cache/docker", "/x/e2e-oci-runtime"), " ")
	assert.Check(t, is.Contains(wrapped, "--add-runtime=kc-e2e=/x/e2e-oci-runtime --default-runtime=kc-e2e"))
}

func TestConfigsStayUnderTheRoot(t *testing.T) {
	p := Paths{Root: "/var/lib/kc/docker"}
	assert.Check(t, is.Contains(DaemonConfig(p), `"deprecated-key-path": "/var/lib/kc/docker/key.json"`))
	c := ContainerdConfig(p)
	for _, want := range []string{`root = "/var/lib/kc/docker/containerd/root"`, `state = "/var/lib/kc/docker/containerd/state"`,
		`address = "/var/lib/kc/docker/containerd/containerd.sock"`, `path = "/var/lib/kc/docker/opt"`, `"io.containerd.grpc.v1.cri"`} {
		assert.Check(t, is.Contains(c, want))
	}
}

// TestMakeBridgeTagsIt: the private dockerd's default bridge gets the
// run's ifalias right after `ip link add` (the kernel ignores an alias
// given to `ip link add`), before its address and up.
func TestMakeBridgeTagsIt(t *testing.T) {
	tests := []struct {
		name, alias string
		want        []string
	}{
		{"tagged", "kubelet-compat-e2e run 0123456789abcdef root /r", []string{
			"link add kce2edock0 type bridge", "link set dev kce2edock0 alias kubelet-compat-e2e run 0123456789abcdef root /r",
			"addr add 10.217.79.1/24 dev kce2edock0", "link set kce2edock0 up"}},
		{"no tag (a journal without a run ID)", "", []string{
			"link add kce2edock0 type bridge", "addr add 10.217.79.1/24 dev kce2edock0", "link set kce2edock0 up"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			ip := func(_ context.Context, args ...string) error { got = append(got, strings.Join(args, " ")); return nil }
			assert.NilError(t, makeBridge(context.Background(), func(string) bool { return false }, ip, tt.alias))
			assert.DeepEqual(t, got, tt.want)
		})
	}
	var ran []string
	err := makeBridge(context.Background(), func(string) bool { return true }, func(_ context.Context, args ...string) error {
		ran = append(ran, strings.Join(args, " "))
		return nil
	}, "x")
	assert.ErrorContains(t, err, "kce2edock0 exists already")
	assert.Equal(t, len(ran), 0)
}
