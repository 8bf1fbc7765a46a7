// Package update answers Cluster API's UpdateMachine hook: it rolls the
// Machine's node to the desired Kubernetes version with the fleet's node
// roll, kc-roll in a privileged Job pinned to the node in the workload
// cluster, the Job the system-upgrade-controller's Plans run there
// (package manifest). The Job's name is the Machine's and the version's
// (Key), so every call for them finds the same Job: none, create it;
// running, wait; complete, done; failed, kc-roll's reason. kc-roll rolls
// the node back itself when a step or its gate fails, before it fails.
package update

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/manifest"
	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/roll"
)

// DefaultRetryAfterSeconds is how long CAPI waits before it asks again
// while a roll runs.
const DefaultRetryAfterSeconds = 15

// logLines is how much of a failed pod's log is read for kc-roll's reason:
// its last word and the gate's verdict are at its end.
const logLines = 2000

// Updater answers UpdateMachine.
type Updater struct {
	Clusters Clusters
	// Image is the upgrade image, untagged (manifest.UpgradeImageName
	// when empty).
	Image string
	// RetryAfterSeconds is DefaultRetryAfterSeconds when 0.
	RetryAfterSeconds int32
	// Logs reads a container's log; nil reads it from the API server
	// (client-go's fake clientset answers every log "fake logs").
	Logs func(ctx context.Context, c kubernetes.Interface, namespace, pod, container string) (string, error)
}

// UpdateMachine rolls the request's Machine to its desired version: Success
// with RetryAfterSeconds while the Job runs, Success with 0 once it
// completed, Failure when it failed or the request cannot be rolled.
func (u *Updater) UpdateMachine(ctx context.Context, req *runtimehooksv1.UpdateMachineRequest, resp *runtimehooksv1.UpdateMachineResponse) {
	retry, msg, err := u.update(ctx, req)
	if err != nil {
		resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
		resp.SetMessage(err.Error())
		resp.SetRetryAfterSeconds(0)
		return
	}
	resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
	resp.SetMessage(msg)
	resp.SetRetryAfterSeconds(retry)
}

func (u *Updater) update(ctx context.Context, req *runtimehooksv1.UpdateMachineRequest) (int32, string, error) {
	desired := req.Desired.Machine
	ref := types.NamespacedName{Namespace: desired.Namespace, Name: desired.Name}
	if ref.Name == "" || ref.Namespace == "" {
		return 0, "", fmt.Errorf("the request names no Machine (namespace %q, name %q)", ref.Namespace, ref.Name)
	}
	version, ok := strings.CutPrefix(desired.Spec.Version, "v")
	if !ok {
		return 0, "", fmt.Errorf("Machine %s: version %q: want vMAJOR.MINOR.PATCH", ref, desired.Spec.Version)
	}
	o, err := Options(version, u.Image, req.GetSettings())
	if err != nil {
		return 0, "", fmt.Errorf("Machine %s: %v", ref, err)
	}
	machine, err := u.Clusters.Machine(ctx, ref)
	if err != nil {
		return 0, "", err
	}
	node := machine.Status.NodeRef.Name
	if node == "" {
		return 0, "", fmt.Errorf("Machine %s has no node yet (status.nodeRef)", ref)
	}
	cluster := types.NamespacedName{Namespace: ref.Namespace, Name: machine.Spec.ClusterName}
	if cluster.Name == "" {
		return 0, "", fmt.Errorf("Machine %s names no cluster (spec.clusterName)", ref)
	}
	w, err := u.Clusters.Workload(ctx, cluster)
	if err != nil {
		return 0, "", err
	}
	role := Role(desired.Labels)
	name := fmt.Sprintf("Machine %s (node %s of cluster %s, %s) to v%s", ref, node, cluster.Name, role, version)
	job, err := w.BatchV1().Jobs(manifest.Namespace).Get(ctx, jobName(o, role, node, ref), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return u.start(ctx, w, o, role, node, ref, name)
	case err != nil:
		return 0, "", fmt.Errorf("%s: reading its Job: %w", name, err)
	}
	return u.follow(ctx, w, job, name)
}

// jobName is the name Job gives the Job; it needs no Node.
func jobName(o manifest.Options, role, node string, machine types.NamespacedName) string {
	j, _ := Job(o, role, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, machine)
	return j.Name
}

// start creates the Job, and what it needs first (JobAccess).
func (u *Updater) start(ctx context.Context, w kubernetes.Interface, o manifest.Options, role, nodeName string, ref types.NamespacedName, name string) (int32, string, error) {
	node, err := w.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return 0, "", fmt.Errorf("%s: reading the node: %w", name, err)
	}
	job, err := Job(o, role, node, ref)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", name, err)
	}
	ns, sa, binding := manifest.JobAccess()
	for _, create := range []func() error{
		func() error { _, err := w.CoreV1().Namespaces().Create(ctx, &ns, metav1.CreateOptions{}); return err },
		func() error {
			_, err := w.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, &sa, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := w.RbacV1().ClusterRoleBindings().Create(ctx, &binding, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, "", fmt.Errorf("%s: creating what its Job needs: %w", name, err)
		}
	}
	if _, err := w.BatchV1().Jobs(job.Namespace).Create(ctx, &job, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, "", fmt.Errorf("%s: creating Job %s/%s: %w", name, job.Namespace, job.Name, err)
	}
	return u.retry(), fmt.Sprintf("%s: Job %s/%s created (%s %s)", name, job.Namespace, job.Name, manifest.RollPath, "upgrade"), nil
}

// follow reads where the Job is.
func (u *Updater) follow(ctx context.Context, w kubernetes.Interface, job *batchv1.Job, name string) (int32, string, error) {
	at := fmt.Sprintf("Job %s/%s", job.Namespace, job.Name)
	if c := condition(job, batchv1.JobComplete); c != nil {
		return 0, fmt.Sprintf("%s: done, %s complete", name, at), nil
	}
	pods, err := w.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
	if err != nil {
		return 0, "", fmt.Errorf("%s: listing the pods of %s: %w", name, at, err)
	}
	pod := newest(pods.Items)
	if c := condition(job, batchv1.JobFailed); c != nil {
		return 0, "", fmt.Errorf("%s: %s failed: %s", name, at, u.failure(ctx, w, job, c, pod))
	}
	return u.retry(), fmt.Sprintf("%s: %s running: %s", name, at, podState(pod)), nil
}

// failure is why a failed Job failed: kc-roll's reason from its pod's log
// (roll.FailureReason), else what the Job and its pod say (an evicted
// pod, the Job's deadline).
func (u *Updater) failure(ctx context.Context, w kubernetes.Interface, job *batchv1.Job, c *batchv1.JobCondition, pod *corev1.Pod) string {
	var why []string
	if c.Reason != batchv1.JobReasonBackoffLimitExceeded {
		why = append(why, strings.TrimSpace(c.Reason+" "+c.Message))
	}
	if pod == nil {
		return strings.Join(append(why, "no pod of the Job is left to read kc-roll's reason from"), "; ")
	}
	// kc-roll ends with status 1 after its last word; any other end (killed,
	// evicted, never started) leaves a log without one.
	t := terminated(pod)
	if t != nil && t.ExitCode == 1 {
		log, err := u.logs(ctx, w, pod.Namespace, pod.Name, "upgrade")
		if reason := roll.FailureReason(log); reason != "" {
			return strings.Join(append(why, reason), "; ")
		}
		if err != nil {
			why = append(why, fmt.Sprintf("kc-roll failed; its log could not be read (%v)", err))
			return strings.Join(why, "; ")
		}
	}
	switch {
	case pod.Status.Reason != "":
		why = append(why, strings.TrimSpace("pod "+pod.Name+" "+pod.Status.Reason+": "+pod.Status.Message))
	case t != nil:
		why = append(why, strings.TrimSpace(fmt.Sprintf("pod %s: container upgrade ended %s (exit %d)", pod.Name, t.Reason, t.ExitCode)))
	default:
		why = append(why, "pod "+pod.Name+" "+string(pod.Status.Phase))
	}
	why = append(why, "kc-roll did not end on its own: the node's roll goes on from the state kc-roll keeps on the node when the Job runs again")
	return strings.Join(why, "; ")
}

func (u *Updater) logs(ctx context.Context, w kubernetes.Interface, namespace, pod, container string) (string, error) {
	if u.Logs != nil {
		return u.Logs(ctx, w, namespace, pod, container)
	}
	tail := int64(logLines)
	r, err := w.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &tail}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

func (u *Updater) retry() int32 {
	if u.RetryAfterSeconds > 0 {
		return u.RetryAfterSeconds
	}
	return DefaultRetryAfterSeconds
}

func condition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

func newest(pods []corev1.Pod) *corev1.Pod {
	if len(pods) == 0 {
		return nil
	}
	sort.SliceStable(pods, func(i, j int) bool { return pods[j].CreationTimestamp.Before(&pods[i].CreationTimestamp) })
	return &pods[0]
}

// podState says where the Job's pod is: its phase, and why it waits.
func podState(pod *corev1.Pod) string {
	if pod == nil {
		return "no pod yet"
	}
	s := "pod " + pod.Name + " " + string(pod.Status.Phase)
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if wt := cs.State.Waiting; wt != nil && wt.Reason != "" {
			s += ", container " + cs.Name + " " + strings.TrimSpace(wt.Reason+" "+wt.Message)
		}
	}
	return s
}

func terminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == "upgrade" && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}
