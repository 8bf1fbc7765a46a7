package sim

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/pkg/controlplane"
	"github.com/kubelet-compat/kubelet-compat/pkg/proc"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// Ports on 127.0.0.1 besides pkg/controlplane's.
const (
	schedulerPort = 16459
	kwokPort      = 16460
)

// Binaries are the programs a run starts.
type Binaries struct {
	// K8s is the directory of kube-apiserver, kube-controller-manager and
	// kube-scheduler (make build ... PATCHED=false: _output/1.31.14-unpatched).
	K8s        string
	Etcd, Kwok string
	// SUC is system-upgrade-controller.
	SUC string
}

// cluster is one run's processes and clients.
type cluster struct {
	dir   string
	cp    *controlplane.ControlPlane
	procs []*proc.Process // started after the control plane, stopped first
	suc   *proc.Process
	cfg   *rest.Config
	cs    kubernetes.Interface
	dyn   dynamic.Interface
}

// startCluster starts etcd, kube-apiserver, kube-controller-manager (only
// the Job controller) and kube-scheduler in dir, all on 127.0.0.1.
func startCluster(ctx context.Context, b Binaries, dir string, log io.Writer) (*cluster, error) {
	for _, port := range []int{controlplane.EtcdClientPort, controlplane.EtcdPeerPort, controlplane.APIServerPort,
		controlplane.ControllerManagerPort, schedulerPort, kwokPort} {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
			return nil, fmt.Errorf("port %d on 127.0.0.1 is taken (another control plane running?): %w", port, err)
		} else {
			l.Close()
		}
	}
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	cp, err := controlplane.New(controlplane.Options{Dir: dir, LogDir: logs, Etcd: b.Etcd,
		APIServer:         func(string) string { return filepath.Join(b.K8s, "kube-apiserver") },
		ControllerManager: func(string) string { return filepath.Join(b.K8s, "kube-controller-manager") },
		Controllers:       "job"})
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, cp: cp}
	fmt.Fprintf(log, "starting etcd, kube-apiserver, kube-controller-manager (job), kube-scheduler in %s\n", dir)
	if err := cp.Start(ctx, "1.31.14"); err != nil {
		c.stop(log)
		return nil, err
	}
	if c.cfg, err = clientcmd.BuildConfigFromFlags("", cp.PKI.Kubeconfig()); err != nil {
		c.stop(log)
		return nil, err
	}
	c.cfg.QPS, c.cfg.Burst, c.cfg.Timeout = 200, 400, 60*time.Second
	if c.cs, err = kubernetes.NewForConfig(c.cfg); err != nil {
		c.stop(log)
		return nil, err
	}
	if c.dyn, err = dynamic.NewForConfig(c.cfg); err != nil {
		c.stop(log)
		return nil, err
	}
	kc := cp.PKI.Kubeconfig()
	sched, err := c.start(ctx, "kube-scheduler", filepath.Join(b.K8s, "kube-scheduler"), []string{"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc, "--leader-elect=false",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", schedulerPort)}, nil)
	if err != nil {
		c.stop(log)
		return nil, err
	}
	if err := waitHealthy(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", schedulerPort), sched); err != nil {
		c.stop(log)
		return nil, fmt.Errorf("kube-scheduler: %w (see %s)", err, filepath.Join(logs, "kube-scheduler.log"))
	}
	return c, nil
}

// start starts a program logging to logs/<name>.log.
func (c *cluster) start(_ context.Context, name, binary string, args, env []string) (*proc.Process, error) {
	p, err := proc.Start(nil, name, binary, args, env, filepath.Join(c.dir, "logs", name+".log"))
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// stop stops what was started, last first; errors are logged.
func (c *cluster) stop(log io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].Stop(ctx, 15*time.Second); err != nil {
			fmt.Fprintf(log, "stopping %s: %v\n", c.procs[i].Name, err)
		}
	}
	c.procs = nil
	if err := c.cp.Stop(ctx); err != nil {
		fmt.Fprintf(log, "%v\n", err)
	}
}

// waitHealthy polls a component's self-signed /healthz until 200.
func waitHealthy(ctx context.Context, url string, p *proc.Process) error {
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if ended, err := p.Exited(); ended {
			return fmt.Errorf("exited: %v", err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after 3m", url)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// populate creates what our manifest holds but the controller's
// Deployment (SUC runs as a process here) and the fleet's nodes: one
// control-plane node (labelled and tainted as kubeadm does) and workers.
func (c *cluster) populate(ctx context.Context, so systemupgrade.Options, nodes int, log io.Writer) (map[string]string, error) {
	objs, err := systemupgrade.Controller(so)
	if err != nil {
		return nil, err
	}
	var env map[string]string
	for _, obj := range objs {
		switch o := obj.(type) {
		case corev1.Namespace:
			_, err = c.cs.CoreV1().Namespaces().Create(ctx, &o, metav1.CreateOptions{})
		case corev1.ServiceAccount:
			_, err = c.cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		case rbacv1.ClusterRoleBinding:
			_, err = c.cs.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
		case corev1.ConfigMap:
			env = o.Data
			_, err = c.cs.CoreV1().ConfigMaps(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		}
		if err != nil {
			return nil, err
		}
	}
	if env == nil {
		return nil, fmt.Errorf("the controller's manifest has no ConfigMap of settings")
	}
	fmt.Fprintf(log, "creating %d nodes\n", nodes)
	return env, c.createNodes(ctx, nodes)
}

// createNodes creates nodes 0..n-1.
func (c *cluster) createNodes(ctx context.Context, n int) error {
	return forEach(ctx, n, func(i int) error {
		if _, err := c.cs.CoreV1().Nodes().Create(ctx, Node(i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating node %s: %w", NodeName(i), err)
		}
		return nil
	})
}

// untaint takes the not-ready taint off nodes 0..n-1 once kwok made them
// Ready: what the node lifecycle controller does (the API server's
// TaintNodesByCondition puts it on every new node), which does not run
// here (kube-controller-manager's 20 requests/s took over 5 minutes for
// 1,000 nodes).
func (c *cluster) untaint(ctx context.Context, n int) error {
	return forEach(ctx, n, func(i int) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := c.cs.CoreV1().Nodes().Get(ctx, NodeName(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			var keep []corev1.Taint
			for _, t := range node.Spec.Taints {
				if t.Key != corev1.TaintNodeNotReady {
					keep = append(keep, t)
				}
			}
			if len(keep) == len(node.Spec.Taints) {
				return nil
			}
			node.Spec.Taints = keep
			_, err = c.cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
			return err
		})
	})
}

// forEach calls f(0..n-1), 16 at a time, and returns the first error.
func forEach(ctx context.Context, n int, f func(int) error) error {
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := 0; i < n; i++ {
		select {
		case work <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
	default:
	}
	return err
}

// Node is the kwok node i (0: the control plane).
func Node(i int) *corev1.Node {
	name := NodeName(i)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", "type": "kwok"},
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}}
	if i == 0 {
		n.Labels["node-role.kubernetes.io/control-plane"] = ""
		n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

// envList is m as NAME=value, sorted.
func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
