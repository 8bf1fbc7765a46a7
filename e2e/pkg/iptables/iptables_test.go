package iptables

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestPlanKubelet(t *testing.T) {
	before := []string{"-P INPUT ACCEPT", "-N DOCKER", "-A INPUT -j DOCKER"}
	now := []string{"-P INPUT ACCEPT", "-N DOCKER", "-N KUBE-FIREWALL", "-N KUBE-KUBELET-CANARY", "-A INPUT -j DOCKER",
		"-A INPUT -j KUBE-FIREWALL", `-A KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping marked packets" -j DROP`}
	rules, chains := Plan(before, now)
	assert.DeepEqual(t, chains, []string{"KUBE-FIREWALL", "KUBE-KUBELET-CANARY"})
	assert.DeepEqual(t, rules, []string{`KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping marked packets" -j DROP`, "INPUT -j KUBE-FIREWALL"})
	assert.DeepEqual(t, SplitRule(rules[0]), []string{"KUBE-FIREWALL", "-m", "comment", "--comment", "kubernetes firewall for dropping marked packets", "-j", "DROP"})
}
