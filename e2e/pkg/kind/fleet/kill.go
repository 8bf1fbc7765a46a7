package fleet

// The fault roll's second fault (issue 33 section 1): the control plane's
// upgrade Job is killed right after its swap, before its gate's verdict, as
// an unpatched kubelet, an OOM kill or the Job's deadline would kill it.
// SUC creates the Job again once the failed one's TTL has passed (the
// fault roll's controller keeps finished Jobs JobTTL seconds, not
// SUC's 900); kc-roll's re-run finds the roll's state "swapping" on the
// node with stage2 on the target and runs the gate against the picture the
// first run saved there. The node must end gated on the target (or rolled
// back), never certified without a gate. The control plane is the node
// every roll takes first, whatever order SUC gives the workers.

import (
	"context"
	"fmt"
	"strings"
	"time"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// JobTTL is the fault roll's Job TTL (seconds): how long SUC keeps a
// failed Job before it deletes it (and, once its Plan changed, creates it
// again: retryFailed).
const JobTTL = 30

// rollStatePath is kc-roll's roll state on a node (README, "The roll's
// state").
const rollStatePath = "/var/lib/kubelet-compat/roll/state"

// swapProbe prints the node's roll state and the executable of the process
// systemd runs as the kubelet (kubernetes-select's links resolved).
var swapProbe = []string{"sh", "-c", `cat ` + rollStatePath + ` 2>/dev/null; pid=$(systemctl show -p MainPID --value kubelet); echo "kubelet-exe=$(readlink /proc/$pid/exe 2>/dev/null)"`}

// swappedTo says whether swapProbe's output shows the roll to target past
// its swap and before its verdict: the state's phase is swapping, its
// target is target, and the kubelet's process runs target's binary
// (/usr/local/kubernetes/<target>/stage2/...).
func swappedTo(out, target string) bool {
	kv := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			kv[k] = v
		}
	}
	return kv["phase"] == "swapping" && kv["target"] == target &&
		strings.Contains(kv["kubelet-exe"], kubeRoot+"/"+target+"/stage2/")
}

// killedJob is what killAfterSwap did.
type killedJob struct {
	Node, Job string
	JobUID    types.UID
	Container string
	At        time.Time
	// SwappedAfter: from the first look to the look that saw the swap.
	SwappedAfter time.Duration
	Err          error
}

// killAfterSwap watches n until its roll to target is past the swap, then stops its upgrade Job's container through the runtime (crictl
// stop, no grace period: a SIGKILL), and keeps what it did in f.faults. It
// gives up when ctx ends.
func (f *fleetRun) killAfterSwap(ctx context.Context, n *kind.Node, target string) {
	first := time.Now()
	for {
		out, _ := n.Exec(ctx, nil, swapProbe...)
		if swappedTo(string(out), target) {
			f.killJob(ctx, n, time.Since(first))
			return
		}
		// Once a second until the swap begins (each look is a process in
		// the node), then every 250 ms: the gate needs seconds at least.
		every := time.Second
		if strings.Contains(string(out), "\nphase=swapping\n") || strings.HasPrefix(string(out), "phase=swapping\n") {
			every = 250 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// killJob stops the running upgrade container of n's upgrade Job: the Job
// from the API (the e2e's own Plan made it), its container from the
// runtime by the pod's UID.
func (f *fleetRun) killJob(ctx context.Context, n *kind.Node, looked time.Duration) {
	k := killedJob{Node: n.Name(), SwappedAfter: looked}
	defer func() { f.faults.setKilled(k) }()
	cp, _ := f.planOptions().PlanNames()
	jobs, err := f.Cluster.Client.BatchV1().Jobs(systemupgrade.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: fmt.Sprintf("%s=%s,%s=%s", sucLabelNode, n.Name(), sucLabelPlan, cp)})
	if err != nil {
		k.Err = err
		return
	}
	for _, j := range jobs.Items {
		if complete, failed := jobFinished(&j); complete || failed {
			continue
		}
		k.Job, k.JobUID = j.Name, j.UID
	}
	if k.Job == "" {
		k.Err = fmt.Errorf("no running Job of Plan %s on %s", cp, n.Name())
		return
	}
	pods, err := f.Cluster.Client.CoreV1().Pods(systemupgrade.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + k.Job})
	if err != nil {
		k.Err = fmt.Errorf("the pod of Job %s: %w", k.Job, err)
		return
	}
	if len(pods.Items) != 1 {
		k.Err = fmt.Errorf("Job %s has %d pods, not 1", k.Job, len(pods.Items))
		return
	}
	out, err := n.Exec(ctx, nil, "crictl", "ps", "-q", "--name", "^upgrade$", "--label", "io.kubernetes.pod.uid="+string(pods.Items[0].UID))
	k.Container = strings.TrimSpace(string(out))
	if err != nil || k.Container == "" || strings.Contains(k.Container, "\n") {
		k.Err = fmt.Errorf("the upgrade container of pod %s on %s: %v (%q)", pods.Items[0].Name, n.Name(), err, k.Container)
		return
	}
	// Known before the Job fails: its failure is the fault's, not the roll's.
	f.faults.setKilled(k)
	// crictl's own request deadline (2 s) is too short for a node whose
	// kubelet was just swapped under kubeadm's restarts: a kind run failed
	// with DeadlineExceeded there.
	if out, err := n.Exec(ctx, nil, "crictl", "--timeout", "60s", "stop", "--timeout", "0", k.Container); err != nil {
		k.Err = fmt.Errorf("crictl stop %s on %s: %w: %s", k.Container, n.Name(), err, strings.TrimSpace(string(out)))
	}
	k.At = time.Now()
	f.Logf("%s: the upgrade container %s of Job %s stopped (SIGKILL) right after the swap", n.Name(), k.Container, k.Job)
}
