package fleet

// The fleet's workloads (make e2e E2E=fleet): what an operator's roll must
// not disturb. A Deployment of 4 behind a PodDisruptionBudget, a
// StatefulSet of 2 on local volumes, a DaemonSet, a single-replica
// Deployment, a Job running across the roll, and (the fault and runtime
// rolls) the canary on the faulty worker.

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The fleet's workload names (web, db and agent are the scenario's names,
// so the readiness groups read them alike).
const (
	SoloName   = "solo"
	BatchName  = "batch"
	CanaryName = "canary"
	// fleetWebReplicas behind a PDB of fleetWebMinAvailable: a drain may
	// take one at a time.
	fleetWebReplicas     = 4
	fleetWebMinAvailable = 3
	fleetDBReplicas      = 2
	fleetStorageClass    = "kc-e2e-fleet-local"
	// batchDoneFile ends the Job's pod once the roll is over.
	batchDoneFile = "/tmp/done"
	// kubeRoot is the packages' root (pkg/layout.KubeRoot), which the
	// canary reads.
	kubeRoot = "/usr/local/kubernetes"
)

// fleetServices are the Services whose EndpointSlices the readiness
// watchers follow across a roll.
var fleetServices = []string{kind.WebService, kind.StatefulSetName, SoloName}

// fleetDBNodes are the workers (1-based) holding the StatefulSet's local
// volumes: one pod each, pinned there by the volume; workers 2 and 3, or
// on a cluster of two workers (the minors roll) both.
func fleetDBNodes(workers int) []int {
	if workers == 2 {
		return []int{1, 2}
	}
	return []int{2, 3}
}

// fleetPods is how many pods the namespace holds when all run on a cluster
// of nodes nodes: web, db, agent on every node, solo, batch, the static
// corpus (mirror pods), and the canary.
func fleetPods(nodes, statics int, canary bool) int {
	n := fleetWebReplicas + fleetDBReplicas + nodes + 1 + 1 + statics
	if canary {
		n++
	}
	return n
}

// fleetObjects are the workloads (in creation order); workers are the
// worker nodes' names, canaryNode the faulty worker's ("": no canary),
// canary what it breaks under and version that version (the kubelet's
// target or the runtime roll's containerd).
func fleetObjects(workers []string, canaryNode string, canary canaryKind, version string) ([]interface{}, error) {
	db := fleetDBNodes(len(workers))
	for _, i := range db {
		if i > len(workers) {
			return nil, fmt.Errorf("the StatefulSet's volumes need worker %d, the cluster has %d workers", i, len(workers))
		}
	}
	var objs []interface{}
	for _, i := range db {
		objs = append(objs, localVolume(workers[i-1]))
	}
	objs = append(objs,
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: kind.WebService, Namespace: kind.Namespace},
			Spec: v1.ServiceSpec{Selector: kind.AppLabel(kind.DeploymentName), Ports: []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt(8080)}}}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: kind.StatefulSetName, Namespace: kind.Namespace},
			Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: kind.AppLabel(kind.StatefulSetName), Ports: []v1.ServicePort{{Port: 8080}}}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: SoloName, Namespace: kind.Namespace},
			Spec: v1.ServiceSpec{Selector: kind.AppLabel(SoloName), Ports: []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt(8080)}}}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: kind.DeploymentName, Namespace: kind.Namespace},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: intstrp(intstr.FromInt(fleetWebMinAvailable)), Selector: &metav1.LabelSelector{MatchLabels: kind.AppLabel(kind.DeploymentName)}}},
		webDeployment(), soloDeployment(), dbStatefulSet(),
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: kind.DaemonSetName, Namespace: kind.Namespace},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: kind.AppLabel(kind.DaemonSetName)},
				Template: kind.PodTemplate(kind.DaemonSetName, kind.HTTPD("agent", "/www"), true)}},
		batchJob())
	if canaryNode != "" {
		objs = append(objs, canaryPod(canaryNode, canary, version))
	}
	return objs, nil
}

func intstrp(v intstr.IntOrString) *intstr.IntOrString { return &v }

// localVolume is a node's volume for the StatefulSet: a hostPath on that
// node, bound statically (no provisioner runs on these nodes) and pinned
// to the node by its node affinity, as local volumes are.
func localVolume(node string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "kc-e2e-fleet-" + node},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("64Mi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			StorageClassName:              fleetStorageClass,
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/lib/kc-e2e/fleet-pv", Type: hostPathType(v1.HostPathDirectoryOrCreate)}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}},
		}}
}

// webDeployment spreads its 4 replicas over the workers.
func webDeployment() *appsv1.Deployment {
	t := kind.PodTemplate(kind.DeploymentName, kind.HTTPD("httpd", "/www"), false)
	t.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelHostname,
		WhenUnsatisfiable: v1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: kind.AppLabel(kind.DeploymentName)}}}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: kind.DeploymentName, Namespace: kind.Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: int32p(fleetWebReplicas), Selector: &metav1.LabelSelector{MatchLabels: kind.AppLabel(kind.DeploymentName)}, Template: t}}
}

// soloDeployment is the single replica: any move is an outage.
func soloDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: SoloName, Namespace: kind.Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: int32p(1), Selector: &metav1.LabelSelector{MatchLabels: kind.AppLabel(SoloName)},
			Template: kind.PodTemplate(SoloName, kind.HTTPD("httpd", "/www"), false)}}
}

// dbStatefulSet: 2 pods, each on its node's local volume.
func dbStatefulSet() *appsv1.StatefulSet {
	c := kind.HTTPD("db", "/data")
	c.Command = []string{"sh", "-c", "date >> /data/starts && hostname > /data/index.html && exec httpd -f -p 8080 -h /data"}
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: kind.StatefulSetName, Namespace: kind.Namespace},
		Spec: appsv1.StatefulSetSpec{Replicas: int32p(fleetDBReplicas), ServiceName: kind.StatefulSetName, PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: kind.AppLabel(kind.StatefulSetName)},
			Template: kind.PodTemplate(kind.StatefulSetName, c, false),
			VolumeClaimTemplates: []v1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: strp(fleetStorageClass),
					Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("64Mi")}}}}}}}
}

// batchJob runs across the whole roll: its pod waits for batchDoneFile,
// which the e2e writes once the roll is over, and then completes. Its
// backoff limit lets a drain's eviction start it again (the anchor's
// cost); our roll must complete it with its first pod.
func batchJob() *batchv1.Job {
	c := v1.Container{Name: "work", Image: corpus.BusyboxImage,
		Command:   []string{"sh", "-c", "until test -e " + batchDoneFile + "; do sleep 1; done; echo done"},
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}}}
	t := kind.PodTemplate(BatchName, c, false)
	t.Spec.RestartPolicy = v1.RestartPolicyNever
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: BatchName, Namespace: kind.Namespace},
		Spec: batchv1.JobSpec{BackoffLimit: int32p(6), ActiveDeadlineSeconds: int64p(4 * 3600), Template: t}}
}

// canaryKind is what the canary on the faulty worker breaks under: the
// target's kubelet (the fault roll: the kubelet step's gate fails) or the
// runtime roll's containerd (the runtime step's gate fails).
type canaryKind string

const (
	noCanary      canaryKind = ""
	kubeletCanary canaryKind = "kubelet"
	runtimeCanary canaryKind = "runtime"
)

// canaryProbe is the canary's readiness check with the packages' root at
// root: not Ready while the node's stage2 (kubernetes-select's current
// kubelet) is target's, Ready otherwise (target not installed, or another
// version selected). Shell builtins only (cd -P, pwd -P): the busybox
// image has no readlink.
func canaryProbe(root, target string) []string {
	script := fmt.Sprintf(`cur=$(cd -P %[1]s/current/stage2 && pwd -P) || exit 1; new=$(cd -P %[1]s/%[2]s/stage2 2>/dev/null && pwd -P); test "$cur" != "$new"`, root, target)
	return []string{"sh", "-c", script}
}

// runtimeCanaryProbe is the runtime canary's readiness check with the
// runtime's root at root (pkg/layout.RuntimeRoot): not Ready while
// runtime-select's current component is version, Ready otherwise
// (version not installed, the distribution's selected, or another).
func runtimeCanaryProbe(root, component, version string) []string {
	script := fmt.Sprintf(`new=$(cd -P %[1]s/%[2]s/%[3]s 2>/dev/null && pwd -P) || exit 0; cur=$(cd -P %[1]s/current/%[2]s 2>/dev/null && pwd -P); test "$cur" != "$new"`, root, component, version)
	return []string{"sh", "-c", script}
}

// canaryPod is the fault's workload on the faulty worker: an application
// that breaks under the target version (kubeletCanary) or under the
// runtime roll's containerd (runtimeCanary, version its version). Its
// readiness probe fails while the node runs that, so kc-roll's health gate
// ("every pod of the node Ready") fails there and the real rollback runs;
// back on the previous kubelet or containerd it is Ready again, without a
// restart.
func canaryPod(node string, k canaryKind, version string) *v1.Pod {
	probe, root := canaryProbe(kubeRoot, version), kubeRoot
	if k == runtimeCanary {
		probe, root = runtimeCanaryProbe(layout.RuntimeRoot, FleetRuntime.Name, version), layout.RuntimeRoot
	}
	c := v1.Container{Name: "app", Image: corpus.BusyboxImage,
		Command: []string{"sh", "-c", "while :; do sleep 3600; done"},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: probe}},
			PeriodSeconds: 2, FailureThreshold: 1},
		VolumeMounts: []v1.VolumeMount{{Name: "root", MountPath: root, ReadOnly: true}},
		Resources:    v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}}}
	spec := kind.PodTemplate(CanaryName, c, false).Spec
	spec.NodeName = node
	spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: root, Type: hostPathType(v1.HostPathDirectory)}}}}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: CanaryName, Namespace: kind.Namespace, Labels: kind.AppLabel(CanaryName)}, Spec: spec}
}

// createFleetObjects creates the namespace and the objects through c's API.
func createFleetObjects(ctx context.Context, c *kind.Cluster, objs []interface{}) error {
	cs := c.Client
	if err := c.CreateNamespace(ctx); err != nil {
		return err
	}
	for _, obj := range objs {
		var err error
		var what string
		switch o := obj.(type) {
		case *v1.PersistentVolume:
			what = "persistentvolume/" + o.Name
			_, err = cs.CoreV1().PersistentVolumes().Create(ctx, o, metav1.CreateOptions{})
		case *v1.Service:
			what = "service/" + o.Name
			_, err = cs.CoreV1().Services(kind.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *policyv1.PodDisruptionBudget:
			what = "poddisruptionbudget/" + o.Name
			_, err = cs.PolicyV1().PodDisruptionBudgets(kind.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			what = "deployment/" + o.Name
			_, err = cs.AppsV1().Deployments(kind.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.StatefulSet:
			what = "statefulset/" + o.Name
			_, err = cs.AppsV1().StatefulSets(kind.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.DaemonSet:
			what = "daemonset/" + o.Name
			_, err = cs.AppsV1().DaemonSets(kind.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *batchv1.Job:
			what = "job/" + o.Name
			_, err = cs.BatchV1().Jobs(kind.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *v1.Pod:
			what = "pod/" + o.Name
			_, err = cs.CoreV1().Pods(kind.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			return fmt.Errorf("unknown object %T", obj)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// batchPod is the Job's pod that runs now on c ("" when none runs).
func batchPod(ctx context.Context, c *kind.Cluster) (string, error) {
	list, err := c.Client.CoreV1().Pods(kind.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + BatchName})
	if err != nil {
		return "", err
	}
	var running []string
	for _, p := range list.Items {
		if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
			running = append(running, p.Name)
		}
	}
	if len(running) != 1 {
		return "", fmt.Errorf("job %s: %d running pods (%s), want 1", BatchName, len(running), strings.Join(running, " "))
	}
	return running[0], nil
}

func int64p(v int64) *int64                           { return &v }
func int32p(v int32) *int32                           { return &v }
func strp(s string) *string                           { return &s }
func hostPathType(t v1.HostPathType) *v1.HostPathType { return &t }
