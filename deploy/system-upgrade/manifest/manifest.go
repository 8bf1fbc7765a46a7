// Package manifest is what the fleet roll applies to a cluster: the
// system-upgrade-controller's manifest, the Plans that run kc-roll on every
// node, and the Job SUC makes of a Plan for one node. It imports no
// container runtime (package systemupgrade builds images with containerd's
// packages), so the Cluster API extension (deploy/cluster-api), a module of
// its own, builds the same Job from here.
package manifest

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-compat/kubelet-compat/pkg/etcdbridge"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimecompat"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// Names shared by the manifests, the Plans and the Job (kc-roll).
const (
	// SUCVersion is the system-upgrade-controller release the manifests
	// name and whose Jobs NodeJob makes (package systemupgrade builds it).
	SUCVersion = "v0.20.1"
	// RollPath is where the upgrade image holds the Job's program, kc-roll
	// (cmd/kc-roll, the engine of package roll).
	RollPath           = "/bin/kc-roll"
	Namespace          = "system-upgrade"
	ServiceAccount     = "system-upgrade"
	ControlPlanePlan   = "kubelet-compat-control-plane"
	WorkersPlan        = "kubelet-compat-workers"
	ControllerImageRef = "kubelet-compat.local/system-upgrade-controller:" + SUCVersion
	// UpgradeImageName is the upgrade image without a tag: the controller
	// tags it with the Plan's version (kubelet-compat.local/system-upgrade/upgrade:1.31.14).
	UpgradeImageName = "kubelet-compat.local/system-upgrade/upgrade"
	// The naive roll's Plans and image (Options.Naive): the in-place roll
	// k3s and rke2 users run today, with the packages as released.
	NaiveControlPlanePlan = "naive-control-plane"
	NaiveWorkersPlan      = "naive-workers"
	NaiveImageName        = "kubelet-compat.local/system-upgrade/naive"
	controlPlaneRole      = "node-role.kubernetes.io/control-plane"
	// RetryAnnotation is the operator's retry of a node whose Job failed
	// (README, "Retrying a node"): SUC creates a failed Job again only
	// when its Plan changes after the Job is gone, and this annotation
	// changes the Plan without changing its hash.
	RetryAnnotation = "kubelet-compat.io/retry"
)

// Options are everything the Plans can be told; one value of it is one
// roll-out.
type Options struct {
	// Version is the target Kubernetes version, e.g. 1.31.14.
	Version string
	// Concurrency is how many workers upgrade at once (the control plane:
	// always 1).
	Concurrency int64
	// Cordon makes the controller cordon each node before its Job and
	// uncordon it after (never drain).
	Cordon bool
	// AllowLoss lets a node go on when preflight says the patched kubelet
	// would still lose a container or a pod.
	AllowLoss bool
	// GateTimeout is how long the health gate waits for the node and its
	// pods to be Ready, in seconds.
	GateTimeout int
	// JobDeadline bounds each node's Job, in seconds.
	JobDeadline int64
	// JobTTL is how long SUC keeps a finished Job, in seconds (0: SUC's
	// 900). SUC creates a failed node's Job again once it has deleted it:
	// the TTL is also the pause between two runs on a failed node.
	JobTTL int64
	// Naive makes the Plans the naive in-place roll (the e2e's anchor,
	// issue 33 section 6): NaiveImageName's Jobs run kc-roll naive (the
	// packages, kubeadm, the kubelet swapped and restarted; no preflight,
	// no record, no gate, no rollback). AllowLoss and GateTimeout do not
	// apply.
	Naive bool
	// EtcdBridgeImage is the bridge etcd's image (a 3.6 of 3.6.11 or
	// later, e.g. registry.k8s.io/etcd:3.6.16-0) for the control-plane
	// Plan's Jobs (KC_ETCD_BRIDGE_IMAGE): a node whose kubeadm step moves
	// its etcd from 3.6 to 3.7 runs kubelet-compat etcd-bridge with it
	// first; without it such a step is refused. Not for the naive roll.
	EtcdBridgeImage string
	// KubeadmArgs are more arguments for kubeadm upgrade apply and node
	// (KC_KUBEADM_ARGS, every Plan's Jobs): a cgroup v1 fleet needs
	// --ignore-preflight-errors=SystemVerification from 1.35, whose
	// kubeadm refuses cgroup v1 in that check.
	KubeadmArgs []string
	// Runtime is the containerd every node's Job selects before the
	// kubelet (KC_RUNTIME, NAME@VERSION of the runtime builds, e.g.
	// containerd@1.7.35; its runtime-containerd-VERSION package must be on
	// the node): kc-roll runs runtime-select --restart-containerd, gates
	// the node as it gates the kubelet's swap, then swaps the kubelet. Empty:
	// no runtime step. Not for the naive roll.
	Runtime string
	// Image is the upgrade image, untagged, where it is not UpgradeImageName
	// (NaiveImageName for the naive roll): the Cluster API extension's
	// -upgrade-image. The generator leaves it empty.
	Image string
}

// kubeadmArg is a flag the script's word splitting passes as it is: no
// spaces, quotes, globs or shell syntax.
var kubeadmArg = regexp.MustCompile(`^--[a-z][a-z0-9-]*(=[A-Za-z0-9.,:/_-]*)?$`)

// PlanNames are the control-plane Plan's and the workers' Plan's names.
func (o Options) PlanNames() (controlPlane, workers string) {
	if o.Naive {
		return NaiveControlPlanePlan, NaiveWorkersPlan
	}
	return ControlPlanePlan, WorkersPlan
}

// ImageName is the Plans' upgrade image, untagged (the controller tags it
// with the Plan's version).
func (o Options) ImageName() string {
	if o.Image != "" {
		return o.Image
	}
	if o.Naive {
		return NaiveImageName
	}
	return UpgradeImageName
}

// DefaultOptions are the defaults of the generator's flags.
func DefaultOptions(version string) Options {
	return Options{Version: version, Concurrency: 1, GateTimeout: 300, JobDeadline: 1800}
}

// Plan is upgrade.cattle.io/v1 Plan, the fields used here (their JSON
// names are SUC's, pkg/apis/upgrade.cattle.io/v1/types.go at SUCVersion).
type Plan struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       PlanSpec          `json:"spec"`
}

// PlanSpec is upgrade.cattle.io/v1 PlanSpec, the fields used here.
type PlanSpec struct {
	Concurrency           int64                 `json:"concurrency"`
	JobActiveDeadlineSecs int64                 `json:"jobActiveDeadlineSecs,omitempty"`
	NodeSelector          *metav1.LabelSelector `json:"nodeSelector"`
	ServiceAccountName    string                `json:"serviceAccountName"`
	Version               string                `json:"version"`
	Tolerations           []corev1.Toleration   `json:"tolerations,omitempty"`
	Prepare               *ContainerSpec        `json:"prepare,omitempty"`
	Upgrade               *ContainerSpec        `json:"upgrade"`
	Cordon                bool                  `json:"cordon,omitempty"`
}

// ContainerSpec is upgrade.cattle.io/v1 ContainerSpec, the fields used here.
type ContainerSpec struct {
	Image   string          `json:"image"`
	Command []string        `json:"command,omitempty"`
	Args    []string        `json:"args,omitempty"`
	Env     []corev1.EnvVar `json:"envs,omitempty"`
}

func (o Options) validate() error {
	if v, err := versions.ParseKubernetes(o.Version); err != nil || v.Major != 1 || v.PreRelease() != "" {
		return fmt.Errorf("version %q: want 1.MINOR.PATCH", o.Version)
	}
	if o.Concurrency < 1 {
		return fmt.Errorf("concurrency %d: want at least 1", o.Concurrency)
	}
	if o.GateTimeout < 1 {
		return fmt.Errorf("gate timeout %d: want at least 1 second", o.GateTimeout)
	}
	if o.EtcdBridgeImage != "" {
		rel, err := etcdbridge.ImageRelease(o.EtcdBridgeImage)
		switch {
		case err != nil:
			return fmt.Errorf("etcd bridge image %q: want a tagged etcd image: %v", o.EtcdBridgeImage, err)
		case rel.Minor != 6 || rel.Below(etcdbridge.MinRelease):
			return fmt.Errorf("etcd bridge image %q: want a 3.6 etcd of %s or later", o.EtcdBridgeImage, etcdbridge.MinRelease)
		}
	}
	for _, a := range o.KubeadmArgs {
		if !kubeadmArg.MatchString(a) {
			return fmt.Errorf("kubeadm argument %q: want --flag or --flag=value (letters, digits, . , : / _ -)", a)
		}
	}
	if o.Runtime != "" && !slices.Contains(runtimecompat.Steps, o.Runtime) {
		return fmt.Errorf("runtime %q: want one of %s (the runtime builds: make runtime, runtime-containerd-VERSION packages)", o.Runtime, strings.Join(runtimecompat.Steps, ", "))
	}
	if o.Image != "" && (withTag(o.Image, "x") == o.Image || strings.ContainsAny(o.Image, " \t\n")) {
		return fmt.Errorf("upgrade image %q: want an image name without a tag (the Job tags it with the version)", o.Image)
	}
	if o.JobTTL < 0 {
		return fmt.Errorf("job TTL %d: want 0 (SUC's 900 s) or more seconds", o.JobTTL)
	}
	return nil
}

// jobTTL is JobTTL, SUC's 900 s when unset.
func (o Options) jobTTL() int64 {
	if o.JobTTL == 0 {
		return 900
	}
	return o.JobTTL
}

// Plans are the two Plans: the control-plane nodes one at a time, then the
// workers, whose Jobs wait (prepare) until the control-plane Plan is
// complete for the same version.
func Plans(o Options) ([]Plan, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	env := []corev1.EnvVar{
		{Name: "KC_ALLOW_LOSS", Value: strconv.FormatBool(o.AllowLoss)},
		{Name: "KC_GATE_TIMEOUT", Value: strconv.Itoa(o.GateTimeout)},
		{Name: "KC_NAMESPACE", Value: Namespace},
	}
	mode := "upgrade"
	if o.Naive {
		mode, env = "naive", env[2:]
	} else if o.Runtime != "" {
		env = append(env, corev1.EnvVar{Name: "KC_RUNTIME", Value: o.Runtime})
	}
	if len(o.KubeadmArgs) > 0 {
		env = append(env, corev1.EnvVar{Name: "KC_KUBEADM_ARGS", Value: strings.Join(o.KubeadmArgs, " ")})
	}
	cpName, workersName := o.PlanNames()
	upgrade := func(role string) *ContainerSpec {
		return &ContainerSpec{Image: o.ImageName(), Command: []string{RollPath}, Args: []string{mode},
			Env: append([]corev1.EnvVar{{Name: "KC_ROLE", Value: role}}, env...)}
	}
	plan := func(name string, spec PlanSpec) Plan {
		spec.ServiceAccountName, spec.Version, spec.Cordon = ServiceAccount, o.Version, o.Cordon
		spec.JobActiveDeadlineSecs = o.JobDeadline
		return Plan{APIVersion: "upgrade.cattle.io/v1", Kind: "Plan", Spec: spec,
			Metadata: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "kubelet-compat"}}}
	}
	cpUpgrade := upgrade("control-plane")
	if o.EtcdBridgeImage != "" && !o.Naive {
		cpUpgrade.Env = append(cpUpgrade.Env, corev1.EnvVar{Name: "KC_ETCD_BRIDGE_IMAGE", Value: o.EtcdBridgeImage})
	}
	cp := plan(cpName, PlanSpec{
		Concurrency:  1,
		NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: controlPlaneRole, Operator: metav1.LabelSelectorOpExists}}},
		// The control-plane nodes are tainted NoSchedule.
		Tolerations: []corev1.Toleration{{Key: controlPlaneRole, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Upgrade:     cpUpgrade,
	})
	workers := plan(workersName, PlanSpec{
		Concurrency:  o.Concurrency,
		NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: controlPlaneRole, Operator: metav1.LabelSelectorOpDoesNotExist}}},
		Prepare: &ContainerSpec{Image: o.ImageName(), Command: []string{RollPath}, Args: []string{"wait-plan", cpName},
			Env: []corev1.EnvVar{{Name: "KC_NAMESPACE", Value: Namespace}}},
		Upgrade: upgrade("worker"),
	})
	return []Plan{cp, workers}, nil
}

// Controller is the controller's manifest: its namespace, service account
// (cluster-admin: it creates its CRD and Jobs, and the Jobs read nodes,
// pods, Plans and kubeadm's ConfigMap), its settings and its Deployment on
// a control-plane node. The settings differ from SUC's example manifest
// where a fleet without a registry needs it: the images are never pulled
// unless missing, the kubectl image of the cordon step is the upgrade image
// of o.Version, and a Job starts no second pod itself (backoff limit 0).
// That does not stop re-runs: SUC deletes a failed Job once its TTL has
// passed and creates it again whenever its Plan changes after that (the
// operator's retry, RetryAnnotation, or the controller's own status
// update), so kc-roll keeps the roll's state on the node and a re-run
// never certifies a node its gate did not pass.
func Controller(o Options) ([]interface{}, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	labels := map[string]string{"upgrade.cattle.io/controller": "system-upgrade-controller"}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: Namespace} }
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	no, yes, nobody := false, true, int64(65534)
	ns, sa, binding := JobAccess()
	return []interface{}{
		ns, sa, binding,
		corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta("default-controller-env"),
			Data: map[string]string{
				"SYSTEM_UPGRADE_CONTROLLER_DEBUG":             "false",
				"SYSTEM_UPGRADE_CONTROLLER_THREADS":           "2",
				"SYSTEM_UPGRADE_CONTROLLER_LEADER_ELECT":      "true",
				"SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS":  strconv.FormatInt(o.JobDeadline, 10),
				"SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT":            strconv.Itoa(jobBackoffLimit),
				"SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY":        string(jobPullPolicy),
				"SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE":            o.kubectlImage(),
				"SYSTEM_UPGRADE_JOB_PRIVILEGED":               strconv.FormatBool(jobPrivileged),
				"SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH": strconv.FormatInt(o.jobTTL(), 10),
				"SYSTEM_UPGRADE_PLAN_POLLING_INTERVAL":        "15m",
			}},
		appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta("system-upgrade-controller"),
			Spec: appsv1.DeploymentSpec{
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					// The controller label keeps the controller's pod out of a drain.
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						ServiceAccountName: ServiceAccount,
						NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
						Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
							NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: controlPlaneRole, Operator: corev1.NodeSelectorOpExists}}}}}}},
						Tolerations: []corev1.Toleration{{Key: controlPlaneRole, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
						Containers: []corev1.Container{{
							Name: "system-upgrade-controller", Image: ControllerImageRef, ImagePullPolicy: corev1.PullIfNotPresent,
							SecurityContext: &corev1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: &nobody, RunAsGroup: &nobody, AllowPrivilegeEscalation: &no,
								Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
							EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "default-controller-env"}}}},
							Env: []corev1.EnvVar{
								field("SYSTEM_UPGRADE_CONTROLLER_NAME", "metadata.labels['upgrade.cattle.io/controller']"),
								field("SYSTEM_UPGRADE_CONTROLLER_NAMESPACE", "metadata.namespace"),
								field("SYSTEM_UPGRADE_CONTROLLER_NODE_NAME", "spec.nodeName"),
							},
						}},
					},
				},
			}},
	}, nil
}

// JobAccess are what a node's Job needs in the cluster before it runs: its
// namespace (pod security privileged: the Jobs are), its service account,
// and that account's binding to cluster-admin (kc-roll reads nodes, pods,
// events, kubeadm's ConfigMap and the kubelet's metrics; SUC creates Jobs).
func JobAccess() (corev1.Namespace, corev1.ServiceAccount, rbacv1.ClusterRoleBinding) {
	return corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: Namespace, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}},
		corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Namespace: Namespace}},
		rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "system-upgrade"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: ServiceAccount, Namespace: Namespace}}}
}

// Render writes the controller's manifest and the Plans as one multi-document
// YAML stream, in the order kubectl apply needs them (the Plans after the
// controller, which creates their CRD when it starts: apply the Plans once
// it runs).
func Render(o Options) ([]byte, error) {
	objs, err := Controller(o)
	if err != nil {
		return nil, err
	}
	plans, err := Plans(o)
	if err != nil {
		return nil, err
	}
	for _, p := range plans {
		objs = append(objs, p)
	}
	var b bytes.Buffer
	more := ""
	if o.EtcdBridgeImage != "" {
		more += " -etcd-bridge-image " + o.EtcdBridgeImage
	}
	for _, a := range o.KubeadmArgs {
		more += " -kubeadm-arg " + a
	}
	if o.Runtime != "" {
		more += " -runtime " + o.Runtime
	}
	if o.Naive {
		more += " -naive"
	}
	fmt.Fprintf(&b, "# Generated by go run ./deploy/system-upgrade/cmd/system-upgrade plans -version %s -concurrency %d -cordon=%t -allow-loss=%t -gate-timeout %d%s: do not edit.\n",
		o.Version, o.Concurrency, o.Cordon, o.AllowLoss, o.GateTimeout, more)
	stream, err := YAMLStream(objs)
	if err != nil {
		return nil, err
	}
	b.Write(stream)
	return b.Bytes(), nil
}

// YAMLStream is objects as one multi-document YAML stream, each after a
// "---" line.
func YAMLStream(objs []interface{}) ([]byte, error) {
	var b bytes.Buffer
	for _, obj := range objs {
		y, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}
