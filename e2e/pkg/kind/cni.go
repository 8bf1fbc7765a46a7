package kind

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CNINetwork is the name of the e2e's pod network on every node.
const CNINetwork = "kc-e2e"

// CNIConfList is a node's pod network: Debian's bridge and host-local
// plugins on the node's podCIDR (masquerading what leaves the node, so
// pods reach the API server's service address whatever routes exist).
func CNIConfList(podCIDR string) (string, error) {
	conf := map[string]interface{}{
		"cniVersion": "0.4.0",
		"name":       CNINetwork,
		"plugins": []interface{}{
			map[string]interface{}{
				"type": "bridge", "bridge": "kce2e0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
				"ipam": map[string]interface{}{
					"type":   "host-local",
					"ranges": [][]map[string]string{{{"subnet": podCIDR}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	return string(b), err
}

// nodeNetwork is what the CNI needs of a node.
type nodeNetwork struct{ name, podCIDR, ip string }

// InstallCNI writes each node's pod network and routes to the other
// nodes' pod subnets (what kind's kindnetd does), once the controller
// manager has given every node a podCIDR.
func (c *Cluster) InstallCNI(ctx context.Context) error {
	nets, err := c.waitPodCIDRs(ctx, 2*time.Minute)
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		var own nodeNetwork
		for _, nn := range nets {
			if nn.name == n.name {
				own = nn
			}
		}
		if own.podCIDR == "" {
			return fmt.Errorf("node %s is not in the API", n.name)
		}
		conf, err := CNIConfList(own.podCIDR)
		if err != nil {
			return err
		}
		if err := n.WriteFile(ctx, "/etc/cni/net.d/10-kc-e2e.conflist", []byte(conf), 0o644); err != nil {
			return err
		}
		for _, other := range nets {
			if other.name == n.name {
				continue
			}
			if _, err := n.Exec(ctx, nil, "ip", "route", "replace", other.podCIDR, "via", other.ip); err != nil {
				return fmt.Errorf("%s: route to %s via %s: %w", n.name, other.podCIDR, other.ip, err)
			}
		}
	}
	return nil
}

func (c *Cluster) waitPodCIDRs(ctx context.Context, timeout time.Duration) ([]nodeNetwork, error) {
	deadline := time.Now().Add(timeout)
	for {
		nets, missing, err := c.podCIDRs(ctx)
		if err == nil && missing == 0 && len(nets) == len(c.Nodes) {
			return nets, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("nodes without podCIDR or address after %s (%d of %d; %v)", timeout, missing, len(c.Nodes), err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func (c *Cluster) podCIDRs(ctx context.Context) ([]nodeNetwork, int, error) {
	list, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	var out []nodeNetwork
	missing := 0
	for _, n := range list.Items {
		nn := nodeNetwork{name: n.Name, podCIDR: n.Spec.PodCIDR}
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				nn.ip = a.Address
			}
		}
		if nn.podCIDR == "" || nn.ip == "" {
			missing++
		}
		out = append(out, nn)
	}
	return out, missing, nil
}
