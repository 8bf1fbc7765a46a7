package scenario

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
)

// Local is the local provider's runner of plans (plan.Runner): the host is the
// node, the kubelets run on it one after the other.
type Local struct {
	// Options are what the local node adds to a plan; Run replaces their
	// Plan with the one it is given.
	Options Options
}

var _ plan.Runner = (*Local)(nil)

// Name is "local".
func (l *Local) Name() string { return "local" }

// Check refuses rollback steps in the admission and device modes (their
// expectations are an upgrade's); API mode runs them with the API server
// kept at the newer version, as upstream rolls back a kubelet alone.
// RecordAfterSwap is for static pods (its born pods are static pods).
func (l *Local) Check(p plan.Plan) error {
	if plan.HasRollback(p.Steps) && (l.Options.Admission || l.Options.Devices) {
		return errors.New(plan.RollbackLocalOnly)
	}
	if p.RecordAfterSwap && l.Options.API {
		return errors.New(plan.RecordAfterSwapLocalOnly)
	}
	if len(p.RuntimeMoves) > 0 {
		return plan.ErrRoadKindOnly
	}
	if len(p.RuntimeSteps) > 0 {
		if l.Options.API || l.Options.Admission || l.Options.Devices || len(p.Steps) > 0 {
			return errors.New("runtime steps run with static pods alone: not in API mode, not with kubelet steps")
		}
		if len(p.ShimFaults) > 0 && (p.RuntimeChain || p.RuntimeOrder.From != "") {
			return errors.New("shim faults restart each runtime from a baseline of its own: not with a runtime chain or order")
		}
		if p.RuntimeChain {
			if err := plan.CheckRuntimeChain(p.RuntimeSteps); err != nil {
				return err
			}
		}
		if p.RuntimeOrder.From != "" {
			return plan.CheckRuntimeOrder(p.RuntimeOrder, p.RuntimeSteps)
		}
		return plan.CheckRuntimeKubelet(p.RuntimeKubelet, p.RuntimeSteps)
	}
	return nil
}

// Versions are the kubelets the plan swaps (package plan).
func (l *Local) Versions(p plan.Plan) (patched, unpatched []string, err error) {
	if p.RuntimeOrder.From != "" {
		patched, unpatched = plan.OrderVersions(p.RuntimeOrder, p.Controls)
		return patched, unpatched, nil
	}
	if len(p.ShimFaults) > 0 {
		// The runtimes are what the faults compare: the kubelet is the
		// patched one alone.
		return []string{p.RuntimeKubelet}, nil, nil
	}
	if len(p.RuntimeSteps) > 0 {
		patched, unpatched = plan.RuntimeVersions(p.RuntimeKubelet, p.Controls)
		return patched, unpatched, nil
	}
	patched, unpatched = plan.Versions(p.Steps, p.Controls)
	return patched, unpatched, nil
}

// Describe is the run's header: its pods and where its state lives.
func (l *Local) Describe(p plan.Plan) string {
	pods := "static pods"
	if l.Options.API {
		pods = "API pods (etcd, kube-apiserver)"
	}
	if p.RecordAfterSwap {
		pods += ", record after each swap and a static pod born under each kubelet (-record-after-swap)"
	}
	if l.Options.CLI != "" {
		pods += ", CLI " + l.Options.CLI
	}
	switch {
	case len(p.ShimFaults) > 0:
		pods += fmt.Sprintf(", %d shim faults, each made under kubelet %s and containerd restarted in place", len(p.ShimFaults), p.RuntimeKubelet)
	case p.RuntimeOrder.From != "":
		pods += ", the container runtime step against the kubelet step " + p.RuntimeOrder.String() + " in every order"
	case len(p.RuntimeSteps) > 0:
		pods += ", the container runtime swapped under kubelet " + p.RuntimeKubelet + " (not restarted)"
	}
	if len(l.Options.ToFeatureGates) > 0 {
		pods += ", target kubelets with --feature-gates=" + kubelet.FeatureGatesFlag(l.Options.ToFeatureGates) + " (-to-feature-gates)"
	}
	return fmt.Sprintf("%d %s, local provider, state in %s", l.Options.Pods, pods, l.Options.Root)
}

// Run runs the plan on the host (package scenario's Run).
func (l *Local) Run(ctx context.Context, p plan.Plan, stack *cleanup.Stack, rep *report.Report) error {
	o := l.Options
	o.Plan = p
	return Run(ctx, o, stack, rep)
}
