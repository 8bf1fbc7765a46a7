package kind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/node"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/statuscheck"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/swap"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/images"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	"github.com/kubelet-compat/kubelet-compat/pkg/upstream"
)

// Step is one in-place upgrade: the plan's (package plan).
type Step = plan.Step

// ScenarioOptions configure a kind run: the plan (package plan; the
// patched chain runs on one cluster, each control on a cluster of its own)
// and what kind adds to it.
type ScenarioOptions struct {
	plan.Plan
	// Faults runs the first step once more, patched, on a cluster of its
	// own with faults between and in the kubelets (faults.go).
	Faults bool
	// LogDir receives each node's logs and command output.
	LogDir  string
	Workers int
}

// NodeImage is the node image of a version (package nodeimage).
func NodeImage(version string) string { return "kubelet-compat/kind-node:v" + version }

// Namespaces the snapshots cover: the workloads and the control plane.
var snapshotNamespaces = []string{Namespace, "kube-system"}

// controlPlaneStatics are kubeadm's static pods on the control-plane node.
var controlPlaneStatics = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// kubeadmStaticPod stands for the four for package upstream, which
// predicts a static pod's UID change from the types it instantiates: as
// kubeadm's ComponentPod (cmd/kubeadm/app/util/staticpod/utils.go) writes
// them, hostNetwork, a priority, a pod-level seccompProfile RuntimeDefault
// (from kubeadm 1.22), hostPath volumes, and a container with cpu requests
// (ComponentResources; etcd's memory too) and an httpGet liveness probe.
// No metadata.uid: every minor that changes one of their types recreates
// all four (1.38: SeccompProfile, resource.Quantity).
var kubeadmStaticPod = func() *v1.Pod {
	priority := int32(2000001000)
	dir := v1.HostPathDirectoryOrCreate
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system", Labels: map[string]string{"component": "kube-scheduler", "tier": "control-plane"}},
		Spec: v1.PodSpec{
			HostNetwork: true, Priority: &priority, PriorityClassName: "system-node-critical",
			SecurityContext: &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			Volumes:         []v1.Volume{{Name: "kubeconfig", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/etc/kubernetes/scheduler.conf", Type: &dir}}}},
			Containers: []v1.Container{{
				Name: "kube-scheduler", Image: "registry.k8s.io/kube-scheduler",
				Resources:     v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
				LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Path: "/livez", Port: intstr.FromInt(10259), Scheme: v1.URISchemeHTTPS}}},
				VolumeMounts:  []v1.VolumeMount{{Name: "kubeconfig", MountPath: "/etc/kubernetes/scheduler.conf", ReadOnly: true}},
			}},
		},
	}
}()

// Run runs the controls (each step on a fresh cluster with the unpatched
// kubelet), then the patched chain on one cluster.
func Run(ctx context.Context, p *Provider, o ScenarioOptions, stack *cleanup.Stack, rep *report.Report) error {
	if err := preflight(ctx, p, o); err != nil {
		return err
	}
	if err := checkDisk(ctx, p, o); err != nil {
		return err
	}
	runs := plan.Runs(o.Steps, o.Controls, o.SkipPatched)
	if len(o.RuntimeMoves) > 0 {
		runs = plan.RoadRuns(o.Steps, o.Controls, o.SkipPatched)
	}
	var clusters []ClusterRunner
	for i, r := range runs {
		if !r.Patched {
			clusters = append(clusters, &ClusterRun{Provider: p, Options: o, Report: rep, Name: fmt.Sprintf("kc-e2e-control-%d", i+1), Steps: r.Steps, Patched: false})
			continue
		}
		clusters = append(clusters, &ClusterRun{Provider: p, Options: o, Report: rep, Name: "kc-e2e-patched", Steps: r.Steps, Patched: true})
		if o.Faults {
			clusters = append(clusters, &ClusterRun{Provider: p, Options: o, Report: rep, Name: "kc-e2e-faults", Steps: r.Steps[:1], Patched: true, faults: true})
		}
	}
	return RunClusters(ctx, p, stack, clusters)
}

// ClusterRunner is one cluster's run: a step's control, the patched
// chain, a fleet roll (package fleet, which embeds ClusterRun).
type ClusterRunner interface {
	ClusterName() string
	Run(ctx context.Context, stack *cleanup.Stack) error
}

// ClusterName is the run's cluster's name.
func (r *ClusterRun) ClusterName() string { return r.Name }

// RunClusters checks that every cluster name is free before the first
// cluster is made, then runs the clusters one after the other (each is
// deleted after its run), and fails with every run's error.
func RunClusters(ctx context.Context, p *Provider, stack *cleanup.Stack, runs []ClusterRunner) error {
	var names []string
	for _, r := range runs {
		names = append(names, r.ClusterName())
	}
	if err := p.checkClustersFree(ctx, names); err != nil {
		return err
	}
	var errs []error
	for _, r := range runs {
		errs = append(errs, r.Run(ctx, stack))
	}
	return errors.Join(errs...)
}

// MissingBuilds collects what a preflight found not built yet.
type MissingBuilds []string

// Need records what, unless ok.
func (m *MissingBuilds) Need(ok bool, what string) {
	if !ok {
		*m = append(*m, what)
	}
}

// Err names everything missing and how to build it, or is nil.
func (m MissingBuilds) Err(build string) error {
	if len(m) == 0 {
		return nil
	}
	return fmt.Errorf("not built yet (%s, or run with -kind-images=build): %s", build, strings.Join(m, ", "))
}

// Built says whether a file matches pattern.
func Built(pattern string) bool {
	m, _ := filepath.Glob(pattern)
	return len(m) > 0
}

// preflight checks that every node image, package and image archive the plan
// needs was built, before any cluster is made.
func preflight(ctx context.Context, p *Provider, o ScenarioOptions) error {
	var m MissingBuilds
	need, exists := m.Need, Built
	for i, st := range o.Steps {
		if i == 0 || (o.Controls && len(o.RuntimeMoves) == 0) {
			need(p.Engine.ImageExists(ctx, NodeImage(st.From)), "node image "+NodeImage(st.From))
		}
		// A skip-level step stages every version of the control plane's
		// path on the control-plane node.
		path, err := plan.ControlPlanePath(st)
		if err != nil {
			return err
		}
		for _, v := range path {
			need(exists(filepath.Join(o.Output, "kind", "images", v+".tar")), "images of "+v)
			if !o.SkipPatched {
				need(exists(filepath.Join(nodeimage.PackageDir(o.Output, "patched"), nodeimage.NodePackages(v)[0])), "patched packages of "+v)
			}
			if o.Controls {
				need(exists(filepath.Join(nodeimage.PackageDir(o.Output, "unpatched"), nodeimage.NodePackages(v)[0])), "unpatched packages of "+v)
			}
		}
	}
	for _, mv := range o.RuntimeMoves {
		_, _, err := RuntimeDebs(RuntimeDebDir(o.Output), mv.Step.To)
		need(err == nil, fmt.Sprintf("the runtime packages of %s (%v)", mv.Step.To, err))
	}
	return m.Err("make kind-images")
}

// workloadsOnly keeps the sandboxes and containers of the workloads'
// namespace.
func workloadsOnly(s *snapshot.Snapshot) *snapshot.Snapshot { return s.InNamespace(Namespace) }

// CheckSkew refuses a step whose kubelets would lag the control plane by
// more than upstream's version skew policy allows (package upstream);
// Runner.Check runs it on every step before anything is made.
func CheckSkew(st Step) error {
	from, to := kubelet.Minor(st.From), kubelet.Minor(st.To)
	if to-from > upstream.KubeletSkew(to) {
		return fmt.Errorf("step %s: kubelets 1.%d under a 1.%d control plane are outside upstream's version skew policy (at most %d minors older)", st, from, to, upstream.KubeletSkew(to))
	}
	return nil
}

// ClusterRun is the state the actions of one cluster share: kind's runs
// (a step's control, the patched chain, the faults) and, embedded, the
// fleet's rolls (package fleet). The exported fields are what a roll sets
// up and reads; the rest is the scenario's own.
type ClusterRun struct {
	// Provider, Options and Report are the run's; Name is its cluster's,
	// Steps what it runs there, Patched whether with the patched kubelets
	// (else as released).
	Provider *Provider
	Options  ScenarioOptions
	Report   *report.Report
	Name     string
	Steps    []Step
	Patched  bool
	// faults: the workers' swaps meet faults (swapWithFault), and the
	// extras after the chain are left to the patched run.
	faults bool

	// Cluster is the cluster once Create made it; StaticNode the worker
	// with the corpus's static pods, Statics; Step the step under way.
	Cluster    *Cluster
	Statics    *corpus.Corpus
	StaticNode *Node
	Step       Step
	// label names the step under way in the checks: the kubelet step,
	// or a runtime move of the road.
	label string
	// stepStart is the cluster's snapshot (every node) at the start of
	// the step; apiStart the workloads' pod UIDs in the API.
	stepStart *snapshot.Snapshot
	apiStart  map[string]string
	// applyStart is the cluster's snapshot before the next kubeadm
	// upgrade apply: the step's for its first, nil after one (a
	// skip-level step's next apply takes its own).
	applyStart *snapshot.Snapshot
	// rewritten are the control-plane manifests kubeadm upgrade apply
	// changed in this step.
	rewritten map[string]bool
	// byDesign are the pods kubeadm upgrade apply restarted, reported
	// with the control-plane node's swap.
	byDesign []report.Expectation
	failures []string
}

// Variant is the run's report variant: patched or unpatched kubelets.
func (r *ClusterRun) Variant() string {
	if r.Patched {
		return report.Patched
	}
	return report.Unpatched
}

// Logf logs a line of the run's progress, with the time and the cluster.
func (r *ClusterRun) Logf(format string, args ...interface{}) {
	fmt.Fprintf(r.Options.Log, "%s kind %s: %s\n", time.Now().Format("15:04:05"), r.Name, fmt.Sprintf(format, args...))
}

// Run is the scenario on the cluster: create it, the workloads, each
// step, the extras; then delete it.
func (r *ClusterRun) Run(ctx context.Context, stack *cleanup.Stack) error {
	actions, err := r.actions()
	if err != nil {
		return err
	}
	return r.RunThenDelete(ctx, stack, actions, nil)
}

// actions are the cluster's: the setup, each step (and the road's runtime
// moves under the kubelet it reached, road.go), the extras.
func (r *ClusterRun) actions() ([]Action, error) {
	actions := append(r.setupActions(), r.roadActions(r.Steps[0].From)...)
	for i, st := range r.Steps {
		st := st
		steps, err := r.stepActions(st)
		if err != nil {
			return nil, err
		}
		if prev, ok := leftBehindBefore(r.Steps, i); ok {
			actions = append(actions, Action{fmt.Sprintf("remove the images of %s that %s no longer lists from every node (not pause)", prev.From, prev.To),
				func(r *ClusterRun, ctx context.Context) error { return r.RemoveLeftBehind(ctx, prev.From, prev.To) }},
				Action{fmt.Sprintf("remove the packages of %s from every node (dpkg -r: no longer selected)", prev.From),
					func(r *ClusterRun, ctx context.Context) error { return r.RemovePackages(ctx, prev.From) }})
		}
		actions = append(actions, Action{"step " + st.String() + ": snapshot", func(r *ClusterRun, ctx context.Context) error { return r.startStep(ctx, st) }})
		actions = append(actions, steps...)
		actions = append(actions, Action{"step " + st.String() + ": workloads and the API unchanged", (*ClusterRun).checkStep})
		actions = append(actions, r.roadActions(st.To)...)
	}
	if r.Patched && !r.faults {
		actions = append(actions,
			Action{"a genuine change in the compat window restarts that container", (*ClusterRun).genuineChange},
			Action{"kubelet-compat sweep keeps the file while needed, then deletes it", (*ClusterRun).sweep})
	}
	return actions, nil
}

// setupActions bring the cluster up on Steps[0].From: the cluster, the pod
// network, the workloads and the static pods, every pod Ready.
func (r *ClusterRun) setupActions() []Action {
	return []Action{
		{"create the cluster on " + NodeImage(r.Steps[0].From), (*ClusterRun).Create},
		{"install the pod network", func(r *ClusterRun, ctx context.Context) error { return r.Cluster.InstallCNI(ctx) }},
		{"import the workload images into every node", (*ClusterRun).ImportImages},
		{"create the workloads and the static pods", (*ClusterRun).createWorkloads},
		{"wait until every pod is ready", func(r *ClusterRun, ctx context.Context) error { return r.waitAllReady(ctx, 5*time.Minute) }},
	}
}

// RunThenDelete runs the cluster's actions, then (after done, if set)
// deletes the cluster right away, the next cluster needs the memory, or
// through the stack when the run is interrupted; the failures recorded
// along the way fail it.
func (r *ClusterRun) RunThenDelete(ctx context.Context, stack *cleanup.Stack, actions []Action, done func()) error {
	deleted := false
	stack.Push("delete kind cluster "+r.Name, func(ctx context.Context) error {
		if deleted || r.Cluster == nil {
			return nil
		}
		return r.Cluster.Delete(ctx, false)
	})
	err := runActions(ctx, r, actions)
	if done != nil {
		done()
	}
	if r.Cluster != nil {
		if derr := r.Cluster.Delete(ctx, err != nil || len(r.failures) > 0); derr != nil {
			err = errors.Join(err, fmt.Errorf("deleting cluster %s: %w", r.Name, derr))
		} else {
			deleted = true
		}
	}
	if err == nil && len(r.failures) > 0 {
		err = fmt.Errorf("cluster %s: %s", r.Name, strings.Join(r.failures, "; "))
	}
	return err
}

// stepActions are a step's actions between its snapshot and its check. One
// minor: stage To on every node, kubeadm upgrade apply, then each node's
// kubelet From -> To. Skip-level (plan.Step.SkipLevel): the control plane
// one minor at a time (stage, kubeadm upgrade apply, the control-plane
// node's kubelet), the workers' kubelets staying at From under it, then
// each worker From -> To once.
func (r *ClusterRun) stepActions(st Step) ([]Action, error) {
	path, err := plan.ControlPlanePath(st)
	if err != nil {
		return nil, err
	}
	cp := func(r *ClusterRun) []*Node { return r.Cluster.Nodes[:1] }
	workers := func(r *ClusterRun) []*Node { return r.Cluster.Workers() }
	all := func(r *ClusterRun) []*Node { return r.Cluster.Nodes }
	none := func(r *ClusterRun) []*Node { return nil }
	stage := func(v, where string, nodes, imagesOnly func(*ClusterRun) []*Node) Action {
		return Action{"stage " + v + " on " + where, func(r *ClusterRun, ctx context.Context) error { return r.stage(ctx, v, nodes(r), imagesOnly(r)) }}
	}
	apply := func(v string) Action {
		return Action{"upgrade the control plane (kubeadm upgrade apply v" + v + ")", func(r *ClusterRun, ctx context.Context) error { return r.UpgradeControlPlane(ctx, v) }}
	}
	upgrade := func(i int, ns Step) Action {
		what := "the control-plane node"
		if i > 0 {
			what = fmt.Sprintf("worker %d", i)
		}
		return Action{"upgrade " + what + " " + ns.String(), func(r *ClusterRun, ctx context.Context) error { return r.upgradeNode(ctx, r.Cluster.Nodes[i], ns) }}
	}
	var out []Action
	if !st.SkipLevel() {
		out = append(out, stage(st.To, "every node (.debs, images)", all, none), apply(st.To))
		for i := 0; i <= r.Options.Workers; i++ {
			out = append(out, upgrade(i, st))
		}
		return out, nil
	}
	// The workers get each version's images too: kubeadm upgrade apply
	// rolls kube-proxy's DaemonSet onto them (an operator's registry
	// serves those; here nothing may pull).
	prev := st.From
	for _, v := range path {
		out = append(out, stage(v, "the control-plane node (.debs, images; the workers: images)", cp, workers), apply(v), upgrade(0, Step{From: prev, To: v}))
		prev = v
	}
	out = append(out, stage(st.To, "the workers (.debs, images)", workers, none))
	for i := 1; i <= r.Options.Workers; i++ {
		out = append(out, upgrade(i, st))
	}
	return out, nil
}

// Create creates the cluster of Steps[0].From with Options.Workers
// workers; the first worker is StaticNode.
func (r *ClusterRun) Create(ctx context.Context) error {
	c, err := r.Provider.CreateCluster(ctx, r.Name, r.Steps[0].From, r.Options.Workers, r.Options.SyncFrequency)
	r.Cluster = c
	if err != nil {
		return err
	}
	if len(c.Workers()) != r.Options.Workers {
		return fmt.Errorf("%d workers, want %d", len(c.Workers()), r.Options.Workers)
	}
	r.StaticNode = c.Workers()[0]
	return nil
}

// ImportImages loads the workloads' busybox images into every node's
// containerd (the node images hold only what kubeadm needs).
func (r *ClusterRun) ImportImages(ctx context.Context) error {
	return r.ImportImagesInto(ctx, r.Cluster.Nodes)
}

// ImportImagesInto loads the workloads' images into nodes (a replacement
// machine's new node).
func (r *ClusterRun) ImportImagesInto(ctx context.Context, nodes []*Node) error {
	bb1, err := images.Busybox(corpus.BusyboxImage, hostdeps.Busybox.Name, 1)
	if err != nil {
		return err
	}
	bb2, err := images.Busybox(corpus.BusyboxVariantImage, hostdeps.Busybox.Name, 2)
	if err != nil {
		return err
	}
	layout, _, err := images.Layout(bb1, bb2)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := n.ImportLayout(ctx, layout); err != nil {
			return err
		}
	}
	return nil
}

func (r *ClusterRun) createWorkloads(ctx context.Context) error {
	if err := r.Cluster.CreateWorkloads(ctx, r.Cluster.Workers()[len(r.Cluster.Workers())-1].name); err != nil {
		return err
	}
	r.Statics = StaticPods(r.StaticNode.name)
	return WriteStaticPods(ctx, r.StaticNode, r.Statics)
}

// expectedPods is how many pods the namespaces hold once all run: the
// workloads, the static pods' mirror pods, and kube-system's.
func (r *ClusterRun) waitAllReady(ctx context.Context, timeout time.Duration) error {
	nodes := len(r.Cluster.Nodes)
	want := 2 + 1 + nodes + 1 + len(r.Statics.Pods)
	if _, err := r.Cluster.WaitPodsReady(ctx, timeout, want, Namespace); err != nil {
		return err
	}
	// etcd, apiserver, controller-manager, scheduler, kube-proxy per node,
	// two coredns.
	_, err := r.Cluster.WaitPodsReady(ctx, timeout, 4+nodes+2, "kube-system")
	return err
}

// SnapshotNode is one node's runtime view of the namespaces.
func SnapshotNode(ctx context.Context, n node.Node) (*snapshot.Snapshot, error) {
	rt, err := n.Runtime(ctx)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	all := &snapshot.Snapshot{Taken: time.Now()}
	for _, ns := range snapshotNamespaces {
		s, err := rt.Take(ctx, ns)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name(), err)
		}
		all.Sandboxes = append(all.Sandboxes, s.Sandboxes...)
		all.Containers = append(all.Containers, s.Containers...)
	}
	all.Sort()
	return all, nil
}

// snapshotCluster merges every node's snapshot.
func (r *ClusterRun) snapshotCluster(ctx context.Context) (*snapshot.Snapshot, error) {
	all := &snapshot.Snapshot{Taken: time.Now()}
	for _, n := range r.Cluster.Nodes {
		s, err := SnapshotNode(ctx, n)
		if err != nil {
			return nil, err
		}
		all.Sandboxes = append(all.Sandboxes, s.Sandboxes...)
		all.Containers = append(all.Containers, s.Containers...)
	}
	all.Sort()
	return all, nil
}

func (r *ClusterRun) apiPods(ctx context.Context) (map[string]string, error) {
	list, err := r.Cluster.Client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = string(p.UID)
	}
	return out, nil
}

func (r *ClusterRun) startStep(ctx context.Context, st Step) error {
	r.Step, r.label = st, st.String()
	// One sync period without change before anything moves.
	if err := ctxtime.Sleep(ctx, r.Options.SyncFrequency); err != nil {
		return err
	}
	var err error
	if r.stepStart, err = r.snapshotCluster(ctx); err != nil {
		return err
	}
	r.applyStart = r.stepStart
	r.apiStart, err = r.apiPods(ctx)
	return err
}

// leftBehindBefore is the step before step i whose From's images a node
// no longer needs once it runs that step's To: none before the second
// step, nor after a skip-level step (its control plane's path staged more
// versions, which stay).
func leftBehindBefore(steps []Step, i int) (Step, bool) {
	if i == 0 || steps[i-1].SkipLevel() {
		return Step{}, false
	}
	return steps[i-1], true
}

// RemoveLeftBehind removes from every node the images of v that next's
// kubeadm no longer lists (v's control plane, its etcd, its CoreDNS;
// never a pause: containerd's sandbox image cannot be pulled back without
// a registry, which a first try with crictl rmi --prune found), as an
// operator does between minors: each node imports every step's images
// (about 1 GiB of archives, twice that in containerd), which a long chain
// on three nodes does not leave room for on one machine's disk. An image
// still in use or gone already is left, and logged.
func (r *ClusterRun) RemoveLeftBehind(ctx context.Context, v, next string) error {
	refs, err := nodeimage.LeftBehind(ctx, r.Options.Output, v, next)
	if err != nil || len(refs) == 0 {
		return err
	}
	script := `for r; do crictl --timeout 60s rmi "$r" || echo "left: $r"; done`
	for _, n := range r.Cluster.Nodes {
		if _, err := r.ExecLogged(ctx, n, "remove-images-"+v, append([]string{"sh", "-c", script, "sh"}, refs...)...); err != nil {
			return err
		}
	}
	return nil
}

// RemovePackages removes version v's node packages (dpkg -r) and what was
// staged for them from every node once no stage selects v, as an operator
// removes a version two minors back: each version installed side by side
// holds its kubelet, kubeadm and kubectl (about 200 MiB a node), which a
// road of twenty versions on three nodes does not leave room for. A
// package dpkg will not remove is left, and logged.
func (r *ClusterRun) RemovePackages(ctx context.Context, v string) error {
	script := `v=$1; shift; pkgs=""
for p in "$@"; do dpkg-query -W "$p" >/dev/null 2>&1 && pkgs="$pkgs $p"; done
[ -z "$pkgs" ] || dpkg -r $pkgs || echo "left installed:$pkgs"
rm -rf "/root/kc-e2e-stage/$v"`
	args := append([]string{"sh", "-c", script, "sh", v}, nodeimage.NodePackageNames(v)...)
	for _, n := range r.Cluster.Nodes {
		if _, err := r.ExecLogged(ctx, n, "remove-packages-"+v, args...); err != nil {
			return err
		}
	}
	return nil
}

// stage installs version's .debs next to the running version with dpkg
// and loads its images, on nodes, as an operator pre-stages an upgrade; on
// imagesOnly it loads the images alone. A node that has the images
// already imports them again (ctr skips what it holds).
func (r *ClusterRun) stage(ctx context.Context, version string, nodes, imagesOnly []*Node) error {
	variant := "patched"
	if !r.Patched {
		variant = "unpatched"
	}
	imageTar := filepath.Join(r.Options.Output, "kind", "images", version+".tar")
	envFile := layout.EnvFile(layout.Deb)
	for _, n := range nodes {
		if err := r.InstallDebs(ctx, n, variant, version); err != nil {
			return err
		}
		// The new kubelet logs each container it keeps at V(2): the
		// report counts those lines. Only the swapped-in kubelet reads it.
		if _, err := n.Exec(ctx, nil, "sed", "-i", "s/^KUBELET_EXTRA_ARGS=$/KUBELET_EXTRA_ARGS=--v=2/", envFile); err != nil {
			return fmt.Errorf("%s: kubelet verbosity: %w", n.name, err)
		}
	}
	for _, n := range append(append([]*Node(nil), nodes...), imagesOnly...) {
		f, err := os.Open(imageTar)
		if err != nil {
			return fmt.Errorf("%w (make kind-images)", err)
		}
		_, err = n.Exec(ctx, f, "ctr", "-n", "k8s.io", "images", "import", "-")
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: importing %s: %w", n.name, imageTar, err)
		}
	}
	return nil
}

// InstallDebs installs version's node packages of variant (patched,
// unpatched) next to the running version with dpkg -i, as an operator
// stages an upgrade.
func (r *ClusterRun) InstallDebs(ctx context.Context, n *Node, variant, version string) error {
	dir := nodeimage.PackageDir(r.Options.Output, variant)
	stageDir := "/root/kc-e2e-stage/" + version
	if _, err := n.Exec(ctx, nil, "mkdir", "-p", stageDir); err != nil {
		return err
	}
	var paths []string
	for _, glob := range nodeimage.NodePackages(version) {
		m, err := filepath.Glob(filepath.Join(dir, glob))
		if err != nil {
			return err
		}
		if len(m) != 1 {
			return fmt.Errorf("want one %s in %s, found %d (make kind-images)", glob, dir, len(m))
		}
		if err := r.Provider.Engine.Command("cp", m[0], n.name+":"+stageDir+"/").Run(ctx); err != nil {
			return err
		}
		paths = append(paths, stageDir+"/"+filepath.Base(m[0]))
	}
	_, err := r.ExecLogged(ctx, n, "dpkg-install-"+version, append([]string{"dpkg", "-i"}, paths...)...)
	return err
}

// readManifests reads the control-plane node's static pod manifests.
func (r *ClusterRun) readManifests(ctx context.Context) (map[string][]byte, error) {
	cp := r.Cluster.ControlPlane()
	out := map[string][]byte{}
	for _, name := range controlPlaneStatics {
		b, err := cp.ReadFile(ctx, StaticPodDir+"/"+name+".yaml")
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

// NodeLog keeps a command's output on node n in the run's logs
// (<LogDir>/<cluster>/<node>-<what>.log).
func (r *ClusterRun) NodeLog(n *Node, what string, out []byte) {
	path := filepath.Join(r.Options.LogDir, r.Name, n.name+"-"+what+".log")
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, out, 0o644)
}

// ExecLogged runs a command on a node, keeping its output in the logs.
func (r *ClusterRun) ExecLogged(ctx context.Context, n *Node, what string, args ...string) ([]byte, error) {
	out, err := n.Exec(ctx, nil, append([]string{"sh", "-c", `exec "$@" 2>&1`, "sh"}, args...)...)
	r.NodeLog(n, what, out)
	if err != nil {
		return out, fmt.Errorf("%s: %s: %w (see %s)", n.name, strings.Join(args, " "), err, filepath.Join(r.Options.LogDir, r.Name, n.name+"-"+what+".log"))
	}
	return out, nil
}

// UpgradeControlPlane is kubeadm upgrade apply v<version> on the
// control-plane node (stage1 selected, etcd bridged first), then the
// rollouts, every pod ready, and the check that it restarted only what it
// changed (reported under Step).
func (r *ClusterRun) UpgradeControlPlane(ctx context.Context, version string) error {
	cp := r.Cluster.ControlPlane()
	if err := r.bridgeEtcd(ctx, version); err != nil {
		return err
	}
	before, err := r.readManifests(ctx)
	if err != nil {
		return err
	}
	kubeletBefore, err := readKubeadmFiles(ctx, cp)
	if err != nil {
		return err
	}
	// What restarts from here on restarts because of kubeadm. Staging
	// restarts nothing, so the step's snapshot serves its first apply.
	start := r.applyStart
	if start == nil {
		if start, err = r.snapshotCluster(ctx); err != nil {
			return err
		}
	}
	r.applyStart = nil
	force, err := r.forceArgs(ctx, version)
	if err != nil {
		return err
	}
	if kubelet.Minor(version) >= failCgroupV1Default {
		set, err := r.Cluster.allowCgroupV1(ctx)
		if err != nil {
			return fmt.Errorf("kubelet-config: failCgroupV1: %w", err)
		}
		if set {
			r.Logf("kubelet-config: failCgroupV1: false set before the first kubelet of 1.%d or later (cgroup v1 nodes)", failCgroupV1Default)
		}
	}
	if _, err := r.ExecLogged(ctx, cp, "select-stage1-"+version, "kubernetes-select", "stage1", version); err != nil {
		return err
	}
	apply := append(append([]string{"kubeadm", "upgrade", "apply", "v" + version, "--yes", "--v=1"}, CgroupV1PreflightArgs(version)...), force...)
	applyOut, err := r.ExecLogged(ctx, cp, "kubeadm-upgrade-apply-"+version, apply...)
	if err != nil {
		return err
	}
	restartedByKubeadm := kubeadmRestartedStatics(applyOut)
	after, err := r.readManifests(ctx)
	if err != nil {
		return err
	}
	kubeletAfter, err := readKubeadmFiles(ctx, cp)
	if err != nil {
		return err
	}
	r.rewritten = map[string]bool{}
	var rewritten, untouched []string
	for _, name := range controlPlaneStatics {
		if bytes.Equal(before[name], after[name]) {
			untouched = append(untouched, name)
		} else {
			r.rewritten[name] = true
			rewritten = append(rewritten, name)
		}
	}
	r.Logf("kubeadm upgrade apply v%s rewrote %v, left %v untouched", version, rewritten, untouched)
	r.kubeadmChanged(cp, "kubeadm upgrade apply v"+version, rewritten, kubeletBefore, kubeletAfter)
	if err := r.waitRollouts(ctx, 5*time.Minute); err != nil {
		return err
	}
	if err := r.waitAllReady(ctx, 5*time.Minute); err != nil {
		return err
	}
	now, err := r.snapshotCluster(ctx)
	if err != nil {
		return err
	}
	r.checkApplyRestarts(version, snapshot.Compare(start, now), rewritten, untouched, restartedByKubeadm)
	return nil
}

// checkApplyRestarts: what restarted since the step began restarted by
// design (kubeadm rewrote its manifest or updated its DaemonSet or
// Deployment); a static pod whose manifest it left alone must not have
// moved, nor any workload. The pods restarted by design are reported with
// the control-plane node's swap.
func (r *ClusterRun) checkApplyRestarts(version string, diff snapshot.Diff, rewritten, untouched []string, restartedByKubeadm map[string]bool) {
	check := report.Check{Name: fmt.Sprintf("%s %s: kubeadm upgrade apply v%s restarts only what it changed", r.Name, r.Step, version), Passed: true}
	var byDesign []string
	r.byDesign = nil
	for _, pod := range diff.RestartedPods {
		name := podBase(pod)
		switch {
		case strings.HasPrefix(pod, Namespace+"/"):
			check.Passed = false
			byDesign = append(byDesign, pod+" (a workload!)")
		case isStatic(name) && !r.rewritten[staticName(name)] && !restartedByKubeadm[staticName(name)]:
			check.Passed = false
			byDesign = append(byDesign, pod+" (manifest untouched!)")
		case isStatic(name) && !r.rewritten[staticName(name)]:
			byDesign = append(byDesign, pod+" (manifest unchanged, restarted by kubeadm)")
			r.byDesign = append(r.byDesign, report.Expectation{Pod: pod, Reason: "kubeadm upgrade apply restarted it with its manifest unchanged (it renewed its certificates)"})
		default:
			byDesign = append(byDesign, pod)
			r.byDesign = append(r.byDesign, report.Expectation{Pod: pod, Reason: byDesignReason(name)})
		}
	}
	check.Detail = fmt.Sprintf("rewritten manifests: %s; untouched: %s; restarted: %s", list(rewritten), list(untouched), list(byDesign))
	r.Report.Checks = append(r.Report.Checks, check)
	if !check.Passed {
		r.failures = append(r.failures, check.Name+": "+check.Detail)
	}
}

// waitRollouts waits for kube-proxy's DaemonSet and coredns's Deployment,
// which kubeadm upgrade apply updates.
func (r *ClusterRun) waitRollouts(ctx context.Context, timeout time.Duration) error {
	cs := r.Cluster.Client
	return Poll(ctx, timeout, func() error {
		ds, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ds.Status.ObservedGeneration < ds.Generation || ds.Status.UpdatedNumberScheduled != ds.Status.DesiredNumberScheduled || ds.Status.NumberAvailable != ds.Status.DesiredNumberScheduled {
			return fmt.Errorf("kube-proxy: %d/%d updated, %d available", ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled, ds.Status.NumberAvailable)
		}
		d, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want || d.Status.AvailableReplicas != want || d.Status.Replicas != want {
			return fmt.Errorf("coredns: %d/%d updated, %d available, %d in all", d.Status.UpdatedReplicas, want, d.Status.AvailableReplicas, d.Status.Replicas)
		}
		return nil
	})
}

// WaitControlPlane waits, as operators do before they go on, until the
// control plane serves again: after the released kubelet recreated the
// static pods under new UIDs, or etcd restarted under the API server. An
// API server whose authorizers have not synced yet refuses kubernetes-admin
// (seen: "cannot get resource configmaps ... kubeadm-config", "cannot
// list resource nodes").
func (r *ClusterRun) WaitControlPlane(ctx context.Context) error {
	if err := Poll(ctx, 5*time.Minute, func() error {
		_, err := r.Cluster.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return fmt.Errorf("the API server's /readyz: %w", err)
	}
	_, err := r.Cluster.WaitPodsReady(ctx, 5*time.Minute, 4+len(r.Cluster.Nodes)+2, "kube-system")
	return err
}

// upgradeNode is what an operator does on each node: kubeadm upgrade node
// (workers; the control-plane node had upgrade apply), kubelet-compat
// record, the kubelet swapped by kubernetes-select, kubelet-compat status;
// with o.Readiness the readiness watchers run from before record until
// after status, and the node's pods are reported (readiness.go).
func (r *ClusterRun) upgradeNode(ctx context.Context, n *Node, st Step) error {
	if n.role != "control-plane" {
		if err := r.upgradeNodeConfig(ctx, n, st); err != nil {
			return err
		}
	}
	// The readiness watchers cover the whole swap: from before record
	// until after the checks below.
	var watch *readiness.Watch
	if r.Options.Readiness {
		var err error
		if watch, err = r.watchReadiness(ctx, n); err != nil {
			return err
		}
		// Whatever ends the swap early stops the informers.
		defer func() {
			if watch != nil {
				watch.End()
			}
		}()
	}
	h := r.nodeBack(n)
	k := node.Kubelet{Version: st.To, Patched: r.Patched, SkipLevel: st.SkipLevel()}
	res, err := swap.Run(ctx, kindNode{r: r, n: n, to: st.To}, r.swapTo(n, k), h)
	if err != nil {
		return err
	}
	// What the operator reads (with the API pods' specs through the
	// kubelet's credentials, as on a kubeadm node) must say what the
	// patched kubelet did: every legacy container kept (on a step that
	// changes every hash, each container the node ran is one).
	status, statusErr := n.Exec(ctx, nil, "kubelet-compat", "status", "-o", "json", "--kubeconfig", "/etc/kubernetes/kubelet.conf")
	r.NodeLog(n, "status-"+st.To, status)
	if r.Patched {
		from, to := kubelet.Minor(st.From), kubelet.Minor(st.To)
		r.Record(statuscheck.Check(fmt.Sprintf("%s %s %s: kubelet-compat status keeps what the kubelet kept", r.Name, n.name, st), status, statusErr, crossesNameImageHash(from, to)))
	}
	kept := 0
	if out, err := n.Exec(ctx, nil, "journalctl", "-u", "kubelet", "--since", "@"+fmt.Sprint(res.Started.Unix()), "-o", "cat", "--no-pager"); err == nil {
		kept = bytes.Count(out, []byte(kubelet.KeptMessage))
		r.NodeLog(n, "kubelet-"+st.To, out)
	}
	var ready []report.ReadyGroup
	if watch != nil {
		ready = r.endReadiness(ctx, watch, n, res.Started)
		watch = nil
	}
	run := r.swapRun(res, n, st.String(), st.From, st.To)
	run.KeptLogLines, run.Readiness = kept, ready
	return r.judgeNodeRun(ctx, n, st, run)
}

// upgradeNodeConfig is a worker's part before its swap: stage1 on the
// target, then kubeadm upgrade node (the kubelet's configuration).
func (r *ClusterRun) upgradeNodeConfig(ctx context.Context, n *Node, st Step) error {
	if _, err := r.ExecLogged(ctx, n, "select-stage1-"+st.To, selectArgs(st.SkipLevel(), "stage1", st.To)...); err != nil {
		return err
	}
	before, err := readKubeadmFiles(ctx, n)
	if err != nil {
		return err
	}
	upgrade := append([]string{"kubeadm", "upgrade", "node", "--v=1"}, CgroupV1PreflightArgs(st.To)...)
	if _, err := r.ExecLogged(ctx, n, "kubeadm-upgrade-node-"+st.To, upgrade...); err != nil {
		return err
	}
	after, err := readKubeadmFiles(ctx, n)
	if err != nil {
		return err
	}
	r.kubeadmChanged(n, "kubeadm upgrade node v"+st.To, nil, before, after)
	return nil
}

// judgeNodeRun asserts a node's swap (the patched kubelet keeps all; the
// control loses what upstream loses) and its readiness, and reports them.
func (r *ClusterRun) judgeNodeRun(ctx context.Context, n *Node, st Step, run report.Run) error {
	if n.role == "control-plane" {
		run.ByDesign = r.byDesign
	}
	if r.Patched {
		report.AssertPatched(&run)
	} else {
		pods, err := r.nodePods(ctx, n)
		if err != nil {
			return err
		}
		run.Expected = r.expectations(n, st, pods)
		report.AssertControl(&run)
	}
	r.addRun(run, st.String())
	for _, c := range nodeReadinessChecks(fmt.Sprintf("%s %s %s", r.Name, n.name, st), r.Variant(), kubelet.Minor(st.To), run.Readiness) {
		status := "pass"
		if !c.Passed {
			status = "FAIL"
		}
		r.Logf("check %q: %s: %s", c.Name, status, c.Detail)
		r.Record(c)
	}
	return nil
}

// nodeBack are the swap sequence's hooks every swap of a kind node
// shares (the kubelet's, the runtime's): the node back (waitNodeSettled),
// then three sync periods: anything the new part restarts, it has by then.
func (r *ClusterRun) nodeBack(n *Node) swap.Hooks {
	return swap.Hooks{
		Wait: func(ctx context.Context, before *snapshot.Snapshot, started time.Time) (time.Time, error) {
			window, err := r.waitNodeSettled(ctx, n, before, started, 4*time.Minute)
			return started.Add(window), err
		},
		Settle: swap.SettleFor(3 * r.Options.SyncFrequency),
	}
}

// swapRun is the report's run of one node's swap sequence.
func (r *ClusterRun) swapRun(res *swap.Result, n *Node, step, from, to string) report.Run {
	return report.Run{Step: step, From: from, To: to, Variant: r.Variant(), Node: n.name,
		Pods: res.Diff.Pods, Containers: res.Diff.Containers, Restarts: res.Diff.Restarts, RecreatedPods: res.Diff.RecreatedPods,
		WindowSeconds: res.Window.Seconds(), Diff: res.Diff}
}

// addRun reports a judged run, logs it, and fails the cluster's run when
// it did not pass.
func (r *ClusterRun) addRun(run report.Run, step string) {
	r.Report.Runs = append(r.Report.Runs, run)
	r.Logf("%s: %s %s: %d restarts, %d recreated pods, window %.1fs: %s", run.Node, step, r.Variant(), run.Restarts, run.RecreatedPods, run.WindowSeconds, run.Verdict)
	if !run.Passed {
		r.failures = append(r.failures, fmt.Sprintf("%s %s %s: %s", run.Node, step, r.Variant(), run.Verdict))
	}
}

// kindNode is a kind node as the swap sequence's node.
type kindNode struct {
	r  *ClusterRun
	n  *Node
	to string
}

func (k kindNode) Record(ctx context.Context) error {
	_, err := k.r.ExecLogged(ctx, k.n, "record-"+k.to, "kubelet-compat", "record", "--kubeconfig", "/etc/kubernetes/kubelet.conf")
	return err
}

func (k kindNode) Snapshot(ctx context.Context) (*snapshot.Snapshot, error) {
	return SnapshotNode(ctx, k.n)
}

// swapTo swaps n's kubelet for k (with the cluster's faults); the sequence
// starts when the swap begins.
func (r *ClusterRun) swapTo(n *Node, k node.Kubelet) swap.Swapper {
	return func(ctx context.Context) (time.Time, error) {
		start := time.Now()
		return start, r.swap(ctx, n, k)
	}
}

// expectations are the pods of n that upstream's kubelet restarts on the
// step (package upstream, which preflight also reads): kubeadm's
// control-plane static pods (they have no metadata.uid) when the UID
// derivation changes or their containers' hash does, the corpus's pods,
// and the API pods of the node when the step crosses the {name, image}
// hash of 1.31 (every container restarts). API pods restart for no other
// hash change: the older API server that created them dropped the fields
// its minor does not know (measured on 1.18 -> 1.21).
// apiPods are the pods of the snapshot's namespaces (any node).
func (r *ClusterRun) expectations(n *Node, st Step, apiPods []v1.Pod) []report.Expectation {
	from, to := kubelet.Minor(st.From), kubelet.Minor(st.To)
	var out []report.Expectation
	if n.role == "control-plane" {
		uid := upstream.StaticPodUIDFor(kubeadmStaticPod, from, to).ControlReason()
		for _, name := range controlPlaneStatics {
			pod := "kube-system/" + name + "-" + n.name
			switch {
			case uid != "":
				out = append(out, report.Expectation{Pod: pod, Reason: "static pod without metadata.uid: " + uid})
			case crossesNameImageHash(from, to):
				out = append(out, report.Expectation{Pod: pod, Reason: nameImageReason})
			}
		}
	}
	if n == r.StaticNode {
		for _, e := range r.Statics.UpstreamRestarts(from, to) {
			out = append(out, report.Expectation{Pod: e.Pod, Reason: e.Reason})
		}
	}
	if crossesNameImageHash(from, to) {
		for _, p := range apiPods {
			if _, mirror := p.Annotations[v1.MirrorPodAnnotationKey]; mirror || p.Spec.NodeName != n.name {
				continue // static: above
			}
			out = append(out, report.Expectation{Pod: p.Namespace + "/" + p.Name, Reason: nameImageReason})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// nodePods lists the pods of the snapshot's namespaces on n, retrying for
// two minutes: on the control-plane node an unpatched kubelet recreates
// kube-apiserver, which may still be restarting (a list then ends in EOF).
func (r *ClusterRun) nodePods(ctx context.Context, n *Node) ([]v1.Pod, error) {
	var out []v1.Pod
	err := Poll(ctx, 2*time.Minute, func() error {
		out = nil
		for _, ns := range snapshotNamespaces {
			list, err := r.Cluster.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name})
			if err != nil {
				return err
			}
			out = append(out, list.Items...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: listing its pods: %w", n.name, err)
	}
	return out, nil
}

// nameImageReason is why every container restarts from 1.31 on.
var nameImageReason = fmt.Sprintf("container hash is the {name, image} hash from 1.%d: every container restarts", upstream.NameImageHashMinor)

func crossesNameImageHash(from, to int) bool {
	return from < upstream.NameImageHashMinor && to >= upstream.NameImageHashMinor
}

// waitNodeSettled waits until the new kubelet has reported the node Ready
// after start, every API pod of the node is Ready again, and the runtime
// runs every pod that ran before; it returns the time since start.
func (r *ClusterRun) waitNodeSettled(ctx context.Context, n *Node, before *snapshot.Snapshot, start time.Time, timeout time.Duration) (time.Duration, error) {
	var settled time.Time
	err := Poll(ctx, timeout, func() error {
		nd, err := r.Cluster.Client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := false
		for _, c := range nd.Status.Conditions {
			if c.Type == v1.NodeReady {
				ready = c.Status == v1.ConditionTrue && c.LastHeartbeatTime.Time.After(start.Add(-time.Second))
			}
		}
		if !ready {
			return fmt.Errorf("node %s not Ready since the swap", n.name)
		}
		for _, ns := range snapshotNamespaces {
			list, err := r.Cluster.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name})
			if err != nil {
				return err
			}
			for _, p := range list.Items {
				if !podReady(&p) {
					return fmt.Errorf("pod %s/%s not ready", ns, p.Name)
				}
			}
		}
		now, err := SnapshotNode(ctx, n)
		if err != nil {
			return err
		}
		for _, pod := range before.Pods() {
			if _, ok := now.ReadySandbox(pod); !ok {
				return fmt.Errorf("%s has no ready sandbox", pod)
			}
			if len(now.Running(pod)) < len(before.Running(pod)) {
				return fmt.Errorf("%s runs %d of %d containers", pod, len(now.Running(pod)), len(before.Running(pod)))
			}
		}
		settled = time.Now()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%s after the swap: %w", n.name, err)
	}
	return settled.Sub(start), nil
}

// checkStep compares the whole cluster's workloads with the step's start:
// the runtime (every node) and the API (pod names and UIDs).
func (r *ClusterRun) checkStep(ctx context.Context) error {
	now, err := r.snapshotCluster(ctx)
	if err != nil {
		return err
	}
	diff := snapshot.Compare(workloadsOnly(r.stepStart), workloadsOnly(now))
	api, err := r.apiPods(ctx)
	if err != nil {
		return err
	}
	var gone, changed, added []string
	for name, uid := range r.apiStart {
		now, ok := api[name]
		switch {
		case !ok:
			gone = append(gone, name)
		case now != uid:
			changed = append(changed, name)
		}
	}
	for name := range api {
		if _, ok := r.apiStart[name]; !ok {
			added = append(added, name)
		}
	}
	sort.Strings(gone)
	sort.Strings(changed)
	sort.Strings(added)
	versions, err := r.kubeletVersions(ctx)
	if err != nil {
		return err
	}
	detail := fmt.Sprintf("runtime, every node: %d pods, %d containers, %d restarts, %d recreated (%s); API: %d pods, deleted %s, new UID %s, new %s; kubelets %s",
		diff.Pods, diff.Containers, diff.Restarts, diff.RecreatedPods, list(diff.RestartedPods), len(r.apiStart), list(gone), list(changed), list(added), versions)
	check := report.Check{Name: fmt.Sprintf("%s %s %s: workloads over the whole step", r.Name, r.label, r.Variant()), Detail: detail}
	want := "v" + r.Step.To
	versionsOK := true
	for _, v := range strings.Split(versions, " ") {
		if !strings.HasPrefix(v, want) || strings.Contains(v, "+compat.") != r.Patched {
			versionsOK = false
		}
	}
	if r.Patched {
		check.Passed = diff.Restarts == 0 && diff.RecreatedPods == 0 && len(gone)+len(changed)+len(added) == 0 && diff.Pods > 0 && versionsOK
	} else {
		// Reported; the per-node runs assert what upstream restarts.
		check.Passed = versionsOK
		check.Detail = "reported: " + detail
	}
	r.Report.Checks = append(r.Report.Checks, check)
	if !check.Passed {
		r.failures = append(r.failures, check.Name+": "+detail)
	}
	return nil
}

func (r *ClusterRun) kubeletVersions(ctx context.Context) (string, error) {
	list, err := r.Cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	var vs []string
	for _, n := range list.Items {
		vs = append(vs, n.Status.NodeInfo.KubeletVersion)
	}
	sort.Strings(vs)
	return strings.Join(vs, " "), nil
}

// kubeadmRestartedStatics are the control-plane components whose static
// pod kubeadm upgrade apply says it restarted. It does so with an
// unchanged manifest too: when the component's version stays (etcd across
// 1.31 -> 1.32 -> 1.33) it still renews its certificates and restarts it
// ("[upgrade/staticpods] Restarting the etcd static pod ...").
func kubeadmRestartedStatics(out []byte) map[string]bool {
	got := map[string]bool{}
	for _, c := range controlPlaneStatics {
		if bytes.Contains(out, []byte("Restarting the "+c+" static pod")) {
			got[c] = true
		}
	}
	return got
}

// byDesignReason says why kubeadm upgrade apply restarted a kube-system pod.
func byDesignReason(name string) string {
	switch {
	case isStatic(name):
		return "kubeadm upgrade apply rewrote its manifest"
	case strings.HasPrefix(name, "kube-proxy-"):
		return "kubeadm upgrade apply updated the kube-proxy DaemonSet"
	case strings.HasPrefix(name, "coredns-"):
		return "kubeadm upgrade apply updated the CoreDNS Deployment"
	}
	return "restarted during kubeadm upgrade apply"
}

// podBase is the pod name of namespace/name.
func podBase(pod string) string {
	if i := strings.IndexByte(pod, '/'); i >= 0 {
		return pod[i+1:]
	}
	return pod
}

func isStatic(name string) bool { return staticName(name) != "" }

// staticName maps kube-system/<component>-<node> to the component.
func staticName(name string) string {
	for _, s := range controlPlaneStatics {
		if strings.HasPrefix(name, s+"-") {
			return s
		}
	}
	return ""
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, " ")
}
