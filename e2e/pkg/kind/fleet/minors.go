package fleet

// The minors roll (issue 33 section 4): one cluster born at the chain's
// first version, rolled unattended by the same Plans, one minor after the
// other (the Plans' version changed once the roll before ended, as an
// operator does), each step measured as a roll of its own. kubeadm moves
// etcd 3.6 -> 3.7 at 1.37, which a cluster born at 1.33 or earlier only
// survives through the bridge: the control plane's Plan carries the bridge
// image (KC_ETCD_BRIDGE_IMAGE) on that step, and kc-roll runs the
// product's bridge (kubelet-compat etcd-bridge) before kubeadm's.

import (
	"context"
	"fmt"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/pkg/etcdbridge"
)

// MinorsWorkers is the minors roll's worker count (with the control-plane
// node: the smallest cluster with a worker of static pods and one
// without).
const MinorsWorkers = 2

// minorsActions are the minors roll's actions: the cluster and its
// workloads once, then per step the target's images, the baseline, the
// Plans of the step's target and the roll, the state after it and its
// figures; the Job that ran across every step completes at the end.
func (f *fleetRun) minorsActions() []kind.Action {
	first := f.Steps[0]
	out := []kind.Action{
		{Name: "create the cluster on " + kind.NodeImage(first.From), Do: (*kind.ClusterRun).Create},
		{Name: "install the pod network", Do: func(r *kind.ClusterRun, ctx context.Context) error { return r.Cluster.InstallCNI(ctx) }},
		{Name: "import the workload images into every node", Do: (*kind.ClusterRun).ImportImages},
		{Name: "create the fleet's workloads and the static pods", Do: f.do(f.createWorkloads)},
		{Name: "wait until every pod is ready", Do: f.do(f.waitReady)},
	}
	for i, st := range f.Steps {
		at := func(fn func(ctx context.Context) error) func(*kind.ClusterRun, context.Context) error {
			return func(_ *kind.ClusterRun, ctx context.Context) error {
				f.step = i
				return fn(ctx)
			}
		}
		if i > 0 {
			out = append(out, kind.Action{Name: fmt.Sprintf("%s: remove the images of %s that %s no longer lists from every node (not pause)", st, f.Steps[i-1].From, st.From), Do: at(f.removeLeftBehind)})
		}
		out = append(out,
			kind.Action{Name: fmt.Sprintf("%s: import the images of %s into every node (no registry: pre-loaded, as air-gapped fleets do)", st, st.To), Do: at(f.importTargetImages)},
			kind.Action{Name: fmt.Sprintf("%s: import the upgrade Job's image of %s into every node", st, st.To), Do: at(f.importSUCImages)})
		if i == 0 {
			// The controller's image came with the first step's layout.
			out = append(out, kind.Action{Name: "apply system-upgrade-controller", Do: f.do(f.applyController)})
		}
		out = append(out,
			kind.Action{Name: fmt.Sprintf("%s: baseline: snapshots, the API's pods, the pod ledger and the readiness watchers", st), Do: at(f.baseline)},
			kind.Action{Name: fmt.Sprintf("%s: apply the Plans (%s, concurrency %d; the etcd bridge where kubeadm takes etcd to 3.7) and follow the roll", st, st.To, f.concurrency), Do: at(f.minorRoll)},
			kind.Action{Name: fmt.Sprintf("%s: after the roll: every pod ready, snapshots, the API's pods", st), Do: at(f.afterRoll)},
			kind.Action{Name: fmt.Sprintf("%s: the figures, per node and in total", st), Do: at(f.reportRoll)})
	}
	return append(out, kind.Action{Name: "the Job that ran across every step completes", Do: f.do(f.completeBatch)})
}

// minorRoll is the step's roll: the Plans of its target, with the bridge
// image when kubeadm of the target runs an etcd of 3.7 or later.
func (f *fleetRun) minorRoll(ctx context.Context) error {
	image, err := bridgeImage(ctx, f.Options.Output, f.cur().To)
	if err != nil {
		return err
	}
	f.bridgeImage = image
	if image != "" {
		f.Logf("%s: the control plane's Plan carries the etcd bridge %s (kubeadm %s moves etcd to 3.7)", f.cur(), image, f.cur().To)
	}
	// As an operator of cgroup v1 nodes must before the first kubelet of
	// 1.35 or later (which refuses cgroup v1 by default): kubeadm upgrade
	// writes kubelet-config into each node's configuration.
	set, err := f.Cluster.AllowCgroupV1(ctx, f.cur().To)
	if err != nil {
		return fmt.Errorf("kubelet-config: failCgroupV1: %w", err)
	}
	if set {
		f.Logf("%s: kubelet-config: failCgroupV1: false set before the Plans (cgroup v1 nodes)", f.cur())
	}
	return f.sucRoll(ctx)
}

// bridgeImage is the etcd bridge's image for a roll to target ("": its
// kubeadm keeps etcd below 3.7, no bridge): next to kubeadm's etcd, in the
// target's images (package nodeimage builds it there).
func bridgeImage(ctx context.Context, output, target string) (string, error) {
	want, err := nodeimage.KubeadmEtcdImage(ctx, output, target)
	if err != nil {
		return "", err
	}
	carries, err := etcdbridge.Carries(want)
	if err != nil || !carries {
		return "", err
	}
	return etcdbridge.Ref(want), nil
}

// removeLeftBehind is kind's RemoveLeftBehind between the minors: the
// images of the minor before the step's From.
func (f *fleetRun) removeLeftBehind(ctx context.Context) error {
	prev := f.Steps[f.step-1]
	return f.RemoveLeftBehind(ctx, prev.From, prev.To)
}
