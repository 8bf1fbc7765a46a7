package kind

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Namespace holds the e2e's workloads (the corpus's namespace).
const Namespace = corpus.Namespace

// Workload names.
const (
	DeploymentName  = "web"
	StatefulSetName = "db"
	DaemonSetName   = "agent"
	ProbePodName    = "probes"
	storageClass    = "kc-e2e-hostpath"
	// WebService is the Service in front of the Deployment (port 80 ->
	// 8080), whose EndpointSlices the readiness watchers follow.
	WebService = DeploymentName
)

// StaticPodDir is where kubeadm's kubelet reads static pods.
const StaticPodDir = "/etc/kubernetes/manifests"

// HostPathRoot holds the corpus's hostPath volumes on the node.
const HostPathRoot = "/var/lib/kc-e2e/hostpath"

// AppLabel is the label set of a workload's pods: app=<name>.
func AppLabel(name string) map[string]string { return map[string]string{"app": name} }

// HTTPD is the workloads' container: busybox httpd on 8080 serving the
// pod's hostname from dir, with a readiness and a liveness probe.
func HTTPD(name, dir string) v1.Container {
	return v1.Container{
		Name: name, Image: corpus.BusyboxImage,
		Command: []string{"sh", "-c", "mkdir -p " + dir + " && hostname > " + dir + "/index.html && exec httpd -f -p 8080 -h " + dir},
		Ports:   []v1.ContainerPort{{ContainerPort: 8080}},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(8080)}},
			PeriodSeconds: 2},
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", dir + "/index.html"}}},
			PeriodSeconds: 5, TimeoutSeconds: 5},
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}},
	}
}

// PodTemplate is a pod template of c labelled AppLabel(name), tolerating
// every taint when tolerateAll.
func PodTemplate(name string, c v1.Container, tolerateAll bool) v1.PodTemplateSpec {
	t := v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: AppLabel(name)},
		Spec: v1.PodSpec{Containers: []v1.Container{c}, TerminationGracePeriodSeconds: int64p(2), EnableServiceLinks: boolp(false)}}
	if tolerateAll {
		t.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	}
	return t
}

func int64p(v int64) *int64 { return &v }
func int32p(v int32) *int32 { return &v }
func boolp(v bool) *bool    { return &v }

// CreateNamespace creates the workloads' namespace and waits for its
// default service account: pods are refused until the service account
// controller made it.
func (c *Cluster) CreateNamespace(ctx context.Context) error {
	cs := c.Client
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("namespace %s: %w", Namespace, err)
	}
	if err := Poll(ctx, time.Minute, func() error {
		_, err := cs.CoreV1().ServiceAccounts(Namespace).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("default service account of %s: %w", Namespace, err)
	}
	return nil
}

// CreateWorkloads creates the API workloads: a Deployment of two
// replicas behind the Service WebService, a StatefulSet with a volume (a
// hostPath PersistentVolume bound statically: no provisioner runs) behind
// its headless Service, a DaemonSet on every node (control plane included)
// and a pod with startup, readiness and liveness probes on probeNode.
func (c *Cluster) CreateWorkloads(ctx context.Context, probeNode string) error {
	cs := c.Client
	if err := c.CreateNamespace(ctx); err != nil {
		return err
	}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "kc-e2e-db-0"},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("64Mi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			StorageClassName:              storageClass,
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/lib/kc-e2e/pv/db-0", Type: hostPathType(v1.HostPathDirectoryOrCreate)}},
		}}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("persistent volume: %w", err)
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: StatefulSetName, Namespace: Namespace},
		Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: AppLabel(StatefulSetName), Ports: []v1.ServicePort{{Port: 8080}}}}
	if _, err := cs.CoreV1().Services(Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	web := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: WebService, Namespace: Namespace},
		Spec: v1.ServiceSpec{Selector: AppLabel(DeploymentName), Ports: []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt(8080)}}}}
	if _, err := cs.CoreV1().Services(Namespace).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("service %s: %w", WebService, err)
	}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: DeploymentName, Namespace: Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: int32p(2), Selector: &metav1.LabelSelector{MatchLabels: AppLabel(DeploymentName)},
			Template: PodTemplate(DeploymentName, HTTPD("httpd", "/www"), false)}}
	if _, err := cs.AppsV1().Deployments(Namespace).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("deployment: %w", err)
	}
	dbc := HTTPD("db", "/data")
	dbc.Command = []string{"sh", "-c", "date >> /data/starts && hostname > /data/index.html && exec httpd -f -p 8080 -h /data"}
	dbc.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: StatefulSetName, Namespace: Namespace},
		Spec: appsv1.StatefulSetSpec{Replicas: int32p(1), ServiceName: StatefulSetName, Selector: &metav1.LabelSelector{MatchLabels: AppLabel(StatefulSetName)},
			Template: PodTemplate(StatefulSetName, dbc, false),
			VolumeClaimTemplates: []v1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: strp(storageClass),
					Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("64Mi")}}}}}}}
	if _, err := cs.AppsV1().StatefulSets(Namespace).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("statefulset: %w", err)
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: DaemonSetName, Namespace: Namespace},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: AppLabel(DaemonSetName)},
			Template: PodTemplate(DaemonSetName, HTTPD("agent", "/www"), true)}}
	if _, err := cs.AppsV1().DaemonSets(Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("daemonset: %w", err)
	}
	pc := HTTPD("app", "/www")
	pc.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", "/www/index.html"}}}, PeriodSeconds: 1, FailureThreshold: 30}
	pc.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(8080)}}, PeriodSeconds: 5}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ProbePodName, Namespace: Namespace, Labels: AppLabel(ProbePodName)},
		Spec: PodTemplate(ProbePodName, pc, false).Spec}
	pod.Spec.NodeName = probeNode
	if _, err := cs.CoreV1().Pods(Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("pod %s: %w", ProbePodName, err)
	}
	return nil
}

func strp(s string) *string { return &s }

func hostPathType(t v1.HostPathType) *v1.HostPathType { return &t }

// StaticPods is the corpus as static pods of node: every kind once
// (hostNetwork, init containers, hostPath, seccompProfile, a probe's
// terminationGracePeriodSeconds, with and without metadata.uid).
func StaticPods(node string) *corpus.Corpus {
	return corpus.New(corpus.Options{Pods: 8, NodeName: node, HostPathRoot: HostPathRoot, FirstHostPort: 19100})
}

// WriteStaticPods writes the corpus's manifests into the node's static
// pod directory.
func WriteStaticPods(ctx context.Context, n *Node, c *corpus.Corpus) error {
	for _, p := range c.Pods {
		if err := writeManifest(ctx, n, path.Join(StaticPodDir, "kc-e2e-"+p.Name+".yaml"), p.Spec); err != nil {
			return err
		}
	}
	return nil
}

// WaitPodsReady waits until every pod in the namespaces is Running and
// Ready (want: at least that many pods in all), and returns them.
func (c *Cluster) WaitPodsReady(ctx context.Context, timeout time.Duration, want int, namespaces ...string) ([]v1.Pod, error) {
	var pods []v1.Pod
	err := Poll(ctx, timeout, func() error {
		pods = nil
		var notReady []string
		for _, ns := range namespaces {
			list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, p := range list.Items {
				pods = append(pods, p)
				if !podReady(&p) {
					notReady = append(notReady, ns+"/"+p.Name+"("+string(p.Status.Phase)+")")
				}
			}
		}
		if len(notReady) > 0 {
			return fmt.Errorf("not ready: %s", strings.Join(notReady, " "))
		}
		if len(pods) < want {
			return fmt.Errorf("%d pods, want %d", len(pods), want)
		}
		return nil
	})
	return pods, err
}

func podReady(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// Poll calls f every second until it succeeds or timeout passes.
func Poll(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
