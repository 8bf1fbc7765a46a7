package roll

import (
	"context"
)

// Naive is the naive in-place roll k3s and rke2 users run today, the
// fleet e2e's anchor: the packages, stage1, kubeadm,
// the kubelet swapped and restarted; no lock, preflight, record, roll's
// state, gate or rollback. A failed step fails the Job and leaves the
// node as it is; a node whose stage2 serves the target has nothing left
// to do.
func (e *Engine) Naive(ctx context.Context) error {
	r := e.newRun(ctx)
	r.naive = true
	err := r.runNaive(ctx)
	if err != nil && aborted(ctx, err) {
		return ctx.Err()
	}
	return r.failed(ctx, err)
}

func (r *run) runNaive(ctx context.Context) error {
	if err := r.selectStatus(ctx); err != nil {
		return err
	}
	r.previous = r.sel.stage2
	if r.previous == "" {
		return dief("kubernetes-select status names no version for stage2")
	}
	if r.previous == r.target {
		r.log("stage2 serves %s already: node %s is upgraded (naive)", r.target, r.cfg.Node)
		return nil
	}
	r.log("node %s (%s): %s -> %s, naive: in place, no record, no gate, no rollback", r.cfg.Node, r.cfg.Role, r.previous, r.target)
	if err := r.do(ctx, append(r.install(), r.swapKubelet())...); err != nil {
		return err
	}
	r.log("node %s: the kubelet of %s started (naive: nothing judged)", r.cfg.Node, r.target)
	return nil
}

// WaitPlan waits until the Plan plan's status says it completed the
// target version (the workers' prepare step).
func (e *Engine) WaitPlan(ctx context.Context, plan string) error {
	r := e.newRun(ctx)
	r.log("waiting for Plan %s/%s to complete version %s", r.cfg.Namespace, plan, r.target)
	for {
		res := r.kubectl(ctx, "get", "plans.upgrade.cattle.io", plan, "-n", r.cfg.Namespace,
			"-o", `jsonpath={.status.latestVersion} {.status.conditions[?(@.type=="Complete")].status}`)
		if string(res.Stdout) == r.target+" True" {
			r.log("Plan %s/%s is complete for %s", r.cfg.Namespace, plan, r.target)
			return nil
		}
		if err := r.sleep(ctx, r.cfg.Poll.D); err != nil {
			return err
		}
	}
}
