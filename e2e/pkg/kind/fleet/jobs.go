package fleet

// Following SUC's Jobs: each node's Job, when kc-roll ran in it, its
// pod's output kept in the report's logs, and the nodes' windows and order
// the figures are cut by.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/manifest"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// jobRecord is one node's upgrade Job as the roll saw it.
type jobRecord struct {
	Name, Node, Plan string
	UID              types.UID
	// Run counts the node's Jobs (a failed Job is created again under the
	// same name once SUC deleted it and its Plan changed): 1 for the first.
	Run int
	// Earlier are the node's Jobs before this one, first first.
	Earlier []*jobRecord
	// Start and End: the upgrade container's run (kc-roll), else the
	// Job's; Failed: the Job failed.
	Start, End time.Time
	Done       bool
	Failed     bool
	logged     bool
	// HadPod: the Job was seen with a pod (SUC first creates a Job
	// paused, and may replace it before it has one: not a run).
	HadPod bool
	// GoneAt: when the Job was first seen gone from the API (SUC deletes
	// a finished one after its TTL); RetriedAt: when the fault roll
	// touched its Plan for a re-run (retryFailed).
	GoneAt, RetriedAt time.Time
}

// first is the node's first Job.
func (j *jobRecord) first() *jobRecord {
	if len(j.Earlier) > 0 {
		return j.Earlier[0]
	}
	return j
}

// firstStart is when the node's first Job began kc-roll (zero: none
// began).
func (j *jobRecord) firstStart() time.Time {
	for _, e := range append(append([]*jobRecord(nil), j.Earlier...), j) {
		if !e.Start.IsZero() {
			return e.Start
		}
	}
	return time.Time{}
}

// nextJob is the record of Job j of node: rec when it is rec's Job, else a
// new one after rec (nil: none before), or in rec's place when rec's Job
// never had a pod (SUC replaced the paused Job it had just created).
func nextJob(rec *jobRecord, j *batchv1.Job, node string) (*jobRecord, bool) {
	if rec != nil && rec.UID == j.UID {
		return rec, false
	}
	next := &jobRecord{Name: j.Name, UID: j.UID, Node: node, Plan: j.Labels[sucLabelPlan], Run: 1}
	if rec != nil && !rec.Done && !rec.HadPod {
		next.Run, next.Earlier = rec.Run, rec.Earlier
		return next, true
	}
	if rec != nil {
		next.Earlier = append(append([]*jobRecord(nil), rec.Earlier...), rec)
		next.Run = rec.Run + 1
	}
	return next, true
}

// followJobs reads the plans' Jobs, records their progress and keeps the
// logs of each that ended.
func (f *fleetRun) followJobs(ctx context.Context) error {
	cp, workers := f.planOptions().PlanNames()
	// The Jobs of the Plans' version: the minors roll's earlier Plans
	// leave theirs until their TTL. The CAPI extension's Jobs carry its
	// own labels.
	selector, nodeLabel := fmt.Sprintf("%s in (%s,%s),%s=%s", sucLabelPlan, cp, workers, sucLabelVersion, f.cur().To), sucLabelNode
	if f.capi != nil {
		selector, nodeLabel = capiJobSelector(f.cur().To), manifest.CAPILabelNode
	}
	list, err := f.Cluster.Client.BatchV1().Jobs(systemupgrade.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	listed := map[types.UID]bool{}
	for i := range list.Items {
		j := &list.Items[i]
		listed[j.UID] = true
		node := j.Labels[nodeLabel]
		rec, created := nextJob(f.jobs[node], j, node)
		if created {
			f.jobs[node] = rec
			f.Logf("%s: Job %s created (%s, run %d on the node)", node, j.Name, rec.Plan, rec.Run)
		}
		if j.Status.Active+j.Status.Succeeded+j.Status.Failed > 0 {
			rec.HadPod = true
		}
		complete, failed := jobFinished(j)
		if rec.Done || !(complete || failed) {
			continue
		}
		rec.Done, rec.Failed = true, failed
		rec.Start, rec.End = f.upgradeRun(ctx, j)
		f.saveJobLog(ctx, rec)
		f.Logf("%s: Job %s %s after %.0fs of kc-roll (logs: %s)", node, j.Name, map[bool]string{true: "FAILED", false: "complete"}[failed], rec.End.Sub(rec.Start).Seconds(), f.jobLogPath(rec))
	}
	for _, rec := range f.jobs {
		if !listed[rec.UID] && rec.GoneAt.IsZero() {
			rec.GoneAt = time.Now()
		}
	}
	return nil
}

// jobFinished reads a Job's Complete and Failed conditions.
func jobFinished(j *batchv1.Job) (complete, failed bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != v1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			complete = true
		case batchv1.JobFailed:
			failed = true
		}
	}
	return complete, failed
}

// upgradeRun is when kc-roll ran: its container's start and finish in
// the Job's pod (a worker's Job begins by waiting for the control plane in
// its prepare step, which is not the node's upgrade), from its first run
// when the kubelet restarted it (the released kubelet of the naive roll
// may restart the container that swapped it in); the Job's own times when
// the pod is gone.
func (f *fleetRun) upgradeRun(ctx context.Context, j *batchv1.Job) (time.Time, time.Time) {
	start, end := time.Time{}, time.Now()
	if j.Status.StartTime != nil {
		start = j.Status.StartTime.Time
	}
	if j.Status.CompletionTime != nil {
		end = j.Status.CompletionTime.Time
	}
	pods, err := f.Cluster.Client.CoreV1().Pods(systemupgrade.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + j.Name})
	if err != nil {
		return start, end
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "upgrade" && cs.State.Terminated != nil {
				return containerRun(cs)
			}
		}
	}
	return start, end
}

// containerRun is a terminated container's run: its last finish, from the
// start of the run before it when the kubelet restarted it.
func containerRun(cs v1.ContainerStatus) (time.Time, time.Time) {
	start, end := cs.State.Terminated.StartedAt.Time, cs.State.Terminated.FinishedAt.Time
	if last := cs.LastTerminationState.Terminated; last != nil && !last.StartedAt.IsZero() && last.StartedAt.Time.Before(start) {
		start = last.StartedAt.Time
	}
	return start, end
}

func (f *fleetRun) jobLogPath(j *jobRecord) string {
	if j.Run > 1 {
		return filepath.Join(f.Options.LogDir, f.Name, fmt.Sprintf("job-%s-run%d.log", j.Node, j.Run))
	}
	return filepath.Join(f.Options.LogDir, f.Name, "job-"+j.Node+".log")
}

// saveJobLog writes the Job's pod's containers' output (prepare, upgrade)
// into the report's logs.
func (f *fleetRun) saveJobLog(ctx context.Context, j *jobRecord) {
	var b bytes.Buffer
	pods, err := f.Cluster.Client.CoreV1().Pods(systemupgrade.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + j.Name})
	if err != nil {
		fmt.Fprintf(&b, "listing the Job's pods: %v\n", err)
	}
	if pods != nil {
		for _, p := range pods.Items {
			var names []string
			for _, c := range p.Spec.InitContainers {
				names = append(names, c.Name)
			}
			for _, c := range p.Spec.Containers {
				names = append(names, c.Name)
			}
			restarted := map[string]bool{}
			for _, cs := range append(append([]v1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
				restarted[cs.Name] = cs.RestartCount > 0
			}
			for _, c := range names {
				if restarted[c] {
					// The run the kubelet restarted (the naive roll's released kubelet).
					fmt.Fprintf(&b, "==> pod %s, container %s, the run before its restart\n", p.Name, c)
					out, err := f.Cluster.Client.CoreV1().Pods(systemupgrade.Namespace).GetLogs(p.Name, &v1.PodLogOptions{Container: c, Previous: true}).DoRaw(ctx)
					if err != nil {
						fmt.Fprintf(&b, "(logs: %v)\n", err)
					}
					b.Write(out)
				}
				fmt.Fprintf(&b, "==> pod %s, container %s (%s)\n", p.Name, c, p.Status.Phase)
				out, err := f.Cluster.Client.CoreV1().Pods(systemupgrade.Namespace).GetLogs(p.Name, &v1.PodLogOptions{Container: c}).DoRaw(ctx)
				if err != nil {
					fmt.Fprintf(&b, "(logs: %v)\n", err)
				}
				b.Write(out)
			}
		}
	}
	os.MkdirAll(filepath.Dir(f.jobLogPath(j)), 0o755)
	os.WriteFile(f.jobLogPath(j), b.Bytes(), 0o644)
	j.logged = true
}

// saveControllerLog keeps the controller's output, and the Jobs not
// logged yet (a roll that timed out), in the report's logs. SUC labels its
// Jobs' pods with the controller's label too: those have a plan label.
func (f *fleetRun) saveControllerLog(ctx context.Context) {
	for _, j := range f.jobs {
		for _, e := range append(append([]*jobRecord(nil), j.Earlier...), j) {
			if !e.logged {
				f.saveJobLog(ctx, e)
			}
		}
	}
	pods, err := f.Cluster.Client.CoreV1().Pods(systemupgrade.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "upgrade.cattle.io/controller=system-upgrade-controller,!" + sucLabelPlan})
	if err != nil {
		f.Logf("system-upgrade-controller's logs: %v", err)
		return
	}
	var b bytes.Buffer
	for _, p := range pods.Items {
		out, err := f.Cluster.Client.CoreV1().Pods(systemupgrade.Namespace).GetLogs(p.Name, &v1.PodLogOptions{}).DoRaw(ctx)
		fmt.Fprintf(&b, "==> pod %s (err: %v)\n", p.Name, err)
		b.Write(out)
	}
	f.NodeLog(f.Cluster.ControlPlane(), "system-upgrade-controller", b.Bytes())
}

// setWindows turns the Jobs into node windows and the roll's order: a node
// without a Job was untouched.
func (f *fleetRun) setWindows() {
	f.data.windows, f.order = jobWindows(f.Cluster.Nodes, f.jobs)
	// The fleet's time ends with the last kc-roll, not with the
	// minute the fault roll watches that nothing else starts.
	if end := lastEnd(f.data.windows); !end.IsZero() {
		f.data.rollEnd = end
	}
}

// lastEnd is the latest end of windows (zero: none ended).
func lastEnd(windows []nodeWindow) time.Time {
	var end time.Time
	for _, w := range windows {
		if w.End.After(end) {
			end = w.End
		}
	}
	return end
}

// jobWindows are the nodes' windows (in the cluster's node order) and the
// order the roll took them (by the start of kc-roll).
func jobWindows(nodes []*kind.Node, jobs map[string]*jobRecord) ([]nodeWindow, []string) {
	var windows []nodeWindow
	var started []*jobRecord
	for _, n := range nodes {
		j, ok := jobs[n.Name()]
		switch {
		case !ok:
			windows = append(windows, nodeWindow{Node: n.Name(), Outcome: outcomeUntouched})
		case !j.Done:
			windows = append(windows, nodeWindow{Node: n.Name(), Outcome: outcomeFailed})
		case j.Failed:
			windows = append(windows, nodeWindow{Node: n.Name(), Start: j.firstStart(), End: j.End, Outcome: outcomeRolledBack})
			started = append(started, j)
		default:
			windows = append(windows, nodeWindow{Node: n.Name(), Start: j.firstStart(), End: j.End, Outcome: outcomeUpgraded})
			started = append(started, j)
		}
	}
	sort.SliceStable(started, func(a, b int) bool { return started[a].firstStart().Before(started[b].firstStart()) })
	var order []string
	for _, j := range started {
		order = append(order, j.Node)
	}
	return windows, order
}

// maxOverlap is the most windows running at one moment.
func maxOverlap(windows []nodeWindow) int {
	best := 0
	for _, w := range windows {
		if w.Start.IsZero() {
			continue
		}
		n := 0
		for _, o := range windows {
			if !o.Start.IsZero() && !o.Start.After(w.Start) && o.End.After(w.Start) {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

// checkConcurrency: the workers' kc-roll ran at most Concurrency at
// once, and that many at some moment (4 workers, a minute or more each).
func (f *fleetRun) checkConcurrency() {
	var workers []nodeWindow
	for _, w := range f.data.windows {
		if w.Node != f.Cluster.ControlPlane().Name() {
			workers = append(workers, w)
		}
	}
	got := maxOverlap(workers)
	f.Record(reportCheck(fmt.Sprintf("%s: the workers' Plan ran %d nodes at once", f.label(), f.concurrency),
		got == int(f.concurrency), fmt.Sprintf("at most %d workers' kc-roll at one moment; order %s", got, strings.Join(f.order, " "))))
}
