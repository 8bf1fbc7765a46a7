package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/pkg/proc"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

var planGVR = schema.GroupVersionResource{Group: "upgrade.cattle.io", Version: "v1", Resource: "plans"}

// planLabel is the label SUC puts on a node its Plan's Job completed on
// (pkg/apis/upgrade.cattle.io LabelPlanName).
func planLabel(plan string) string { return "plan.upgrade.cattle.io/" + plan }

// fakeNodeIP is every kwok node's address (TEST-NET-2, never routed).
const fakeNodeIP = "198.51.100.1"

// startKwok starts kwok managing every node with the Stages and waits
// until every node is Ready.
func (c *cluster) startKwok(ctx context.Context, bin string, stages []byte, nodes int, log io.Writer) error {
	cfg := filepath.Join(c.dir, "kwok-stages.yaml")
	if err := os.WriteFile(cfg, stages, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "starting kwok (%s) and waiting for %d nodes Ready\n", bin, nodes)
	p, err := c.start(ctx, "kwok", bin, []string{"--kubeconfig=" + c.cp.PKI.Kubeconfig(), "--manage-all-nodes=true",
		"--config=" + cfg, fmt.Sprintf("--server-address=127.0.0.1:%d", kwokPort),
		// Never routed: the nodes' InternalIP, and the Job pods' IP (hostNetwork).
		"--node-ip=" + fakeNodeIP}, nil)
	if err != nil {
		return err
	}
	wait := func(what string, ok func(*corev1.Node) bool) error {
		return poll(ctx, 2*time.Minute+time.Duration(nodes)*300*time.Millisecond, 2*time.Second, p, func() (bool, string, error) {
			list, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return false, err.Error(), nil
			}
			n := 0
			for i := range list.Items {
				if ok(&list.Items[i]) {
					n++
				}
			}
			return n == nodes, fmt.Sprintf("%d of %d nodes %s", n, nodes, what), nil
		})
	}
	if err := wait("Ready", ready); err != nil {
		return err
	}
	fmt.Fprintf(log, "taking the not-ready taint off %d nodes\n", nodes)
	if err := c.untaint(ctx, nodes); err != nil {
		return err
	}
	return wait("Ready and untainted", schedulable)
}

// ready says whether n is Ready.
func ready(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// schedulable says whether n is Ready and without the not-ready taint.
func schedulable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady {
			return false
		}
	}
	return ready(n)
}

// startSUC starts the controller with our manifest's settings as its
// environment (what the Deployment's envFrom gives it) and waits until it
// serves its Plan CRD.
func (c *cluster) startSUC(ctx context.Context, bin string, settings map[string]string, log io.Writer) (*proc.Process, error) {
	env := envList(settings)
	env = append(env, "SYSTEM_UPGRADE_CONTROLLER_NAME=system-upgrade-controller",
		"SYSTEM_UPGRADE_CONTROLLER_NAMESPACE="+systemupgrade.Namespace,
		"SYSTEM_UPGRADE_CONTROLLER_NODE_NAME="+NodeName(0),
		"SYSTEM_UPGRADE_CONTROLLER_KUBE_CONFIG="+c.cp.PKI.Kubeconfig())
	fmt.Fprintf(log, "starting system-upgrade-controller (%s)\n", bin)
	p, err := c.start(ctx, "system-upgrade-controller", bin, nil, env)
	if err != nil {
		return nil, err
	}
	c.suc = p
	err = poll(ctx, 3*time.Minute, time.Second, p, func() (bool, string, error) {
		_, err := c.dyn.Resource(planGVR).Namespace(systemupgrade.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
	return p, err
}

// poll calls check every interval until it says done, p exits, or
// timeout passes.
func poll(ctx context.Context, timeout, interval time.Duration, p *proc.Process, check func() (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		if p != nil {
			if ended, err := p.Exited(); ended {
				return fmt.Errorf("%s exited: %v", p.Name, err)
			}
		}
		done, last, err := check()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s: %s", timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// applyPlan creates a Plan.
func (c *cluster) applyPlan(ctx context.Context, p systemupgrade.Plan) error {
	j, err := json.Marshal(p)
	if err != nil {
		return err
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(j); err != nil {
		return err
	}
	_, err = c.dyn.Resource(planGVR).Namespace(p.Metadata.Namespace).Create(ctx, &u, metav1.CreateOptions{})
	return err
}

// watcher follows the roll through informers (watches, no polling of the
// API): the nodes SUC labelled as done and the Jobs that failed.
type watcher struct {
	mu           sync.Mutex
	cpDone       time.Time
	upgraded     map[string]time.Time // workers labelled by the workers Plan
	failed       map[string]time.Time // workers whose Job failed
	firstFailure time.Time
	atFirst      int // workers upgraded when the first Job failed
	active       map[string]bool
}

func (c *cluster) watch(ctx context.Context) *watcher {
	w := &watcher{upgraded: map[string]time.Time{}, failed: map[string]time.Time{}, active: map[string]bool{}}
	nodes := informer(&corev1.Node{}, c.cs.CoreV1().Nodes().List, c.cs.CoreV1().Nodes().Watch)
	onNode := func(obj interface{}) {
		if n, ok := obj.(*corev1.Node); ok {
			w.node(n)
		}
	}
	nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onNode, UpdateFunc: func(_, o interface{}) { onNode(o) }})
	jobClient := c.cs.BatchV1().Jobs(systemupgrade.Namespace)
	jobs := informer(&batchv1.Job{}, jobClient.List, jobClient.Watch)
	onJob := func(obj interface{}) {
		if j, ok := obj.(*batchv1.Job); ok {
			w.job(j)
		}
	}
	jobs.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onJob, UpdateFunc: func(_, o interface{}) { onJob(o) }})
	go nodes.Run(ctx.Done())
	go jobs.Run(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, jobs.HasSynced)
	return w
}

// informer lists and watches one resource with its typed client's List
// and Watch; not client-go's informer factory, which compiles every API
// group's informers and listers for these two.
func informer[L runtime.Object](obj runtime.Object, list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, o) },
		WatchFuncWithContext: watchFn,
	}
	return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
}

func (w *watcher) node(n *corev1.Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n.Name == NodeName(0) {
		if _, ok := n.Labels[planLabel(systemupgrade.ControlPlanePlan)]; ok && w.cpDone.IsZero() {
			w.cpDone = time.Now()
		}
		return
	}
	if _, ok := n.Labels[planLabel(systemupgrade.WorkersPlan)]; ok {
		if _, seen := w.upgraded[n.Name]; !seen {
			w.upgraded[n.Name] = time.Now()
		}
	}
}

func (w *watcher) job(j *batchv1.Job) {
	if j.Labels[labelPlan] != systemupgrade.WorkersPlan {
		return
	}
	node := j.Labels[labelNode]
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active[node] = true
	for _, cond := range j.Status.Conditions {
		if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
			if _, seen := w.failed[node]; !seen {
				w.failed[node] = time.Now()
				if w.firstFailure.IsZero() {
					w.firstFailure, w.atFirst = time.Now(), len(w.upgraded)
				}
			}
		}
	}
}

// snapshot is the watcher's counts and the time of the last change.
type snapshot struct {
	cpDone                          time.Time
	upgraded, failed, jobs, atFirst int
	last, firstFailure              time.Time
	failedNodes                     []string
}

func (w *watcher) snapshot() snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := snapshot{cpDone: w.cpDone, upgraded: len(w.upgraded), failed: len(w.failed), jobs: len(w.active),
		atFirst: w.atFirst, firstFailure: w.firstFailure, last: w.cpDone}
	for _, m := range []map[string]time.Time{w.upgraded, w.failed} {
		for _, t := range m {
			if t.After(s.last) {
				s.last = t
			}
		}
	}
	for n := range w.failed {
		s.failedNodes = append(s.failedNodes, n)
	}
	sort.Strings(s.failedNodes)
	return s
}
