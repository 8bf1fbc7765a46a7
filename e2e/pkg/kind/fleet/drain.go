package fleet

// The anchor: the drain-based roll operators use today, as kubeadm's
// upgrade guide gives it, node by node, control plane first: install the
// target's packages, kubeadm (upgrade apply on the control-plane node,
// upgrade node on the others), cordon and `kubectl drain` (the eviction
// API: the PodDisruptionBudget holds), the kubelet as released swapped in,
// wait for the node, uncordon, and the workloads Ready again before the
// next node.

import (
	"context"
	"fmt"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/node"
)

// drainArgs is kubectl drain as operators run it: DaemonSets stay
// (their controller would put them back at once), emptyDir data may go,
// and the PDBs are honoured (evictions, retried while refused).
func drainArgs(n string) []string {
	return []string{"kubectl", "--kubeconfig", adminConf, "drain", n, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=15m"}
}

func (f *fleetRun) drainRoll(ctx context.Context) error {
	st := f.Steps[0]
	f.Step = st
	f.data.rollStart = time.Now()
	defer func() { f.data.rollEnd = time.Now() }()
	for i, n := range f.Cluster.Nodes {
		start := time.Now()
		if err := f.stageDebs(ctx, n, st.To); err != nil {
			return err
		}
		if i == 0 {
			// kubernetes-select stage1, kubeadm upgrade apply, the rollouts
			// of kube-proxy and CoreDNS (the scenario's, with its check).
			if err := f.UpgradeControlPlane(ctx, st.To); err != nil {
				return err
			}
		} else if err := f.kubeadmUpgradeNode(ctx, n, st.To); err != nil {
			return err
		}
		if _, err := f.ExecLogged(ctx, f.Cluster.ControlPlane(), "drain-"+n.Name(), drainArgs(n.Name())...); err != nil {
			return err
		}
		swapped := time.Now()
		if err := n.SwapKubelet(ctx, node.Kubelet{Version: st.To, Patched: false}); err != nil {
			return err
		}
		if err := f.waitKubelet(ctx, n, st.To, false, swapped, 4*time.Minute); err != nil {
			return err
		}
		if i == 0 {
			// The released kubelet recreates kubeadm's static pods under
			// new UIDs (1.31): the API server is down until its new pod
			// serves, and uncordon needs it (a kind run failed there,
			// "connection refused").
			if err := f.WaitControlPlane(ctx); err != nil {
				return fmt.Errorf("after %s: %w", n.Name(), err)
			}
		}
		if _, err := f.ExecLogged(ctx, f.Cluster.ControlPlane(), "uncordon-"+n.Name(), "kubectl", "--kubeconfig", adminConf, "uncordon", n.Name()); err != nil {
			return err
		}
		end := time.Now()
		f.data.windows = append(f.data.windows, nodeWindow{Node: n.Name(), Start: start, End: end, Outcome: outcomeUpgraded})
		f.order = append(f.order, n.Name())
		f.Logf("%s: drained, swapped and uncordoned in %.0fs", n.Name(), end.Sub(start).Seconds())
		// As operators do: the workloads whole again before the next node.
		if _, err := f.Cluster.WaitPodsReady(ctx, 10*time.Minute, fleetPods(len(f.Cluster.Nodes), len(f.Statics.Pods), false), kind.Namespace); err != nil {
			return fmt.Errorf("after %s: %w", n.Name(), err)
		}
		if i == 0 {
			if err := f.WaitControlPlane(ctx); err != nil {
				return fmt.Errorf("after %s: %w", n.Name(), err)
			}
		}
	}
	return nil
}

// kubeadmUpgradeNode is a worker's kubeadm step: stage1, kubeadm upgrade
// node.
func (f *fleetRun) kubeadmUpgradeNode(ctx context.Context, n *kind.Node, version string) error {
	if _, err := f.ExecLogged(ctx, n, "select-stage1-"+version, "kubernetes-select", "stage1", version); err != nil {
		return err
	}
	args := append([]string{"kubeadm", "upgrade", "node", "--v=1"}, kind.CgroupV1PreflightArgs(version)...)
	_, err := f.ExecLogged(ctx, n, "kubeadm-upgrade-node-"+version, args...)
	return err
}

// stageDebs installs version's packages as released (unpatched) next to
// the running version with dpkg, as an operator does before the node's
// turn (the images were imported before the roll).
func (f *fleetRun) stageDebs(ctx context.Context, n *kind.Node, version string) error {
	return f.InstallDebs(ctx, n, "unpatched", version)
}
