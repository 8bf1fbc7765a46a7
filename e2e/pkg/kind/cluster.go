package kind

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/journal"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is one kind cluster of the run.
type Cluster struct {
	Name       string
	Image      string
	Kubeconfig string
	Nodes      []*Node
	Client     kubernetes.Interface
	p          *Provider
}

// ClusterConfig is the kind configuration of the run's clusters of
// Kubernetes version (1.30.14): one control-plane node and workers, no
// default CNI (the e2e installs a bridge network of its own, see cni.go).
func ClusterConfig(version string, workers int, syncFrequency time.Duration) string {
	return clusterConfig(version, workers, syncFrequency, nil)
}

// Mount is a host path mounted into every node of a cluster (kind's
// extraMounts).
type Mount struct{ HostPath, ContainerPath string }

func clusterConfig(version string, workers int, syncFrequency time.Duration, mounts []Mount) string {
	var b strings.Builder
	b.WriteString("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworking:\n  disableDefaultCNI: true\n  podSubnet: 10.244.0.0/16\n  serviceSubnet: 10.96.0.0/16\n")
	// kubeadm keeps the cluster's KubeletConfiguration in a ConfigMap and
	// carries it over on upgrade: every kubelet, old and new, syncs as often.
	fmt.Fprintf(&b, "kubeadmConfigPatches:\n- |\n  kind: KubeletConfiguration\n  syncFrequency: %s\n  fileCheckFrequency: 5s\n", syncFrequency)
	if kubelet.Minor(version) >= failCgroupV1Known {
		// From 1.35 a kubelet refuses cgroup v1 unless told otherwise;
		// the field exists from 1.31 on, so the setting rides along from
		// there (older clusters get it at the upgrade: allowCgroupV1).
		b.WriteString("  failCgroupV1: false\n")
	}
	node := func(role string) {
		fmt.Fprintf(&b, "- role: %s\n", role)
		if len(mounts) > 0 {
			b.WriteString("  extraMounts:\n")
		}
		for _, m := range mounts {
			fmt.Fprintf(&b, "  - hostPath: %s\n    containerPath: %s\n", m.HostPath, m.ContainerPath)
		}
	}
	b.WriteString("nodes:\n")
	node("control-plane")
	for i := 0; i < workers; i++ {
		node("worker")
	}
	return b.String()
}

// CreateCluster creates a cluster on the node image of version (1.30.14),
// recording its name in the journal before kind makes anything.
func (p *Provider) CreateCluster(ctx context.Context, name, version string, workers int, syncFrequency time.Duration) (*Cluster, error) {
	return p.CreateClusterWithMounts(ctx, name, version, workers, syncFrequency, nil)
}

// CreateClusterWithMounts is CreateCluster with mounts in every node.
func (p *Provider) CreateClusterWithMounts(ctx context.Context, name, version string, workers int, syncFrequency time.Duration, mounts []Mount) (*Cluster, error) {
	image := NodeImage(version)
	c := &Cluster{Name: name, Image: image, Kubeconfig: filepath.Join(p.opts.Root, name+".kubeconfig"), p: p}
	if err := p.claimCluster(ctx, name); err != nil {
		return nil, err
	}
	cfg := filepath.Join(p.opts.Root, name+".yaml")
	if err := os.WriteFile(cfg, []byte(clusterConfig(version, workers, syncFrequency, mounts)), 0o644); err != nil {
		return nil, err
	}
	p.logf("creating cluster %s: 1 control-plane node and %d workers on %s", name, workers, image)
	start := time.Now()
	logPath := filepath.Join(p.opts.LogDir, "kind-create-"+name+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	create := p.kindCommand("create", "cluster", "--name", name, "--image", image, "--config", cfg,
		"--kubeconfig", c.Kubeconfig, "--wait", "0s", "--retain", "-v", "1")
	create.Log = lf
	if err := create.Run(ctx); err != nil {
		p.exportLogs(ctx, name)
		return c, fmt.Errorf("kind create cluster %s: %w (see %s)", name, err, logPath)
	}
	p.logf("cluster %s created in %.0fs", name, time.Since(start).Seconds())
	if err := c.loadNodes(ctx); err != nil {
		return c, err
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return c, err
	}
	restCfg.Timeout = 30 * time.Second
	if c.Client, err = kubernetes.NewForConfig(restCfg); err != nil {
		return c, err
	}
	return c, nil
}

// AdoptCluster is a cluster another program makes on the run's engine
// with kind's labels (Cluster API's Docker provider, CAPD, names its
// containers' cluster and role as kind does): its nodes by those labels,
// its API through kubeconfig (written to the run's root). Claim its name
// first (ClaimCluster), before that program makes anything.
func (p *Provider) AdoptCluster(ctx context.Context, name string, kubeconfig []byte) (*Cluster, error) {
	c := &Cluster{Name: name, Kubeconfig: filepath.Join(p.opts.Root, name+".kubeconfig"), p: p}
	if err := os.WriteFile(c.Kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	if err := c.Reload(ctx); err != nil {
		return nil, err
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	restCfg.Timeout = 30 * time.Second
	if c.Client, err = kubernetes.NewForConfig(restCfg); err != nil {
		return nil, err
	}
	return c, nil
}

// ClaimCluster journals a cluster's name before anything makes it
// (claimCluster): the undo then removes its containers.
func (p *Provider) ClaimCluster(ctx context.Context, name string) error {
	return p.claimCluster(ctx, name)
}

// Reload lists the cluster's nodes again (machines replaced).
func (c *Cluster) Reload(ctx context.Context) error { return c.loadNodes(ctx) }

// The KubeletConfiguration field failCgroupV1: known from 1.31, and true
// by default from 1.35 (a kubelet on cgroup v1 then refuses to start).
const (
	failCgroupV1Known   = 31
	failCgroupV1Default = 35
)

// CgroupV1PreflightArgs are the kubeadm upgrade flags a cgroup v1 node needs
// for version: from 1.35 kubeadm's SystemVerification check fails on cgroup
// v1 ("To explicitly enable cgroups v1 support for kubelet v1.35 or newer,
// you must set ... 'FailCgroupV1' to 'false'. You must also explicitly skip
// this validation"), even with failCgroupV1: false set (allowCgroupV1).
func CgroupV1PreflightArgs(version string) []string {
	if kubelet.Minor(version) < failCgroupV1Default {
		return nil
	}
	return []string{"--ignore-preflight-errors=SystemVerification"}
}

// AllowCgroupV1 is allowCgroupV1 before a roll to version when its kubelet
// refuses cgroup v1 by default (1.35 or later); whether it set it.
func (c *Cluster) AllowCgroupV1(ctx context.Context, version string) (bool, error) {
	if kubelet.Minor(version) < failCgroupV1Default {
		return false, nil
	}
	return c.allowCgroupV1(ctx)
}

// allowCgroupV1 sets failCgroupV1: false in kubeadm's kubelet-config
// ConfigMap unless it is set, as an operator of a cgroup v1 node must before
// the first kubelet of 1.35 or later: kubeadm upgrade writes it into each
// node's /var/lib/kubelet/config.yaml.
func (c *Cluster) allowCgroupV1(ctx context.Context) (bool, error) {
	cm, err := c.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubelet-config", metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	cfg, ok := cm.Data["kubelet"]
	if !ok {
		return false, fmt.Errorf("ConfigMap kube-system/kubelet-config has no key kubelet")
	}
	if strings.Contains(cfg, "\nfailCgroupV1:") {
		return false, nil
	}
	cm.Data["kubelet"] = strings.TrimRight(cfg, "\n") + "\nfailCgroupV1: false\n"
	_, err = c.Client.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{})
	return err == nil, err
}

// claimCluster journals a cluster's name before kind makes anything,
// once no container carries it: on the user's engine a cluster of that
// name is refused in one line (not journaled: the undo leaves it); in the
// private engine such containers are a killed run's, left in the data
// root's store (the run holds the data root, and its names were free, so
// that run was cleaned up), and removed.
func (p *Provider) claimCluster(ctx context.Context, name string) error {
	ids, err := p.clusterContainers(ctx, name)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		if !p.Engine.Private {
			return clusterInUse(name, ids)
		}
		p.logf("removing %d containers of a killed run's cluster %s from the private engine's store", len(ids), name)
		if _, err := p.docker(ctx, append([]string{"rm", "-f", "-v"}, ids...)...); err != nil {
			return err
		}
	}
	return p.Journal.Update(func(st *journal.State) { st.Docker.Clusters = append(st.Docker.Clusters, name) })
}

func clusterInUse(name string, ids []string) error {
	return fmt.Errorf("kind cluster %s exists already on the Docker engine (%d containers): another e2e runs, or a killed one left it (make e2e-cleanup, or kind delete cluster --name %s)", name, len(ids), name)
}

// checkClustersFree refuses, before the first cluster, a plan whose
// cluster names the user's engine already has (claimCluster checks each
// again when it comes); in the private engine they are a killed run's.
func (p *Provider) checkClustersFree(ctx context.Context, names []string) error {
	if p.Engine.Private {
		return nil
	}
	for _, name := range names {
		ids, err := p.clusterContainers(ctx, name)
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			return clusterInUse(name, ids)
		}
	}
	return nil
}

// clusterContainers lists the containers kind labelled with a cluster's
// name.
func (p *Provider) clusterContainers(ctx context.Context, name string) ([]string, error) {
	out, err := p.docker(ctx, "ps", "-aq", "--filter", "label=io.x-k8s.kind.cluster="+name)
	if err != nil {
		return nil, fmt.Errorf("checking kind cluster %s is free: %w", name, err)
	}
	return strings.Fields(string(out)), nil
}

// kindCommand runs kind against the provider's engine and network.
func (p *Provider) kindCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(p.Kind, args...)
	cmd.Env = append(append([]string{}, p.Engine.Env...), "KIND_EXPERIMENTAL_DOCKER_NETWORK="+p.net.Name, "KIND_EXPERIMENTAL_PROVIDER=docker")
	return cmd
}

// exportLogs keeps kind's view of a failed cluster for the report.
func (p *Provider) exportLogs(ctx context.Context, name string) {
	dir := filepath.Join(p.opts.LogDir, "kind-"+name)
	if err := p.kindCommand("export", "logs", dir, "--name", name).Run(ctx); err != nil {
		p.logf("kind export logs %s: %v", name, err)
		return
	}
	p.logf("cluster %s: kind's logs in %s", name, dir)
}

// loadNodes lists the cluster's node containers and their roles.
func (c *Cluster) loadNodes(ctx context.Context) error {
	out, err := c.p.Engine.Command("ps", "--filter", "label=io.x-k8s.kind.cluster="+c.Name,
		"--format", `{{.Names}} {{.Label "io.x-k8s.kind.role"}}`).Output(ctx)
	if err != nil {
		return err
	}
	c.Nodes = nil
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || (f[1] != "control-plane" && f[1] != "worker") {
			// An external load balancer is not a node.
			continue
		}
		c.Nodes = append(c.Nodes, NewNode(f[0], f[1], c.p.Engine))
	}
	sort.Slice(c.Nodes, func(i, j int) bool {
		if c.Nodes[i].role != c.Nodes[j].role {
			return c.Nodes[i].role == "control-plane"
		}
		return c.Nodes[i].name < c.Nodes[j].name
	})
	if len(c.Nodes) == 0 || c.Nodes[0].role != "control-plane" {
		return fmt.Errorf("cluster %s: no control-plane node among %q", c.Name, strings.TrimSpace(string(out)))
	}
	return nil
}

// ControlPlane is the cluster's control-plane node.
func (c *Cluster) ControlPlane() *Node { return c.Nodes[0] }

// ControlPlanes are the control-plane nodes (more than one: a Cluster
// API control plane of three), ControlPlane first.
func (c *Cluster) ControlPlanes() []*Node { return c.withRole("control-plane") }

// Workers are the others.
func (c *Cluster) Workers() []*Node { return c.withRole("worker") }

func (c *Cluster) withRole(role string) []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n.role == role {
			out = append(out, n)
		}
	}
	return out
}

// Delete removes the cluster's containers: those kind labelled with its
// name that are on the run's network (as `kind delete cluster`, which
// goes by the label alone, would remove a cluster of that name someone
// made meanwhile).
func (c *Cluster) Delete(ctx context.Context, keepLogs bool) error {
	if keepLogs {
		c.p.exportLogs(ctx, c.Name)
	}
	return c.p.deleteCluster(ctx, c.Name)
}

func (p *Provider) deleteCluster(ctx context.Context, name string) error {
	network := p.Journal.State().Docker.NetworkID
	if network == "" {
		return fmt.Errorf("deleting cluster %s: the run's network ID is not journaled", name)
	}
	out, err := p.docker(ctx, "ps", "-aq", "--filter", "label=io.x-k8s.kind.cluster="+name, "--filter", "network="+network)
	if err != nil {
		return err
	}
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		_, err = p.docker(ctx, append([]string{"rm", "-f", "-v"}, ids...)...)
	}
	return err
}
