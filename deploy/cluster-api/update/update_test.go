package update

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/manifest"
	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/roll"
)

// clusters is a management cluster's Machines and their workload cluster,
// a client-go fake clientset (no Job controller, no kubelet: the tests
// set the Jobs' and pods' status as those would).
type clusters struct {
	machines map[types.NamespacedName]*clusterv1.Machine
	workload *fake.Clientset
}

func (c *clusters) Machine(_ context.Context, m types.NamespacedName) (*clusterv1.Machine, error) {
	if got, ok := c.machines[m]; ok {
		return got, nil
	}
	return nil, fmt.Errorf("reading Machine %s: not found", m)
}

func (c *clusters) Workload(_ context.Context, cluster types.NamespacedName) (kubernetes.Interface, error) {
	if cluster != (types.NamespacedName{Namespace: "default", Name: "c1"}) {
		return nil, fmt.Errorf("no cluster %s", cluster)
	}
	return c.workload, nil
}

func machine(name, node string, controlPlane bool) *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec: clusterv1.MachineSpec{ClusterName: "c1", Version: "v1.31.14"}}
	if controlPlane {
		m.Labels["cluster.x-k8s.io/control-plane"] = ""
	}
	m.Status.NodeRef.Name = node
	return m
}

func newWorld(t *testing.T) (*Updater, *clusters, map[string]string) {
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	}
	c := &clusters{
		machines: map[types.NamespacedName]*clusterv1.Machine{
			{Namespace: "default", Name: "c1-cp-x"}:     machine("c1-cp-x", "c1-cp-x", true),
			{Namespace: "default", Name: "c1-md-0-y"}:   machine("c1-md-0-y", "c1-md-0-y", false),
			{Namespace: "default", Name: "c1-md-0-new"}: machine("c1-md-0-new", "", false),
			{Namespace: "default", Name: "c1-md-0-far"}: machine("c1-md-0-far", "c1-md-0-gone", false),
		},
		workload: fake.NewClientset(node("c1-cp-x"), node("c1-md-0-y")),
	}
	logs := map[string]string{}
	u := &Updater{Clusters: c, Logs: func(_ context.Context, _ kubernetes.Interface, ns, pod, container string) (string, error) {
		if container != "upgrade" {
			return "", fmt.Errorf("container %s", container)
		}
		l, ok := logs[ns+"/"+pod]
		if !ok {
			return "", fmt.Errorf("pods %q not found", pod)
		}
		return l, nil
	}}
	return u, c, logs
}

func request(name, version string, controlPlane bool, settings map[string]string) *runtimehooksv1.UpdateMachineRequest {
	m := machine(name, "", controlPlane)
	m.Spec.Version = version
	m.Status = clusterv1.MachineStatus{} // CAPI sends no status
	return &runtimehooksv1.UpdateMachineRequest{CommonRequest: runtimehooksv1.CommonRequest{Settings: settings},
		Desired: runtimehooksv1.UpdateMachineRequestObjects{Machine: *m}}
}

func call(u *Updater, req *runtimehooksv1.UpdateMachineRequest) *runtimehooksv1.UpdateMachineResponse {
	resp := &runtimehooksv1.UpdateMachineResponse{}
	u.UpdateMachine(context.Background(), req, resp)
	return resp
}

func onlyJob(t *testing.T, c *clusters) *batchv1.Job {
	jobs, err := c.workload.BatchV1().Jobs(manifest.Namespace).List(context.Background(), metav1.ListOptions{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(jobs.Items, 1))
	return &jobs.Items[0]
}

// pod is the Job's pod as the Job controller and the kubelet leave it.
func pod(t *testing.T, c *clusters, job *batchv1.Job, name string, age time.Duration, status corev1.PodStatus) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: job.Namespace,
		CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC).Add(-age)),
		Labels:            map[string]string{batchv1.JobNameLabel: job.Name}}, Status: status}
	_, err := c.workload.CoreV1().Pods(job.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	assert.NilError(t, err)
}

// ended ends the pod's upgrade container with code, as the kubelet records it.
func ended(t *testing.T, c *clusters, name string, code int32) {
	p, err := c.workload.CoreV1().Pods(manifest.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	assert.NilError(t, err)
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "upgrade",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}}}
	_, err = c.workload.CoreV1().Pods(manifest.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	assert.NilError(t, err)
}

func setCondition(t *testing.T, c *clusters, job *batchv1.Job, cond batchv1.JobCondition) {
	cond.Status = corev1.ConditionTrue
	job.Status.Conditions = append(job.Status.Conditions, cond)
	_, err := c.workload.BatchV1().Jobs(job.Namespace).UpdateStatus(context.Background(), job, metav1.UpdateOptions{})
	assert.NilError(t, err)
}

// A failed gate's Job log, as kc-roll writes it (package roll's
// FailureReason is checked on the engine's own output).
const gateFailedLog = roll.Prog + ": node c1-md-0-y (worker): 1.30.14 -> 1.31.14\n" +
	roll.Prog + ": gate: pods of c1-md-0-y restarted, recreated or lost across the swap (kubelet-compat gate):\n" +
	"  gate on node c1-md-0-y: lost: default/web-0 uid u1: restarted: container app runs as c2, was c1\n" +
	roll.Prog + ": rollback: kubernetes-select --restart-kubelet stage2 1.30.14\n" +
	roll.Prog + ": the health gate failed: node c1-md-0-y is back on 1.30.14; the Job fails, which stops the Plan\n"

// TestUpdateMachine walks a Machine's roll through its Job's states: none,
// created, waiting, running, complete, and the ways it fails.
func TestUpdateMachine(t *testing.T) {
	type step struct {
		name string
		// before changes the workload cluster before the call.
		before      func(t *testing.T, c *clusters, logs map[string]string)
		wantStatus  runtimehooksv1.ResponseStatus
		wantRetry   int32
		wantMessage string
	}
	created := step{name: "no Job: created", wantStatus: runtimehooksv1.ResponseStatusSuccess, wantRetry: 15,
		wantMessage: "Machine default/c1-md-0-y (node c1-md-0-y of cluster c1, worker) to v1.31.14: Job system-upgrade/apply-kubelet-compat-workers-on-c1-md-0-y-with-"}
	running := step{name: "running", wantStatus: runtimehooksv1.ResponseStatusSuccess, wantRetry: 15,
		before: func(t *testing.T, c *clusters, _ map[string]string) {
			pod(t, c, onlyJob(t, c), "p1", 0, corev1.PodStatus{Phase: corev1.PodRunning})
		},
		wantMessage: "running: pod p1 Running"}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "complete", steps: []step{created,
			{name: "again, no pod yet: the same Job", wantStatus: runtimehooksv1.ResponseStatusSuccess, wantRetry: 15, wantMessage: "running: no pod yet"},
			running,
			{name: "complete", wantStatus: runtimehooksv1.ResponseStatusSuccess, wantRetry: 0, wantMessage: "done, Job system-upgrade/apply-kubelet-compat-workers-on-c1-md-0-y-with-",
				before: func(t *testing.T, c *clusters, _ map[string]string) {
					setCondition(t, c, onlyJob(t, c), batchv1.JobCondition{Type: batchv1.JobComplete})
				}},
			{name: "complete, asked again", wantStatus: runtimehooksv1.ResponseStatusSuccess, wantRetry: 0, wantMessage: "done"},
		}},
		{name: "the image is not on the node", steps: []step{created,
			{name: "waiting", wantStatus: runtimehooksv1.ResponseStatusSuccess, wantRetry: 15,
				before: func(t *testing.T, c *clusters, _ map[string]string) {
					pod(t, c, onlyJob(t, c), "p1", 0, corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "upgrade",
						State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "image not present"}}}}})
				},
				wantMessage: "running: pod p1 Pending, container upgrade ErrImageNeverPull image not present"},
		}},
		{name: "the gate failed: kc-roll rolled the node back", steps: []step{created, running,
			{name: "failed", wantStatus: runtimehooksv1.ResponseStatusFailure,
				before: func(t *testing.T, c *clusters, logs map[string]string) {
					job := onlyJob(t, c)
					ended(t, c, "p1", 1)
					logs[job.Namespace+"/p1"] = gateFailedLog
					setCondition(t, c, job, batchv1.JobCondition{Type: batchv1.JobFailed, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit"})
				},
				wantMessage: "failed: the health gate failed: node c1-md-0-y is back on 1.30.14; the Job fails, which stops the Plan (gate: pods of c1-md-0-y restarted, recreated or lost across the swap (kubelet-compat gate): gate on node c1-md-0-y: lost: default/web-0 uid u1: restarted: container app runs as c2, was c1)"},
			{name: "failed, asked again", wantStatus: runtimehooksv1.ResponseStatusFailure, wantMessage: "the health gate failed"},
		}},
		{name: "the pod was evicted before kc-roll ended", steps: []step{created,
			{name: "failed", wantStatus: runtimehooksv1.ResponseStatusFailure,
				before: func(t *testing.T, c *clusters, logs map[string]string) {
					job := onlyJob(t, c)
					pod(t, c, job, "p1", 0, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."})
					logs[job.Namespace+"/p1"] = roll.Prog + ": node c1-md-0-y (worker): 1.30.14 -> 1.31.14\n"
					setCondition(t, c, job, batchv1.JobCondition{Type: batchv1.JobFailed, Reason: batchv1.JobReasonBackoffLimitExceeded})
				},
				wantMessage: "failed: pod p1 Evicted: The node was low on resource: memory.; kc-roll did not end on its own: the node's roll goes on from the state kc-roll keeps on the node when the Job runs again"},
		}},
		{name: "kc-roll killed mid-roll: its last line is no last word", steps: []step{created, running,
			{name: "failed", wantStatus: runtimehooksv1.ResponseStatusFailure,
				before: func(t *testing.T, c *clusters, logs map[string]string) {
					job := onlyJob(t, c)
					ended(t, c, "p1", 137)
					logs[job.Namespace+"/p1"] = roll.Prog + ": node c1-md-0-y (worker): 1.30.14 -> 1.31.14\n" + roll.Prog + ": kubeadm: upgrade node\n"
					setCondition(t, c, job, batchv1.JobCondition{Type: batchv1.JobFailed, Reason: batchv1.JobReasonBackoffLimitExceeded})
				},
				wantMessage: "failed: pod p1: container upgrade ended Error (exit 137); kc-roll did not end on its own"},
		}},
		{name: "failed, its pods gone", steps: []step{created,
			{name: "failed", wantStatus: runtimehooksv1.ResponseStatusFailure,
				before: func(t *testing.T, c *clusters, _ map[string]string) {
					setCondition(t, c, onlyJob(t, c), batchv1.JobCondition{Type: batchv1.JobFailed, Reason: batchv1.JobReasonBackoffLimitExceeded})
				},
				wantMessage: "failed: no pod of the Job is left to read kc-roll's reason from"},
		}},
		{name: "the Job's deadline", steps: []step{created,
			{name: "failed", wantStatus: runtimehooksv1.ResponseStatusFailure,
				before: func(t *testing.T, c *clusters, logs map[string]string) {
					job := onlyJob(t, c)
					pod(t, c, job, "p0", time.Hour, corev1.PodStatus{Phase: corev1.PodFailed})
					pod(t, c, job, "p1", 0, corev1.PodStatus{Phase: corev1.PodFailed})
					ended(t, c, "p0", 1)
					ended(t, c, "p1", 1)
					logs[job.Namespace+"/p0"] = "not this one\n"
					logs[job.Namespace+"/p1"] = roll.Prog + ": node c1-md-0-y (worker): 1.30.14 -> 1.31.14\n" + roll.Prog + ": context canceled\n"
					setCondition(t, c, job, batchv1.JobCondition{Type: batchv1.JobFailed, Reason: batchv1.JobReasonDeadlineExceeded, Message: "Job was active longer than specified deadline"})
				},
				wantMessage: "failed: DeadlineExceeded Job was active longer than specified deadline; context canceled"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, c, logs := newWorld(t)
			for _, s := range tc.steps {
				if s.before != nil {
					s.before(t, c, logs)
				}
				resp := call(u, request("c1-md-0-y", "v1.31.14", false, nil))
				assert.Check(t, is.Equal(resp.GetStatus(), s.wantStatus), "%s: %s", s.name, resp.GetMessage())
				assert.Check(t, is.Equal(resp.GetRetryAfterSeconds(), s.wantRetry), s.name)
				assert.Check(t, is.Contains(resp.GetMessage(), s.wantMessage), s.name)
				onlyJob(t, c)
			}
		})
	}
}

// TestUpdateMachineRefuses: what cannot be rolled is a Failure with one
// line saying why, and no Job.
func TestUpdateMachineRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *runtimehooksv1.UpdateMachineRequest
		want string
	}{
		{"a bad setting", request("c1-md-0-y", "v1.31.14", false, map[string]string{"gateTimeout": "soon"}),
			`Machine default/c1-md-0-y: setting gateTimeout="soon": want a number of seconds`},
		{"an unknown setting", request("c1-md-0-y", "v1.31.14", false, map[string]string{"cordon": "true"}),
			`Machine default/c1-md-0-y: setting "cordon": unknown (want allowLoss, gateTimeout, jobDeadline, jobTTL, runtime, etcdBridgeImage, kubeadmArgs)`},
		{"a runtime kc-roll does not know", request("c1-md-0-y", "v1.31.14", false, map[string]string{"runtime": "containerd@9.9.9"}),
			`Machine default/c1-md-0-y: runtime "containerd@9.9.9": want one of`},
		{"a pre-release", request("c1-md-0-y", "v1.32.0-rc.1", false, nil),
			`Machine default/c1-md-0-y: version "1.32.0-rc.1": want 1.MINOR.PATCH`},
		{"no v", request("c1-md-0-y", "1.31.14", false, nil), `Machine default/c1-md-0-y: version "1.31.14": want vMAJOR.MINOR.PATCH`},
		{"no node yet", request("c1-md-0-new", "v1.31.14", false, nil), "Machine default/c1-md-0-new has no node yet (status.nodeRef)"},
		{"no such Machine", request("c1-md-0-z", "v1.31.14", false, nil), "reading Machine default/c1-md-0-z: not found"},
		{"the node is not in the cluster", request("c1-md-0-far", "v1.31.14", false, nil),
			`Machine default/c1-md-0-far (node c1-md-0-gone of cluster c1, worker) to v1.31.14: reading the node: nodes "c1-md-0-gone" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, c, _ := newWorld(t)
			resp := call(u, tc.req)
			assert.Check(t, is.Equal(resp.GetStatus(), runtimehooksv1.ResponseStatusFailure))
			assert.Check(t, is.Contains(resp.GetMessage(), tc.want))
			assert.Check(t, !strings.Contains(resp.GetMessage(), "\n"), "one line: %q", resp.GetMessage())
			jobs, err := c.workload.BatchV1().Jobs(manifest.Namespace).List(context.Background(), metav1.ListOptions{})
			assert.NilError(t, err)
			assert.Check(t, is.Len(jobs.Items, 0))
		})
	}
}

// TestJobIsThePlans: the Job created for a Machine runs what the fleet's
// Plan's Job runs on that node (manifest.NodeJob of the Plan of its role):
// the same pod, but for the workers' wait for the control-plane Plan, with
// the settings; its own labels, no SUC label.
func TestJobIsThePlans(t *testing.T) {
	settings := map[string]string{"allowLoss": "true", "gateTimeout": "600", "runtime": "containerd@1.7.35",
		"kubeadmArgs": "--ignore-preflight-errors=SystemVerification", "etcdBridgeImage": "registry.k8s.io/etcd:3.6.16-0", "jobTTL": "3600"}
	for _, tc := range []struct {
		machine, plan, role string
	}{
		{"c1-cp-x", manifest.ControlPlanePlan, "control-plane"},
		{"c1-md-0-y", manifest.WorkersPlan, "worker"},
	} {
		t.Run(tc.role, func(t *testing.T) {
			u, c, _ := newWorld(t)
			u.Image = "registry.example/kc/upgrade"
			resp := call(u, request(tc.machine, "v1.31.14", tc.role == "control-plane", settings))
			assert.Assert(t, is.Equal(resp.GetStatus(), runtimehooksv1.ResponseStatusSuccess), resp.GetMessage())
			got := onlyJob(t, c)

			o := manifest.DefaultOptions("1.31.14")
			o.AllowLoss, o.GateTimeout, o.Runtime, o.JobTTL, o.Image = true, 600, "containerd@1.7.35", 3600, "registry.example/kc/upgrade"
			o.KubeadmArgs, o.EtcdBridgeImage = []string{"--ignore-preflight-errors=SystemVerification"}, "registry.k8s.io/etcd:3.6.16-0"
			plans, err := manifest.Plans(o)
			assert.NilError(t, err)
			var plan manifest.Plan
			for _, p := range plans {
				if p.Metadata.Name == tc.plan {
					plan = p
				}
			}
			node, err := c.workload.CoreV1().Nodes().Get(context.Background(), tc.machine, metav1.GetOptions{})
			assert.NilError(t, err)
			key := Key(types.NamespacedName{Namespace: "default", Name: tc.machine}, "1.31.14")
			want := o.NodeJob(plan, node, key)
			want.Spec.Template.Spec.InitContainers = nil // the workers' wait-plan: CAPI orders the roll
			assert.Check(t, is.DeepEqual(got.Spec.Template.Spec, want.Spec.Template.Spec))
			got.Spec.Template.ObjectMeta, want.Spec.Template.ObjectMeta = metav1.ObjectMeta{}, metav1.ObjectMeta{}
			assert.Check(t, is.DeepEqual(got.Spec, want.Spec))
			assert.Check(t, is.Equal(got.Name, want.Name), "SUC's name form: kc-roll's gate knows the Plan's Job pods by it")
			assert.Check(t, is.Equal(got.Namespace, manifest.Namespace))

			upgrade := got.Spec.Template.Spec.Containers[0]
			assert.Check(t, is.Equal(upgrade.Image, "registry.example/kc/upgrade:1.31.14"))
			assert.Check(t, is.DeepEqual(upgrade.Command, []string{manifest.RollPath}))
			assert.Check(t, is.DeepEqual(upgrade.Args, []string{"upgrade"}))
			env := map[string]string{}
			for _, e := range upgrade.Env {
				env[e.Name] = e.Value
			}
			assert.Check(t, is.Equal(env["KC_ROLE"], tc.role))
			assert.Check(t, is.Equal(env["SYSTEM_UPGRADE_PLAN_LATEST_VERSION"], "1.31.14"))
			assert.Check(t, is.Equal(env["SYSTEM_UPGRADE_PLAN_NAME"], tc.plan))
			assert.Check(t, is.Equal(env["KC_ALLOW_LOSS"], "true"))
			assert.Check(t, is.Equal(env["KC_RUNTIME"], "containerd@1.7.35"))
			for k := range got.Labels {
				assert.Check(t, !strings.Contains(k, "cattle.io/"), "SUC's label %s", k)
			}
			assert.Check(t, is.Equal(got.Labels[manifest.CAPILabelKey], key))
			assert.Check(t, is.Equal(got.Labels[manifest.CAPILabelNode], node.Name), "the node the Job rolls, for an operator's kubectl get jobs -l")
			assert.Check(t, is.Equal(got.Annotations[manifest.CAPIAnnotationMachine], "default/"+tc.machine))

			ns, err := c.workload.CoreV1().Namespaces().Get(context.Background(), manifest.Namespace, metav1.GetOptions{})
			assert.NilError(t, err)
			assert.Check(t, is.Equal(ns.Labels["pod-security.kubernetes.io/enforce"], "privileged"))
			_, err = c.workload.CoreV1().ServiceAccounts(manifest.Namespace).Get(context.Background(), manifest.ServiceAccount, metav1.GetOptions{})
			assert.Check(t, err)
			_, err = c.workload.RbacV1().ClusterRoleBindings().Get(context.Background(), "system-upgrade", metav1.GetOptions{})
			assert.Check(t, err)
		})
	}
}

// TestKey: one Job per Machine and version.
func TestKey(t *testing.T) {
	a := types.NamespacedName{Namespace: "default", Name: "m"}
	assert.Check(t, is.Equal(Key(a, "1.31.14"), Key(a, "1.31.14")))
	assert.Check(t, Key(a, "1.31.14") != Key(a, "1.32.1"))
	assert.Check(t, Key(a, "1.31.14") != Key(types.NamespacedName{Namespace: "other", Name: "m"}, "1.31.14"))
	u, c, _ := newWorld(t)
	call(u, request("c1-md-0-y", "v1.31.14", false, nil))
	call(u, request("c1-md-0-y", "v1.31.14", false, nil))
	onlyJob(t, c)
	call(u, request("c1-md-0-y", "v1.32.1", false, nil))
	jobs, err := c.workload.BatchV1().Jobs(manifest.Namespace).List(context.Background(), metav1.ListOptions{})
	assert.NilError(t, err)
	assert.Check(t, is.Len(jobs.Items, 2), "another version, another Job")
}
