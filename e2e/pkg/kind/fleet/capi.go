package fleet

// Cluster API's rolls (issue 49): a management cluster on kind running
// CAPI v1.13 (core, kubeadm bootstrap and control plane), CAPD and this
// project's in-place update extension, all built here (make capi-images);
// workload clusters CAPD makes of this project's kind node images; the
// same version bump rolled by the extension (in place, kc-roll in each
// node's Job) and by CAPI's default rollout (every machine replaced).
//
// CAPD puts its containers on the docker network named "kind" and labels
// them as kind does: the run's network is named so (kind.CAPDNetwork),
// and the e2e adopts a workload cluster's containers as a kind.Cluster,
// so that the fleet's workloads, ledger, watchers and figures serve both.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/manifest"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// The Cluster API rolls (-fleet-runs), not in Runs: they need make
// capi-images (e2e -mode capi runs both).
const (
	// CAPI: the version bump rolled in place by this project's extension;
	// the second MachineDeployment's one machine holds the canary, whose
	// gate fails: that machine's node rolled back, its Machine failed.
	CAPI = "capi"
	// CAPIReplace: the same bump by CAPI's default rollout, every machine
	// replaced by one of the target's node image (the anchor).
	CAPIReplace = "capi-replace"
)

// CAPIRuns are -mode capi's rolls.
var CAPIRuns = []string{CAPI, CAPIReplace}

// NeedsCAPI says whether rolls include a CAPI roll (a management
// cluster, the network CAPD uses).
func NeedsCAPI(rolls []string) bool {
	return contains(rolls, CAPI) || contains(rolls, CAPIReplace)
}

// The management cluster and where the workload clusters live. The
// extension's ExtensionConfig selects CAPINamespace alone (make
// capi-images CAPI_NAMESPACES): the replacement roll's namespace gets
// CAPI's default rollout.
const (
	capiMgmtCluster = "kc-e2e-capi-mgmt"
	// CAPINamespace is the in-place roll's (make capi-images
	// CAPI_NAMESPACES).
	CAPINamespace        = "kc-e2e-capi"
	capiReplaceNamespace = "kc-e2e-capi-replace"
	// capiWorkers: the first MachineDeployment's two machines and the
	// second's one (worker 3, FaultWorker, sorts last: md-1).
	capiWorkers = 3
	// capiControlPlanes: KCP v1.13 updates a Machine in place only where
	// it would otherwise delete one, i.e. without a surge Machine
	// (maxSurge 0), which its webhook refuses below 3 replicas ("when
	// KubeadmControlPlane is configured to scale-in, replica count needs
	// to be at least 3"): a control plane of 1 is always replaced.
	capiControlPlanes = 3
)

// CAPISettings are the ExtensionConfig's settings the e2e needs (make
// capi-images CAPI_SETTINGS): the fleet's gate timeout, and its Job TTL,
// after which a failed node's Job runs again and must refuse at once.
var CAPISettings = []string{fmt.Sprintf("gateTimeout=%d", GateTimeout), fmt.Sprintf("jobTTL=%d", JobTTL)}

// capiMDs are the workload clusters' MachineDeployments.
var capiMDs = []capiMD{{Name: "md-0", Replicas: 2}, {Name: "md-1", Replicas: 1}}

// CAPI's resources the e2e reads and writes (v1beta2).
var (
	gvrClusters    = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	gvrMachines    = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	gvrMDs         = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments"}
	gvrKCPs        = schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Resource: "kubeadmcontrolplanes"}
	gvrExtConfigs  = schema.GroupVersionResource{Group: "runtime.cluster.x-k8s.io", Version: "v1beta2", Resource: "extensionconfigs"}
	capiNamespaces = []string{"capi-system", "capi-kubeadm-bootstrap-system", "capi-kubeadm-control-plane-system", "capd-system", "kc-capi-extension"}
)

// CAPIDir is where make capi-images writes (CAPI_OUTPUT's default).
func CAPIDir(output string) string { return filepath.Join(output, "cluster-api") }

// capiManagement is the run's management cluster.
type capiManagement struct {
	cluster *kind.Cluster
	dyn     dynamic.Interface
	// haproxy is the load balancer image (nodeimage.HAProxyRef).
	haproxy string
	logDir  string
}

// startCAPI creates the management cluster on the node image of version
// (the step's target: CAPI v1.13 supports management clusters from 1.32,
// and the newer of the two is the nearer; its CRDs' validation rules
// need a recent API server) with the engine's socket mounted (CAPD makes the workload clusters'
// containers through it), loads the providers' images, applies make
// capi-images' manifest (retried while the webhooks come up), waits for
// every manager and for the ExtensionConfig's discovery, and builds the
// load balancer image. Its deletion is pushed on stack.
func startCAPI(ctx context.Context, p *kind.Provider, o Options, version string, stack *cleanup.Stack) (*capiManagement, error) {
	dir := CAPIDir(o.Output)
	tars, err := filepath.Glob(filepath.Join(dir, "images", "*.tar"))
	if err != nil || len(tars) == 0 {
		return nil, fmt.Errorf("no images in %s/images (make capi-images CAPI_NAMESPACES=%s CAPI_SETTINGS=%s)", dir, CAPINamespace, strings.Join(CAPISettings, ","))
	}
	manifestYAML, err := os.ReadFile(filepath.Join(dir, "cluster-api.yaml"))
	if err != nil {
		return nil, fmt.Errorf("%w (make capi-images)", err)
	}
	// Some ten node containers (their systemd, kubelets, containerd)
	// exhaust the default 128 inotify instances: a replacement machine's
	// systemd then exits at once.
	if err := p.RaiseSysctl("fs.inotify.max_user_instances", 1024); err != nil {
		return nil, err
	}
	m := &capiManagement{logDir: o.LogDir}
	logf := func(format string, args ...any) {
		fmt.Fprintf(o.Log, "%s capi: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	if m.haproxy, err = nodeimage.BuildHAProxy(ctx, nodeimage.Options{DockerEnv: p.Engine.Env, OutputDir: o.Output, CacheDir: o.CacheDir, Log: o.Log}); err != nil {
		return nil, err
	}
	c, err := p.CreateClusterWithMounts(ctx, capiMgmtCluster, version, 0, o.SyncFrequency,
		[]kind.Mount{{HostPath: p.EngineSocket(), ContainerPath: "/var/run/docker.sock"}})
	if c != nil {
		stack.Push("delete the management cluster "+capiMgmtCluster, func(ctx context.Context) error { return c.Delete(ctx, false) })
	}
	if err != nil {
		return nil, err
	}
	m.cluster = c
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	if m.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	// No CNI but the e2e's: the managers' pods need a network.
	if err := c.InstallCNI(ctx); err != nil {
		return nil, err
	}
	logf("loading %d images into %s", len(tars), capiMgmtCluster)
	if err := importLayouts(ctx, c.ControlPlane(), tars); err != nil {
		return nil, err
	}
	// The extension's Role and RoleBinding (the clusters' kubeconfig
	// Secrets) live in the namespaces it serves: they must exist.
	ns := []byte(fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", CAPINamespace))
	if err := m.kubectl(ctx, "namespace", ns, "apply", "-f", "-"); err != nil {
		return nil, err
	}
	logf("applying %s (%d bytes)", filepath.Join(dir, "cluster-api.yaml"), len(manifestYAML))
	if err := kind.Poll(ctx, 5*time.Minute, func() error {
		return m.kubectl(ctx, "cluster-api", manifestYAML, "apply", "--server-side", "--force-conflicts", "-f", "-")
	}); err != nil {
		return nil, err
	}
	for _, ns := range capiNamespaces {
		if err := m.waitDeployments(ctx, ns); err != nil {
			return nil, err
		}
	}
	if err := kind.Poll(ctx, 3*time.Minute, m.extensionDiscovered(ctx)); err != nil {
		return nil, fmt.Errorf("the ExtensionConfig: %w", err)
	}
	logf("management cluster %s: CAPI, CAPD and the extension running, the extension's handlers discovered", capiMgmtCluster)
	return m, nil
}

// importLayouts loads OCI layout tars into a node's containerd.
func importLayouts(ctx context.Context, n *kind.Node, tars []string) error {
	for _, t := range tars {
		layout, err := os.ReadFile(t)
		if err != nil {
			return err
		}
		if err := n.ImportLayout(ctx, layout); err != nil {
			return fmt.Errorf("importing %s: %w", t, err)
		}
	}
	return nil
}

// kubectl runs kubectl on the management cluster's node with stdin,
// keeping its output in the logs.
func (m *capiManagement) kubectl(ctx context.Context, what string, stdin []byte, args ...string) error {
	cp := m.cluster.ControlPlane()
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	out, err := cp.Exec(ctx, in, append([]string{"kubectl", "--kubeconfig", adminConf}, args...)...)
	_ = os.WriteFile(filepath.Join(m.logDir, "capi-"+what+".log"), out, 0o644)
	if err != nil {
		return fmt.Errorf("kubectl %s (%s): %w: %s", strings.Join(args, " "), what, err, lastLines(string(out), 3))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// waitDeployments waits until every Deployment of ns is available.
func (m *capiManagement) waitDeployments(ctx context.Context, ns string) error {
	return kind.Poll(ctx, 5*time.Minute, func() error {
		list, err := m.cluster.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return fmt.Errorf("no Deployment in %s", ns)
		}
		for _, d := range list.Items {
			if d.Status.AvailableReplicas < 1 {
				return fmt.Errorf("%s/%s: %d available", ns, d.Name, d.Status.AvailableReplicas)
			}
		}
		return nil
	})
}

// extensionDiscovered: the ExtensionConfig's handlers are known to CAPI
// (status.handlers, the Discovered condition).
func (m *capiManagement) extensionDiscovered(ctx context.Context) func() error {
	return func() error {
		list, err := m.dyn.Resource(gvrExtConfigs).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, ec := range list.Items {
			handlers, _, _ := unstructured.NestedSlice(ec.Object, "status", "handlers")
			if len(handlers) >= 3 {
				return nil
			}
			return fmt.Errorf("ExtensionConfig %s: %d handlers discovered (%s)", ec.GetName(), len(handlers), conditionsOf(ec))
		}
		return fmt.Errorf("no ExtensionConfig")
	}
}

// condition is a v1beta2 condition.
type condition struct {
	Type, Status, Reason, Message string
	LastTransitionTime            time.Time
}

// conditionsOf reads an object's status.conditions.
func conditionsOf(u unstructured.Unstructured) []condition {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		c := condition{Type: str(m["type"]), Status: str(m["status"]), Reason: str(m["reason"]), Message: str(m["message"])}
		c.LastTransitionTime, _ = time.Parse(time.RFC3339, str(m["lastTransitionTime"]))
		out = append(out, c)
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func conditionOf(u unstructured.Unstructured, t string) condition {
	for _, c := range conditionsOf(u) {
		if c.Type == t {
			return c
		}
	}
	return condition{}
}

// capiMachine is a Machine as the rolls read it.
type capiMachine struct {
	Name, UID, Node, Version, Owner string
	Deleting                        bool
	Created                         time.Time
	// UpToDate and Updating are its conditions.
	UpToDate, Updating condition
}

func (m capiMachine) String() string {
	return fmt.Sprintf("%s (node %s, %s, UpToDate %s/%s, Updating %s/%s)", m.Name, m.Node, m.Version, m.UpToDate.Status, m.UpToDate.Reason, m.Updating.Status, m.Updating.Reason)
}

// machines lists the Machines of cluster in ns, by name.
func (m *capiManagement) machines(ctx context.Context, ns, cluster string) (map[string]capiMachine, error) {
	list, err := m.dyn.Resource(gvrMachines).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name=" + cluster})
	if err != nil {
		return nil, err
	}
	out := map[string]capiMachine{}
	for _, u := range list.Items {
		mc := capiMachine{Name: u.GetName(), UID: string(u.GetUID()), Deleting: u.GetDeletionTimestamp() != nil, Created: u.GetCreationTimestamp().Time,
			UpToDate: conditionOf(u, "UpToDate"), Updating: conditionOf(u, "Updating")}
		mc.Node, _, _ = unstructured.NestedString(u.Object, "status", "nodeRef", "name")
		mc.Version, _, _ = unstructured.NestedString(u.Object, "spec", "version")
		if _, ok := u.GetLabels()["cluster.x-k8s.io/control-plane"]; ok {
			mc.Owner = "control-plane"
		} else {
			mc.Owner = u.GetLabels()["cluster.x-k8s.io/deployment-name"]
		}
		out[mc.Name] = mc
	}
	return out, nil
}

// kubeconfig is the workload cluster's admin kubeconfig CAPI keeps.
func (m *capiManagement) kubeconfig(ctx context.Context, ns, cluster string) ([]byte, error) {
	s, err := m.cluster.Client.CoreV1().Secrets(ns).Get(ctx, cluster+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return s.Data["value"], nil
}

// patch merge-patches a CAPI object.
func (m *capiManagement) patch(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, patch []byte) error {
	_, err := m.dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patching %s %s/%s with %s: %w", gvr.Resource, ns, name, patch, err)
	}
	return nil
}

// capiState is what a CAPI roll keeps beside a fleetRun's.
type capiState struct {
	mgmt    *capiManagement
	cluster capiCluster
	// machinesBefore are the Machines at the baseline.
	machinesBefore map[string]capiMachine
	// replace: CAPI's default rollout (the anchor), else the extension.
	replace bool
	// networked are the nodes the pod network was written onto
	// (keepCNI).
	networked map[string]bool
	// deleting and gone: when each Machine of the baseline was first seen
	// being deleted and gone (the replacement roll, trackReplaced).
	deleting, gone map[string]time.Time
	// nodeReady and podsUnready: what logNodeReadiness logged last.
	nodeReady   map[string]string
	podsUnready string
}

// capiWorkload is the cluster of a CAPI roll.
func capiWorkload(roll string, o Options, haproxy string) capiCluster {
	ns := CAPINamespace
	if roll == CAPIReplace {
		ns = capiReplaceNamespace
	}
	from := o.Steps[0].From
	return capiCluster{Name: fleetCluster(roll), Namespace: ns, Version: from, Image: kind.NodeImage(from),
		HAProxyImageRepository: nodeimage.HAProxyRepository, HAProxyImageTag: strings.TrimPrefix(haproxy, nodeimage.HAProxyRepository+"/haproxy:"),
		SyncFrequency: o.SyncFrequency.String(), ControlPlanes: capiControlPlanes, MachineDeployments: capiMDs, InPlace: roll == CAPI}
}

// capiCreate makes the workload cluster through CAPI (its name journaled
// first: the undo removes CAPD's containers), waits for every Machine's
// node, and adopts the containers as the roll's cluster.
func (f *fleetRun) capiCreate(ctx context.Context) error {
	m, c := f.capi.mgmt, f.capi.cluster
	if err := f.Provider.ClaimCluster(ctx, c.Name); err != nil {
		return err
	}
	objs, err := c.objects()
	if err != nil {
		return err
	}
	f.Logf("creating workload cluster %s/%s through Cluster API: %d control-plane machines, %d workers, on %s", c.Namespace, c.Name, c.ControlPlanes, capiWorkers, c.Image)
	start := time.Now()
	if err := kind.Poll(ctx, 2*time.Minute, func() error { return m.kubectl(ctx, "cluster-"+c.Name, objs, "apply", "-f", "-") }); err != nil {
		return err
	}
	want := c.ControlPlanes + capiWorkers
	var kubeconfig []byte
	if err := kind.Poll(ctx, 15*time.Minute, func() error {
		ms, err := m.machines(ctx, c.Namespace, c.Name)
		if err != nil {
			return err
		}
		var nodes int
		for _, mc := range ms {
			if mc.Node != "" {
				nodes++
			}
		}
		if nodes < want {
			return fmt.Errorf("%d of %d machines have a node: %s", nodes, want, machineList(ms))
		}
		kubeconfig, err = m.kubeconfig(ctx, c.Namespace, c.Name)
		return err
	}); err != nil {
		return err
	}
	cl, err := f.Provider.AdoptCluster(ctx, c.Name, kubeconfig)
	if err != nil {
		return err
	}
	if len(cl.Workers()) != capiWorkers || len(cl.ControlPlanes()) != c.ControlPlanes {
		return fmt.Errorf("cluster %s: %d control-plane nodes and %d workers among its containers, want %d and %d", c.Name, len(cl.ControlPlanes()), len(cl.Workers()), c.ControlPlanes, capiWorkers)
	}
	f.Cluster, f.StaticNode = cl, cl.Workers()[0]
	f.Logf("workload cluster %s: %d machines with nodes in %.0fs", c.Name, want, time.Since(start).Seconds())
	// kubeadm's patches set the kubelets' periods at init and join; the
	// ConfigMap kubeadm upgrade writes each node's configuration from
	// must carry them too.
	return kind.Poll(ctx, 2*time.Minute, func() error { return f.syncPeriodsInKubeadm(ctx) })
}

// syncPeriodsInKubeadm writes the kubelets' periods into kubeadm's
// kubelet-config ConfigMap unless there.
func (f *fleetRun) syncPeriodsInKubeadm(ctx context.Context) error {
	cms := f.Cluster.Client.CoreV1().ConfigMaps("kube-system")
	cm, err := cms.Get(ctx, "kubelet-config", metav1.GetOptions{})
	if err != nil {
		return err
	}
	cfg := cm.Data["kubelet"]
	if strings.Contains(cfg, "\nsyncFrequency: "+f.Options.SyncFrequency.String()) {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(cfg, "\n"), "\n") {
		if !strings.HasPrefix(l, "syncFrequency:") && !strings.HasPrefix(l, "fileCheckFrequency:") {
			lines = append(lines, l)
		}
	}
	cm.Data["kubelet"] = strings.Join(append(lines, "syncFrequency: "+f.Options.SyncFrequency.String(), "fileCheckFrequency: 5s"), "\n") + "\n"
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// machineList is a log line of machines, by name.
func machineList(ms map[string]capiMachine) string {
	var names []string
	for n := range ms {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		out = append(out, ms[n].String())
	}
	return strings.Join(out, "; ")
}

// capiDelete deletes the workload Cluster through CAPI (so that CAPD does
// not make its containers again), waiting a while for its containers to
// go; the roll's cluster deletion removes what is left.
func (f *fleetRun) capiDelete(ctx context.Context) {
	m, c := f.capi.mgmt, f.capi.cluster
	if err := m.dyn.Resource(gvrClusters).Namespace(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
		f.Logf("deleting Cluster %s/%s: %v", c.Namespace, c.Name, err)
		return
	}
	err := kind.Poll(ctx, 3*time.Minute, func() error {
		_, err := m.dyn.Resource(gvrClusters).Namespace(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("Cluster %s/%s still there", c.Namespace, c.Name)
		}
		return nil
	})
	if err != nil {
		f.Logf("%v", err)
	}
}

// saveCAPILogs keeps the managers' and the extension's logs.
func (f *fleetRun) saveCAPILogs(ctx context.Context) {
	m := f.capi.mgmt
	for _, ns := range capiNamespaces {
		list, err := m.cluster.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, p := range list.Items {
			out, err := m.cluster.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				out = []byte(err.Error())
			}
			_ = os.WriteFile(filepath.Join(f.Options.LogDir, fmt.Sprintf("%s-%s-%s.log", f.Name, ns, p.Name)), out, 0o644)
		}
	}
}

// capiMachinesJSON is the Machines for the report's logs.
func capiMachinesJSON(ms map[string]capiMachine) []byte {
	b, _ := json.MarshalIndent(ms, "", "  ")
	return b
}

// recordCAPI records a check of a CAPI roll.
func (f *fleetRun) recordCAPI(name string, passed bool, detail string) {
	f.Record(report.Check{Name: f.label() + ": " + name, Passed: passed, Detail: detail})
}

// capiJobSelector selects the extension's Jobs of the roll's target.
func capiJobSelector(version string) string {
	return fmt.Sprintf("%s=%s,%s=%s", manifest.CAPILabelManagedBy, manifest.CAPIManagedBy, manifest.CAPILabelVersion, version)
}
