package iptables

import (
	"context"
	"strings"
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

// During the run the kubelet adds its KUBE-* chains and the rules that
// jump to them; someone else adds a chain, a rule to it and a plain rule,
// and a KUBE-* chain that existed before gets a new rule. Only the
// kubelet's new chains, their rules and the rules that jump to them are
// the run's.
var (
	othersBefore = []string{"-P INPUT ACCEPT", "-P OUTPUT ACCEPT", "-N DOCKER", "-N KUBE-EXISTING", "-A INPUT -j DOCKER", "-A KUBE-EXISTING -j RETURN"}
	othersNow    = []string{"-P INPUT ACCEPT", "-P OUTPUT ACCEPT", "-N DOCKER", "-N KUBE-EXISTING", "-N KUBE-FIREWALL", "-N KUBE-KUBELET-CANARY", "-N OTHER", "-N CNI-abc",
		"-A INPUT -j DOCKER", "-A INPUT -j KUBE-FIREWALL", "-A INPUT -j OTHER", "-A INPUT -s 192.0.2.1/32 -j ACCEPT",
		"-A OUTPUT -j KUBE-FIREWALL", "-A OUTPUT -g CNI-abc",
		"-A KUBE-EXISTING -j RETURN", "-A KUBE-EXISTING -s 192.0.2.2/32 -j DROP",
		`-A KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping marked packets" -m mark --mark 0x8000/0x8000 -j DROP`,
		"-A OTHER -j RETURN", "-A CNI-abc -j KUBE-EXISTING"}
)

func TestPlanOnlyOurs(t *testing.T) {
	rules, chains := Plan(othersBefore, othersNow)
	assert.DeepEqual(t, chains, []string{"CNI-abc", "KUBE-FIREWALL", "KUBE-KUBELET-CANARY"})
	assert.DeepEqual(t, rules, []string{
		"CNI-abc -j KUBE-EXISTING",
		`KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping marked packets" -m mark --mark 0x8000/0x8000 -j DROP`,
		"OUTPUT -g CNI-abc",
		"OUTPUT -j KUBE-FIREWALL",
		"INPUT -j KUBE-FIREWALL",
	})
}

// fakeTables answers `-S` from a script and records every other command.
type fakeTables struct {
	now  map[string][]string
	cmds []string
}

func (f *fakeTables) run(_ context.Context, bin string, args ...string) ([]byte, error) {
	if len(args) == 5 && args[4] == "-S" {
		return []byte(strings.Join(f.now[args[3]], "\n") + "\n"), nil
	}
	f.cmds = append(f.cmds, bin+" "+strings.Join(args, " "))
	return nil, nil
}

func TestRestoreOnlyOurs(t *testing.T) {
	f := &fakeTables{now: map[string][]string{"filter": othersNow, "nat": {"-P PREROUTING ACCEPT", "-N MINE"}, "mangle": {"-P PREROUTING ACCEPT"}}}
	before := Rules{"filter": othersBefore, "nat": {"-P PREROUTING ACCEPT"}, "mangle": {"-P PREROUTING ACCEPT"}}
	assert.NilError(t, Restore(context.Background(), f.run, "iptables", before))
	assert.DeepEqual(t, f.cmds, []string{
		"iptables -w 5 -t filter -D CNI-abc -j KUBE-EXISTING",
		"iptables -w 5 -t filter -D KUBE-FIREWALL -m comment --comment kubernetes firewall for dropping marked packets -m mark --mark 0x8000/0x8000 -j DROP",
		"iptables -w 5 -t filter -D OUTPUT -g CNI-abc",
		"iptables -w 5 -t filter -D OUTPUT -j KUBE-FIREWALL",
		"iptables -w 5 -t filter -D INPUT -j KUBE-FIREWALL",
		"iptables -w 5 -t filter -X CNI-abc",
		"iptables -w 5 -t filter -X KUBE-FIREWALL",
		"iptables -w 5 -t filter -X KUBE-KUBELET-CANARY",
	})
	for _, c := range f.cmds {
		assert.Assert(t, !strings.Contains(c, " -F"), "flushes: %s", c)
	}
}
