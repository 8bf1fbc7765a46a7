package fleet

// What a fleet roll sets up and reads before and after the roll: the
// target's images, the workloads, the runtimes' and the API's state, the
// pod ledger and the readiness watchers, and the Job ended once the roll
// is over.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// importTargetImages loads the target's Kubernetes images into every node.
func (f *fleetRun) importTargetImages(ctx context.Context) error {
	tar := filepath.Join(f.Options.Output, "kind", "images", f.cur().To+".tar")
	for _, n := range f.Cluster.Nodes {
		file, err := os.Open(tar)
		if err != nil {
			return err
		}
		_, err = n.Exec(ctx, file, "ctr", "-n", "k8s.io", "images", "import", "-")
		file.Close()
		if err != nil {
			return fmt.Errorf("%s: importing %s: %w", n.Name(), tar, err)
		}
	}
	return nil
}

func (f *fleetRun) createWorkloads(ctx context.Context) error {
	var workers []string
	for _, w := range f.Cluster.Workers() {
		workers = append(workers, w.Name())
	}
	canary, version := "", f.cur().To
	switch f.canary {
	case kubeletCanary:
		canary = workers[FaultWorker-1]
		// The canary reads which kubelet kubernetes-select serves through
		// its links: a node in bind mode would never fail its gate.
		if _, err := f.Cluster.Workers()[FaultWorker-1].Exec(ctx, nil, "test", "-L", kubeRoot+"/current/stage2"); err != nil {
			return fmt.Errorf("%s: %s/current/stage2 is not a symbolic link (kubernetes-select in bind mode?): the canary cannot tell the kubelet: %w", canary, kubeRoot, err)
		}
	case runtimeCanary:
		canary, version = workers[FaultWorker-1], f.runtime.Version
		// The canary reads runtime-select's selection: the version it
		// breaks under must be installed there (StageRuntime), or it
		// would never fail the gate.
		dir := layout.RuntimeRoot + "/" + f.runtime.Name + "/" + version
		if _, err := f.Cluster.Workers()[FaultWorker-1].Exec(ctx, nil, "test", "-d", dir); err != nil {
			return fmt.Errorf("%s: %s is not a directory (the runtime's packages not staged?): the canary cannot tell the runtime: %w", canary, dir, err)
		}
	}
	objs, err := fleetObjects(workers, canary, f.canary, version)
	if err != nil {
		return err
	}
	if err := createFleetObjects(ctx, f.Cluster, objs); err != nil {
		return err
	}
	f.Statics = kind.StaticPods(f.StaticNode.Name())
	return kind.WriteStaticPods(ctx, f.StaticNode, f.Statics)
}

// waitReady waits until every pod of the workloads and of kube-system is
// Ready.
func (f *fleetRun) waitReady(ctx context.Context) error {
	nodes := len(f.Cluster.Nodes)
	if _, err := f.Cluster.WaitPodsReady(ctx, 5*time.Minute, fleetPods(nodes, len(f.Statics.Pods), f.canary != noCanary), kind.Namespace); err != nil {
		return err
	}
	// kubeadm's four static pods per control-plane node, kube-proxy per
	// node, two CoreDNS.
	_, err := f.Cluster.WaitPodsReady(ctx, 5*time.Minute, 4*len(f.Cluster.ControlPlanes())+nodes+2, "kube-system")
	return err
}

// snapshotNodes is every node's runtime view, by node.
func (f *fleetRun) snapshotNodes(ctx context.Context) (map[string]*snapshot.Snapshot, error) {
	out := map[string]*snapshot.Snapshot{}
	for _, n := range f.Cluster.Nodes {
		s, err := kind.SnapshotNode(ctx, n)
		if err != nil {
			return nil, err
		}
		out[n.Name()] = s
	}
	return out, nil
}

// listAPIPods is the namespace's pods in the API, by name.
func (f *fleetRun) listAPIPods(ctx context.Context) (map[string]apiPod, error) {
	list, err := f.Cluster.Client.CoreV1().Pods(kind.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]apiPod{}
	for _, p := range list.Items {
		out[p.Name] = apiPod{UID: string(p.UID), Node: p.Spec.NodeName}
	}
	return out, nil
}

// quietForAPI is the least quiet time before the roll over which the API
// server's background rate is read.
const quietForAPI = 30 * time.Second

// baseline is the state before the roll: after one quiet sync period (at
// least quietForAPI: the API server's background rate), the runtimes and
// the API; then the ledger and the readiness watchers start.
func (f *fleetRun) baseline(ctx context.Context) error {
	f.api = startAPISampler(ctx, f.Cluster.Client)
	f.data.quietStart = time.Now()
	if err := ctxtime.Sleep(ctx, max(f.Options.SyncFrequency, quietForAPI)); err != nil {
		return err
	}
	f.data.quietEnd = time.Now()
	var err error
	if f.canary != noCanary {
		if err := f.saveFaultyConfig(ctx); err != nil {
			return err
		}
	}
	if f.snapBefore, err = f.snapshotNodes(ctx); err != nil {
		return err
	}
	if f.apiBefore, err = f.listAPIPods(ctx); err != nil {
		return err
	}
	cs, err := f.Cluster.WatchClient()
	if err != nil {
		return err
	}
	if f.ledger, err = startLedger(ctx, cs, kind.Namespace); err != nil {
		return err
	}
	if f.watch, err = readiness.Start(ctx, cs, readiness.Options{Namespace: kind.Namespace, Services: fleetServices}); err != nil {
		return fmt.Errorf("readiness watchers: %w", err)
	}
	f.watch.Begin()
	return nil
}

// afterRoll waits until the workloads are Ready again (the canary too
// while it is there), two quiet sync periods, then takes the
// runtimes and the API and ends the watchers.
func (f *fleetRun) afterRoll(ctx context.Context) error {
	canary := f.canary != noCanary && !f.faults.canaryRetired
	if _, err := f.Cluster.WaitPodsReady(ctx, 5*time.Minute, fleetPods(len(f.Cluster.Nodes), len(f.Statics.Pods), canary), kind.Namespace); err != nil {
		return err
	}
	return f.afterRollNoWait(ctx)
}

// afterRollNoWait is afterRoll once the pods are back (or, after a
// replacement, as they are): two quiet sync periods, the runtimes and the
// API, the watchers ended.
func (f *fleetRun) afterRollNoWait(ctx context.Context) error {
	if err := ctxtime.Sleep(ctx, 2*f.Options.SyncFrequency); err != nil {
		return err
	}
	after, err := f.snapshotNodes(ctx)
	if err != nil {
		return err
	}
	apiAfter, err := f.listAPIPods(ctx)
	if err != nil {
		return err
	}
	samples := f.watch.End()
	f.data.api = f.api.end()
	app := map[string]string{}
	for name, p := range f.watch.Pods() {
		app[name] = p.Labels["app"]
	}
	f.data.before, f.data.after = f.snapBefore, after
	f.data.apiBefore, f.data.apiAfter = f.apiBefore, apiAfter
	f.data.records = f.ledger.end()
	if f.faults.canaryRetired {
		// The retry deleted the canary: the fault's instrument, not a
		// pod the roll evicted or lost.
		retire(f.data.records, CanaryName)
		delete(f.data.apiBefore, CanaryName)
	}
	f.data.samples, f.data.app = samples, app
	return nil
}

// completeBatch ends the Job's pod (it waits for batchDoneFile) through
// kubectl exec on the control-plane node and waits for the Job to
// complete. Ours must complete with its first and only pod.
func (f *fleetRun) completeBatch(ctx context.Context) error {
	pod, err := batchPod(ctx, f.Cluster)
	if err != nil {
		return err
	}
	if _, err := f.ExecLogged(ctx, f.Cluster.ControlPlane(), "batch-done", "kubectl", "--kubeconfig", adminConf, "-n", kind.Namespace,
		"exec", pod, "--", "sh", "-c", ": >"+batchDoneFile); err != nil {
		return err
	}
	var succeeded, failed int32
	if err := kind.Poll(ctx, 2*time.Minute, func() error {
		j, err := f.Cluster.Client.BatchV1().Jobs(kind.Namespace).Get(ctx, BatchName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		succeeded, failed = j.Status.Succeeded, j.Status.Failed
		if succeeded < 1 {
			return fmt.Errorf("job %s: %d succeeded, %d failed", BatchName, succeeded, failed)
		}
		return nil
	}); err != nil {
		return err
	}
	pods := podsOfApp(f.data.records, BatchName)
	c := report.Check{Name: fmt.Sprintf("%s %s: the Job ran across the roll and completed", f.Name, f.roll),
		Detail: fmt.Sprintf("%d succeeded, %d failed, %d pods over the roll (last: %s)", succeeded, failed, pods, pod)}
	if !f.Patched {
		c.Passed = true
		c.Detail = "reported (the anchor): " + c.Detail
	} else {
		c.Passed = failed == 0 && pods == 1
	}
	f.Record(c)
	return nil
}
