package fleet

// Our roll: system-upgrade-controller (deploy/system-upgrade) and its two
// Plans, kc-roll in each node's Job, nothing but the API and the nodes'
// containerd (the images are imported, never pulled). Every Job's output
// goes into the report's logs as soon as the Job ends, and the
// controller's at the end, so that a first run says where it broke.

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/images"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SUC's labels on the Jobs it makes (pkg/apis/upgrade.cattle.io at
// systemupgrade.SUCVersion).
const (
	sucLabelNode = "upgrade.cattle.io/node"
	sucLabelPlan = "upgrade.cattle.io/plan"
	// The Plan's version the Job runs (its status.latestVersion).
	sucLabelVersion = "upgrade.cattle.io/version"
)

// sucImages is the OCI layout of the controller's image and the upgrade
// Job's image for target (kc-roll, its patched packages and kubectl from
// output);
// naive: the naive roll's image, with the target's packages as released
// (those the drain roll installs).
func sucImages(controller, roll, target, output string, naive bool) ([]byte, error) {
	ctl, err := systemupgrade.ControllerImage(systemupgrade.ControllerImageRef, controller)
	if err != nil {
		return nil, err
	}
	o := systemupgrade.Options{Naive: naive}
	variant := "patched"
	if naive {
		variant = "unpatched"
	}
	up, err := systemupgrade.UpgradeImage(o.ImageName()+":"+target, target, hostdeps.Busybox.Name,
		filepath.Join(output, target, "kubectl"), roll, nodeimage.PackageDir(output, variant))
	if err != nil {
		return nil, err
	}
	layout, _, err := images.Layout(ctl, up)
	return layout, err
}

// importSUCImages loads both images into every node's containerd: the
// controller runs on the control-plane node, a Job on every node.
func (f *fleetRun) importSUCImages(ctx context.Context) error {
	for _, n := range f.Cluster.Nodes {
		if err := n.ImportLayout(ctx, f.sucImages[f.cur().To]); err != nil {
			return err
		}
	}
	return nil
}

// planOptions are the Plans of this roll: the target, the concurrency,
// the e2e's gate timeout; no cordon, no drain; the naive roll's Plans
// (kc-roll naive) on its cluster.
func (f *fleetRun) planOptions() systemupgrade.Options {
	o := systemupgrade.DefaultOptions(f.cur().To)
	o.Concurrency = f.concurrency
	o.GateTimeout = GateTimeout
	o.Naive = f.naive
	o.EtcdBridgeImage = f.bridgeImage
	if f.runtime != (plan.Runtime{}) {
		o.Runtime = f.runtime.String()
	}
	// What the e2e's own kubeadm steps pass on cgroup v1 nodes (kind on
	// this machine's hosts): kubeadm from 1.35 fails SystemVerification
	// there.
	o.KubeadmArgs = kind.CgroupV1PreflightArgs(f.cur().To)
	if f.canary != noCanary {
		// A failed Job runs again once SUC deleted it (its TTL) and the
		// Plan changed (retryFailed): the killed Job's re-run and the
		// faulty worker's refusal within the roll.
		o.JobTTL = JobTTL
	}
	return o
}

// kubectlApply applies a YAML stream with the control-plane node's kubectl
// and kubeadm's admin credentials, keeping the output in the logs.
func (f *fleetRun) kubectlApply(ctx context.Context, what string, stream []byte) error {
	cp := f.Cluster.ControlPlane()
	f.NodeLog(cp, what+".yaml", stream)
	out, err := cp.Exec(ctx, bytes.NewReader(stream), "sh", "-c", `exec kubectl --kubeconfig "$1" apply -f - 2>&1`, "sh", adminConf)
	f.NodeLog(cp, what, out)
	if err != nil {
		return fmt.Errorf("kubectl apply (%s): %w: %s", what, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// applyController applies the controller's manifest and waits for it to
// run.
func (f *fleetRun) applyController(ctx context.Context) error {
	objs, err := systemupgrade.Controller(f.planOptions())
	if err != nil {
		return err
	}
	stream, err := systemupgrade.YAMLStream(objs)
	if err != nil {
		return err
	}
	if err := f.kubectlApply(ctx, "suc-controller", stream); err != nil {
		return err
	}
	return kind.Poll(ctx, 3*time.Minute, func() error {
		d, err := f.Cluster.Client.AppsV1().Deployments(systemupgrade.Namespace).Get(ctx, "system-upgrade-controller", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas < 1 {
			return fmt.Errorf("system-upgrade-controller: %d available", d.Status.AvailableReplicas)
		}
		return nil
	})
}

// sucRoll applies the Plans (retried until the controller has made its
// CRD) and follows the Jobs until every node's Job completed or, on the
// fault roll, the faulty worker's Job failed (faultRoll).
func (f *fleetRun) sucRoll(ctx context.Context) error {
	plans, err := systemupgrade.Plans(f.planOptions())
	if err != nil {
		return err
	}
	var objs []interface{}
	for _, p := range plans {
		objs = append(objs, p)
	}
	stream, err := systemupgrade.YAMLStream(objs)
	if err != nil {
		return err
	}
	defer f.saveControllerLog(ctx)
	if err := kind.Poll(ctx, 3*time.Minute, func() error { return f.kubectlApply(ctx, "suc-plans", stream) }); err != nil {
		return err
	}
	f.data.rollStart = time.Now()
	f.jobs = map[string]*jobRecord{}
	if f.canary != noCanary {
		err = f.faultRoll(ctx)
	} else {
		err = f.followRoll(ctx, f.allDone())
	}
	f.data.rollEnd = time.Now()
	f.setWindows()
	if err != nil {
		return err
	}
	if f.naive {
		// No gate held a node until its pods were back: the roll lasts,
		// as the drain roll's does, until the workloads are Ready again
		// (what the released kubelet restarted after the last Job ended
		// counts in the total).
		if _, err := f.Cluster.WaitPodsReady(ctx, 10*time.Minute, fleetPods(len(f.Cluster.Nodes), len(f.Statics.Pods), false), kind.Namespace); err != nil {
			return fmt.Errorf("after the naive roll: %w", err)
		}
		f.data.rollEnd = time.Now()
		f.Logf("naive: the workloads Ready again %.0fs after the last Job ended", f.data.rollEnd.Sub(lastEnd(f.data.windows)).Seconds())
	}
	if f.canary == noCanary {
		f.checkConcurrency()
	}
	return nil
}

// followRoll follows the Plans' Jobs (followJobs) until until says the
// roll is where it waits for; a Job that fails and is not one of the fault
// roll's ends it at once.
func (f *fleetRun) followRoll(ctx context.Context, until func() error) error {
	return pollStop(ctx, 45*time.Minute, func() error {
		if err := f.followJobs(ctx); err != nil {
			return err
		}
		for _, j := range f.jobs {
			if j.Failed && !f.failureExpected(j) {
				return stopPolling{fmt.Errorf("the upgrade Job on %s failed (see %s)", j.Node, f.jobLogPath(j))}
			}
		}
		if err := f.retryFailed(ctx); err != nil {
			return stopPolling{err}
		}
		return until()
	})
}

// allDone is followRoll's end of a roll: every node's last Job completed.
func (f *fleetRun) allDone() func() error {
	lastLog := time.Now()
	return func() error {
		var waiting []string
		for _, n := range f.Cluster.Nodes {
			if j, ok := f.jobs[n.Name()]; !ok || !j.Done || j.Failed {
				waiting = append(waiting, n.Name())
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		// A line a minute, so that a stuck roll shows where.
		if time.Since(lastLog) > time.Minute {
			lastLog = time.Now()
			f.Logf("roll: nodes not done: %s", strings.Join(waiting, " "))
		}
		return fmt.Errorf("nodes not done: %s", strings.Join(waiting, " "))
	}
}

// stopPolling ends pollStop at once with its error.
type stopPolling struct{ error }

// pollStop is Poll, ended at once by an error wrapped in stopPolling.
func pollStop(ctx context.Context, timeout time.Duration, f func() error) error {
	var stop error
	err := kind.Poll(ctx, timeout, func() error {
		err := f()
		if sp, ok := err.(stopPolling); ok {
			stop = sp.error
			return nil
		}
		return err
	})
	if stop != nil {
		return stop
	}
	return err
}

func reportCheck(name string, passed bool, detail string) report.Check {
	return report.Check{Name: name, Passed: passed, Detail: detail}
}
