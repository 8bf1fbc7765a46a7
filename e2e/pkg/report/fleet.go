package report

import (
	"fmt"
	"io"
	"strings"
)

// FleetRoll is one roll of a whole cluster (make e2e E2E=fleet): ours
// (system-upgrade-controller's Plans running kc-roll, no drain) or the
// drain-based anchor (cordon, kubectl drain, swap, uncordon), per node and
// in total.
type FleetRoll struct {
	// Name says which roll: "suc concurrency 1", "drain", "suc fault".
	Name    string `json:"name"`
	Cluster string `json:"cluster"`
	Step    string `json:"step"`
	Variant string `json:"variant"`
	// Order is the nodes in the order the roll took them.
	Order []string    `json:"order"`
	Nodes []FleetNode `json:"nodes"`
	// Total: the whole roll (restarts, evictions summed; the single
	// replica's unavailable seconds and the endpoint removals over the
	// roll's whole span, so overlapping node windows count once).
	Total FleetNode `json:"total"`
	// APIBackgroundPerSecond is the API server's requests per second in
	// the quiet time before the roll (controllers, kubelets, the e2e's
	// watchers): the roll's own load is APIRequests above it.
	APIBackgroundPerSecond float64 `json:"apiBackgroundPerSecond"`
}

// FleetNode is what one node's upgrade cost the workloads (namespace
// kc-e2e): from the container runtime (restarts, recreated sandboxes,
// kube-system apart), the API (pods deleted/evicted and created, pod UIDs
// changed) and the readiness watchers (the single-replica Deployment's
// time without a ready endpoint, the Services' endpoint removals), in the
// node's window.
type FleetNode struct {
	Node string `json:"node"`
	// Outcome: "upgraded", "rolled back", "untouched", "failed".
	Outcome string `json:"outcome,omitempty"`
	// Restarts counts the workloads' containers restarted in place (pods
	// evicted are counted apart); Recreated their sandboxes recreated.
	Restarts  int `json:"restarts"`
	Recreated int `json:"recreated"`
	// SystemRestarts: kube-system's (kubeadm upgrade apply and its
	// rollouts, kube-proxy, the control plane's static pods), reported.
	SystemRestarts int `json:"systemRestarts"`
	// Evicted counts the workloads' pods deleted from the node in its
	// window (kubectl drain's evictions); Rescheduled the pods created
	// in its window to replace them.
	Evicted     int `json:"evicted"`
	Rescheduled int `json:"rescheduled"`
	// UIDsChanged counts the workloads' pods that, by name, run under
	// another UID in the API or are gone.
	UIDsChanged int `json:"uidsChanged"`
	// SoloUnavailableSeconds: the single-replica Deployment without a
	// ready endpoint.
	SoloUnavailableSeconds float64 `json:"soloUnavailableSeconds"`
	// EndpointRemovals: ready endpoints of the Services that went not
	// ready or away.
	EndpointRemovals int     `json:"endpointRemovals"`
	Seconds          float64 `json:"seconds"`
	// APIRequests: kube-apiserver's apiserver_request_total over the
	// window (every client's, the background included).
	APIRequests int    `json:"apiRequests"`
	Detail      string `json:"detail,omitempty"`
}

// fleetTable renders every roll's nodes and total, one table.
func (r *Report) fleetTable(w io.Writer) {
	if len(r.Fleet) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| roll | node | outcome | containers restarted | pods recreated | pods evicted | pods rescheduled | pod UIDs changed | single replica unavailable (s) | endpoint removals | kube-system restarts | seconds | API requests |\n")
	fmt.Fprintf(w, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	row := func(roll string, n FleetNode) {
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d | %d | %d | %.1f | %d | %d | %.0f | %d |\n", roll, n.Node, n.Outcome,
			n.Restarts, n.Recreated, n.Evicted, n.Rescheduled, n.UIDsChanged, n.SoloUnavailableSeconds, n.EndpointRemovals, n.SystemRestarts, n.Seconds, n.APIRequests)
	}
	for _, f := range r.Fleet {
		name := f.Name
		if len(f.Order) > 0 {
			name += " (order: " + strings.Join(f.Order, " ") + ")"
		}
		for _, n := range f.Nodes {
			row(name, n)
		}
		total := f.Total
		total.Node = "**total**"
		row(f.Name, total)
	}
	for _, f := range r.Fleet {
		fmt.Fprintf(w, "\n%s: the API server's background before the roll %.1f requests/s.", f.Name, f.APIBackgroundPerSecond)
	}
	fmt.Fprintln(w)
}
