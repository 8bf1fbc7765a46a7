package roll

import (
	"context"
)

// rollback puts the node back as it was before the roll, under the state
// rolling-back: the record on the newer kubelet
// (so the older patched kubelet keeps what it created), the kubelet's
// configuration and the manifests kubeadm rewrote, stage2 with a kubelet
// restart (so the previous kubelet starts on its own configuration), then
// stage1; the marker of a failed gate; the verdict rolled-back. Each
// action is idempotent: a Job killed in the middle leaves rolling-back,
// and the next one does it again.
// The marker is written before the verdict, so that a Job killed between
// the two cannot leave a rolled-back node without its marker.
func (r *run) rollback(why string) []action {
	return []action{
		r.saveAction("state: rolling-back", func(s *State) { s.Phase, s.Reason = PhaseRollingBack, why }),
		{"rollback: kubernetes-select status", func(ctx context.Context) error {
			r.log("rolling back to %s (%s)", r.previous, why)
			return r.selectStatus(ctx)
		}},
		{"rollback: record on the newer kubelet", func(ctx context.Context) error {
			if r.sel.stage2 == r.previous {
				return nil
			}
			if res := r.onHostLogged(ctx, "kubelet-compat", "record", "--kubeconfig", r.cfg.NodeKubeconfig); !res.OK() {
				if aborted(ctx, res.Err) {
					return ctx.Err()
				}
				r.log("warning: kubelet-compat record before the rollback failed: the way back restarts what upstream restarts")
			}
			return nil
		}},
		r.restoreKubeletConfig(),
		r.restoreManifests(),
		// stage2 first: kubernetes-select refuses a stage1 older than stage2.
		{"rollback: stage2", func(ctx context.Context) error {
			if r.sel.stage2 == r.previous {
				return nil
			}
			r.log("rollback: kubernetes-select --restart-kubelet stage2 %s", r.previous)
			if res := r.onHostLogged(ctx, "kubernetes-select", "--restart-kubelet", "stage2", r.previous); !res.OK() {
				return dief("the rollback failed: kubernetes-select --restart-kubelet stage2 %s failed (the next Job tries again)", r.previous)
			}
			return nil
		}},
		{"rollback: stage1", func(ctx context.Context) error {
			if r.sel.stage1 == r.prevStage1 {
				return nil
			}
			r.log("rollback: kubernetes-select stage1 %s", r.prevStage1)
			if res := r.onHostLogged(ctx, "kubernetes-select", "stage1", r.prevStage1); !res.OK() {
				return dief("the rollback failed: kubernetes-select stage1 %s failed (the next Job tries again)", r.prevStage1)
			}
			return nil
		}},
		r.gateFailedMark(why, "the health gate failed"),
		r.saveAction("state: rolled-back", func(s *State) { s.Phase, s.RolledBackAt = PhaseRolledBack, r.stamp() }),
		{"rollback: done", func(context.Context) error {
			if r.st.RuntimePassedAt != "" {
				rt, _ := runtimeVersion(r.st.Runtime)
				r.log("rollback: containerd %s of this roll's runtime step (its gate passed) stays selected, under kubelet %s (each step is gated and rolled back alone); runtime-select --restart-containerd containerd %s on the node puts it back",
					rt, r.previous, r.st.RuntimePrevious)
			}
			if r.st.Kubeadm == "apply" {
				r.log("rollback: not rolled back: what kubeadm upgrade apply changed in the cluster (kubeadm-config, kube-proxy, CoreDNS, RBAC) and the certificates it renewed; kubeadm's own backups stay in /etc/kubernetes/tmp")
			}
			r.log("rolled back: stage2 and stage1 serve %s and %s, the kubelet's configuration and the static pods' manifests are as before the roll; the target's packages stay installed side by side",
				r.previous, r.prevStage1)
			return nil
		}},
	}
}

// gateFailedMark writes the marker of a failed gate (the e2e and
// operators look for it; a node with it and no state refuses the roll)
// when the rollback's reason is gateFailed.
func (r *run) gateFailedMark(why, gateFailed string) action {
	return action{"rollback: the marker of a failed gate", func(context.Context) error {
		if why != gateFailed {
			return nil
		}
		if err := r.files.MkdirAll(StagingDir); err != nil {
			return dief("writing %s: %v", gateFailedMarker(r.target), err)
		}
		if err := put(r.files, gateFailedMarker(r.target), []byte(r.stamp()+"\n")); err != nil {
			return dief("writing %s: %v", gateFailedMarker(r.target), err)
		}
		return nil
	}}
}
