package local

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestAdded(t *testing.T) {
	before := []string{"-P INPUT ACCEPT", "-N DOCKER", "-A INPUT -j DOCKER"}
	now := []string{"-P INPUT ACCEPT", "-N DOCKER", "-N KUBE-FIREWALL", "-N KUBE-KUBELET-CANARY", "-A INPUT -j DOCKER",
		"-A INPUT -j KUBE-FIREWALL", `-A KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping marked packets" -j DROP`}
	rules, chains := Added(before, now)
	assert.DeepEqual(t, chains, []string{"KUBE-FIREWALL", "KUBE-KUBELET-CANARY"})
	assert.DeepEqual(t, rules, []string{`KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping marked packets" -j DROP`, "INPUT -j KUBE-FIREWALL"})
	assert.DeepEqual(t, splitRule(rules[0]), []string{"KUBE-FIREWALL", "-m", "comment", "--comment", "kubernetes firewall for dropping marked packets", "-j", "DROP"})
}

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
