// Package sim measures the controller's side of a fleet roll without the
// fleet: system-upgrade-controller (SUC) and our Plans against kwok nodes
// on a real etcd, kube-apiserver, kube-controller-manager (the Job
// controller) and kube-scheduler, every Job's pod completed (or failed) by
// a kwok Stage after the per-node duration measured on kind. See
// deploy/system-upgrade/README.md, "How far it scales".
package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Options are one invocation of the simulation: one fresh cluster per
// concurrency.
type Options struct {
	// Nodes is the fleet's size: one control-plane node and Nodes-1 workers.
	Nodes int
	// Concurrency is the workers Plan's concurrency of each run.
	Concurrency []Concurrency
	// JobSeconds is a worker's Job at real duration (kind: about 45 s).
	JobSeconds float64
	// ControlPlaneSeconds is the control-plane node's Job at real duration
	// (kind: 219 and 241 s, `kubeadm upgrade apply`).
	ControlPlaneSeconds float64
	// Scale divides both durations in the simulation (10: 45 s -> 4.5 s).
	Scale float64
	// Fail is how many workers' Jobs end Failed (the gate failing).
	Fail int
	// Stall is how long without a node upgraded or failed counts as the
	// roll stopped (0: derived from the scaled durations).
	Stall time.Duration
	// Version is the Plans' target version.
	Version string
}

// Concurrency is one run's workers concurrency, as asked ("5%") and as
// nodes.
type Concurrency struct {
	Asked string
	N     int64
}

// Workers is the number of worker nodes.
func (o Options) Workers() int { return o.Nodes - 1 }

// ParseConcurrency reads a comma-separated list of concurrencies, each a
// number of nodes ("10") or a percentage of the fleet's nodes ("1%",
// rounded up, at least 1).
func ParseConcurrency(list string, nodes int) ([]Concurrency, error) {
	if strings.TrimSpace(list) == "" {
		return nil, fmt.Errorf("concurrency: empty list, want e.g. 1%%,5%%,10%%")
	}
	var out []Concurrency
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		c := Concurrency{Asked: f}
		if pct, ok := strings.CutSuffix(f, "%"); ok {
			p, err := strconv.ParseFloat(pct, 64)
			if err != nil || p <= 0 || p > 100 || math.IsNaN(p) {
				return nil, fmt.Errorf("concurrency %q: want a percentage in (0, 100]", f)
			}
			c.N = int64(math.Ceil(p * float64(nodes) / 100))
		} else {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("concurrency %q: want a positive number of nodes or a percentage", f)
			}
			c.N = n
		}
		if c.N < 1 {
			c.N = 1
		}
		out = append(out, c)
	}
	return out, nil
}

// Validate says what is wrong with o, in one line.
func (o Options) Validate() error {
	switch {
	case o.Nodes < 2:
		return fmt.Errorf("nodes %d: want at least 2 (one control plane, one worker)", o.Nodes)
	case len(o.Concurrency) == 0:
		return fmt.Errorf("no concurrency given")
	case o.JobSeconds <= 0 || o.ControlPlaneSeconds <= 0:
		return fmt.Errorf("job seconds %g, control-plane seconds %g: want both above 0", o.JobSeconds, o.ControlPlaneSeconds)
	case o.Scale < 1:
		return fmt.Errorf("scale %g: want at least 1 (durations are divided by it)", o.Scale)
	case o.Fail < 0 || o.Fail > o.Workers():
		return fmt.Errorf("fail %d: want 0 to %d (the workers)", o.Fail, o.Workers())
	case o.Stall < 0:
		return fmt.Errorf("stall %s: want 0 (derived) or more", o.Stall)
	}
	for _, c := range o.Concurrency {
		if c.N > int64(o.Workers()) {
			return fmt.Errorf("concurrency %s (%d nodes): more than the %d workers", c.Asked, c.N, o.Workers())
		}
	}
	return nil
}

// ScaledJob and ScaledControlPlane are the Jobs' durations in the
// simulation.
func (o Options) ScaledJob() time.Duration { return seconds(o.JobSeconds / o.Scale) }

// ScaledControlPlane is the control-plane Job's duration in the simulation.
func (o Options) ScaledControlPlane() time.Duration {
	return seconds(o.ControlPlaneSeconds / o.Scale)
}

// StallAfter is how long without progress ends a run: Options.Stall, else
// five scaled worker Jobs and at least a minute.
func (o Options) StallAfter() time.Duration {
	if o.Stall > 0 {
		return o.Stall
	}
	return max(5*o.ScaledJob(), time.Minute)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// NodeName is the name of node i: i 0 is the control plane.
func NodeName(i int) string {
	if i == 0 {
		return "kwok-control-plane"
	}
	return fmt.Sprintf("kwok-worker-%04d", i)
}

// FailNodes are the n workers (of workers, named 1..workers) whose Jobs
// fail: spread evenly over the names (SUC picks nodes in an order of its
// own, a hash of the node's and the Plan's UIDs, so where they fall in the
// roll is measured, not chosen).
func FailNodes(n, workers int) []string {
	var out []string
	for k := 1; k <= n && n <= workers; k++ {
		out = append(out, NodeName(k*(workers+1)/(n+1)))
	}
	return out
}
