package fleet

// The fault roll (issue 33 sections 1 and 3): two faults an unattended roll
// meets, then the operator's retry. The runtime roll goes through the
// second and the retry with a canary that breaks under the new containerd
// (issue 47 section 4): the runtime step's gate fails on worker 3 and the
// Job rolls the runtime back, the kubelet untouched.
//   - The control plane's Job is killed right after its swap
//     (kill.go); once SUC deleted it (its TTL), it is created again (by
//     SUC, or after the operator's retry: retryFailed) and the re-run
//     gates the node against the picture the first run saved.
//   - The canary on worker 3 makes kc-roll's health gate fail there: the
//     Job's own rollback must have put the previous kubelet and its
//     configuration back without a restart and failed the Job, which stops
//     the Plan (the nodes the roll had not reached stay untouched); a
//     re-run of that Job refuses at once on the node's state.
//   - The retry: the operator removes the canary and, as the README says,
//     the node's roll state and marker, and touches the Plan; the next
//     Job rolls the node and the roll goes on to its end.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gateFailedMarker is where kc-roll marks a node whose gate failed.
func gateFailedMarker(target string) string {
	return "/var/lib/kubelet-compat/upgrade/" + target + ".gate-failed"
}

// kubeletFiles are what kubeadm upgrade rewrites on every node and a
// rollback puts back (the Job's backup).
var kubeletFiles = []string{"/var/lib/kubelet/config.yaml", "/var/lib/kubelet/kubeadm-flags.env"}

// faultState is what the fault roll keeps beside a fleetRun's.
type faultState struct {
	mu     sync.Mutex
	killed *killedJob
	// config: the faulty worker's kubeletFiles before the roll.
	config map[string][]byte
	// containerdConfig: the faulty worker's containerd configuration
	// before the roll (the runtime-2.0 roll).
	containerdConfig []byte
	// canaryRetired: the retry deleted the canary (left out of the
	// figures: the fault's instrument, not a workload).
	canaryRetired bool
	// retries: the Plans touched for a re-run (retryFailed).
	retries int
}

func (s *faultState) setKilled(k killedJob) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killed = &k
}

func (s *faultState) kill() *killedJob {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killed
}

func (f *fleetRun) faultyWorker() *kind.Node { return f.Cluster.Workers()[FaultWorker-1] }

// failureExpected says whether a failed Job is one of the fault roll's:
// the faulty worker's, or the Job the e2e killed.
func (f *fleetRun) failureExpected(j *jobRecord) bool {
	if f.canary == noCanary {
		return false
	}
	k := f.faults.kill()
	return j.Node == f.faultyWorker().Name() || (k != nil && k.JobUID == j.UID)
}

// SUC v0.20.1 deletes a failed Job once its TTL has passed but creates it
// again only when the Plan changes after that (it applies a Plan's Jobs
// once per resourceVersion: rancher/system-upgrade-controller#369), which
// its own status update sometimes does and sometimes does not. The fault
// roll therefore does the operator's retry (deploy/system-upgrade README):
// retryAfter after a failed Job it waits a re-run for is gone, it touches
// the Job's Plan, and stops when no Job follows within recreateGrace.
const (
	retryAfter    = 20 * time.Second
	recreateGrace = 90 * time.Second
)

// awaitsRerun says whether the fault roll waits for a re-run after the
// failed Job j: the killed Job's (gated against the saved picture), the
// faulty worker's first failure (a re-run refused on the node's state)
// and, once the retry began, its last refusal (the retried roll).
func (f *fleetRun) awaitsRerun(j *jobRecord) bool {
	if f.canary == noCanary || !j.Done || !j.Failed {
		return false
	}
	return j.Node != f.faultyWorker().Name() || j.Run == 1 || f.faults.canaryRetired
}

// retryDue says, at now, which failed Jobs' Plans the operator's retry
// touches now, or that the roll waits in vain: SUC did not delete a failed
// Job after its TTL, or created none after the retry.
func (f *fleetRun) retryDue(now time.Time) ([]*jobRecord, error) {
	var due []*jobRecord
	for _, j := range f.jobs {
		if !f.awaitsRerun(j) {
			continue
		}
		switch {
		case j.GoneAt.IsZero():
			if wait := now.Sub(j.End); wait > JobTTL*time.Second+recreateGrace {
				return nil, fmt.Errorf("%s: SUC has not deleted the failed Job %s %.0fs after it ended (its TTL is %d s)", j.Node, j.Name, wait.Seconds(), JobTTL)
			}
		case j.RetriedAt.IsZero():
			if now.Sub(j.GoneAt) > retryAfter {
				due = append(due, j)
			}
		default:
			if wait := now.Sub(j.RetriedAt); wait > recreateGrace {
				return nil, fmt.Errorf("%s: SUC has not created the failed Job %s again %.0fs after its Plan %s was touched", j.Node, j.Name, wait.Seconds(), j.Plan)
			}
		}
	}
	return due, nil
}

// retryFailed does the operator's retry for every failed Job retryDue
// names: the annotation the README gives, on the Job's Plan.
func (f *fleetRun) retryFailed(ctx context.Context) error {
	if f.capi != nil {
		// The extension makes the Job again itself when CAPI calls after
		// the failed one's TTL (capiFault waits for it).
		return nil
	}
	due, err := f.retryDue(time.Now())
	if err != nil {
		return err
	}
	for _, j := range due {
		f.faults.retries++
		if _, err := f.ExecLogged(ctx, f.Cluster.ControlPlane(), fmt.Sprintf("retry-%d", f.faults.retries), "kubectl", "--kubeconfig", adminConf,
			"-n", systemupgrade.Namespace, "annotate", "plan", j.Plan, fmt.Sprintf("%s=%d", systemupgrade.RetryAnnotation, time.Now().Unix()), "--overwrite"); err != nil {
			return err
		}
		j.RetriedAt = time.Now()
		f.Logf("%s: SUC did not create the failed Job %s again in the %.0fs since it deleted it: the operator's retry, annotation %s on Plan %s",
			j.Node, j.Name, j.RetriedAt.Sub(j.GoneAt).Seconds(), systemupgrade.RetryAnnotation, j.Plan)
	}
	return nil
}

// saveFaultyConfig keeps the faulty worker's kubelet configuration before
// the roll.
func (f *fleetRun) saveFaultyConfig(ctx context.Context) error {
	f.faults.config = map[string][]byte{}
	for _, p := range kubeletFiles {
		b, err := f.faultyWorker().ReadFile(ctx, p)
		if err != nil {
			return fmt.Errorf("%s: %w", f.faultyWorker().Name(), err)
		}
		f.faults.config[p] = b
	}
	if f.runtimeFrom != (plan.Runtime{}) {
		// The runtime-2.0 roll's step migrates containerd's configuration;
		// its rollback must put this file back.
		b, err := f.faultyWorker().ReadFile(ctx, containerdConfig)
		if err != nil {
			return fmt.Errorf("%s: %w", f.faultyWorker().Name(), err)
		}
		f.faults.containerdConfig = b
	}
	return nil
}

// faultRoll follows the roll, killing the control plane's Job right after
// its swap, until the faulty worker's first Job failed, a minute has
// passed in which the controller should (not) start another node, and a
// re-run of that Job has ended.
func (f *fleetRun) faultRoll(ctx context.Context) error {
	kctx, stop := context.WithCancel(ctx)
	defer stop()
	if f.fault {
		go f.killAfterSwap(kctx, f.Cluster.ControlPlane(), f.Steps[0].To)
	}
	faulty := f.faultyWorker().Name()
	var stopAt time.Time
	return f.followRoll(ctx, func() error {
		if k := f.faults.kill(); k != nil && k.Err != nil {
			return stopPolling{fmt.Errorf("killing %s's Job after the swap: %w", k.Node, k.Err)}
		}
		j, ok := f.jobs[faulty]
		if !ok {
			return fmt.Errorf("waiting for the Job on %s", faulty)
		}
		first := j.first()
		switch {
		case !first.Done:
			return fmt.Errorf("waiting for the Job on %s", faulty)
		case !first.Failed:
			return stopPolling{fmt.Errorf("the Job on %s, whose gate must fail, succeeded (see %s)", faulty, f.jobLogPath(first))}
		case stopAt.IsZero():
			// A minute for the controller to (not) start the next node;
			// the failed Job is run again after JobTTL (retryFailed).
			stopAt = time.Now().Add(time.Minute)
			f.Logf("the Job on %s failed: watching for a minute that no other node starts, and for its re-run", faulty)
		}
		if time.Now().Before(stopAt) {
			return fmt.Errorf("watching the roll stay stopped")
		}
		if j.Run < 2 || !j.Done {
			return fmt.Errorf("waiting for the re-run of the Job on %s", faulty)
		}
		return nil
	})
}

// checkFault checks the roll as the faults left it, before the retry.
func (f *fleetRun) checkFault(ctx context.Context) error {
	if f.fault {
		if err := f.checkKilled(ctx); err != nil {
			return err
		}
	}
	if err := f.checkRolledBack(ctx); err != nil {
		return err
	}
	f.checkStopped(ctx)
	return nil
}

// checkKilled: the control plane's Job was killed after its swap, and a
// re-run gated the node against the first run's picture.
func (f *fleetRun) checkKilled(ctx context.Context) error {
	cp := f.Cluster.ControlPlane()
	prefix := f.label()
	k := f.faults.kill()
	j := f.jobs[cp.Name()]
	s2, err := stage2(ctx, cp)
	if err != nil {
		return err
	}
	detail := "the kill never happened: the gate's verdict came before the e2e saw the new kubelet"
	passed := false
	if k != nil && j != nil {
		logText := readLog(f.jobLogPath(j))
		killedLog := readLog(f.jobLogPath(j.first()))
		rerun := strings.Contains(logText, "died after the swap, before its gate's verdict") && strings.Contains(logText, "gate: passed")
		passed = j.Run >= 2 && j.first().Failed && j.Done && !j.Failed && rerun && s2 == f.Steps[0].To &&
			!strings.Contains(killedLog, "gate: passed")
		detail = fmt.Sprintf("container %s of Job %s stopped %s after the swap was seen (%.1fs of looking); the killed run logged no verdict: %t; Job runs on the node: %d, the last %s; its log: gated against the saved picture and passed: %t; stage2 %s",
			k.Container, k.Job, k.At.Format("15:04:05"), k.SwappedAfter.Seconds(), !strings.Contains(killedLog, "gate: passed"), j.Run, jobOutcome(j), rerun, s2)
	}
	f.Record(report.Check{Name: fmt.Sprintf("%s: %s's Job killed right after its swap; SUC's re-run gated the node against the saved picture, not certified without a gate", prefix, cp.Name()),
		Passed: passed, Detail: detail})
	return nil
}

// checkRolledBack: the gate failed on the faulty worker, which is back on
// the previous kubelet and configuration with nothing restarted, and SUC's
// re-runs of its Job refused at once.
func (f *fleetRun) checkRolledBack(ctx context.Context) error {
	st := f.Steps[0]
	faulty := f.faultyWorker()
	prefix := f.label()

	// The gate failed there, and said why.
	last := f.jobs[faulty.Name()]
	var j *jobRecord
	logText := ""
	if last != nil {
		j = last.first()
		logText = readLog(f.jobLogPath(j))
	}
	_, markErr := faulty.ReadFile(ctx, gateFailedMarker(st.To))
	failedWhy, gateName := "the health gate failed", "the health gate"
	if f.canary == runtimeCanary {
		failedWhy, gateName = "the runtime step's health gate failed", "the runtime step's gate"
	}
	f.Record(report.Check{Name: fmt.Sprintf("%s: %s failed on %s (worker %d), its Job failed", prefix, gateName, faulty.Name(), FaultWorker),
		Passed: j != nil && j.Failed && markErr == nil && strings.Contains(logText, failedWhy) && strings.Contains(logText, kind.Namespace+"/"+CanaryName),
		Detail: fmt.Sprintf("Job failed: %t; marker %s: %s; the Job's log says %q: %t, names the canary: %t", j != nil && j.Failed, gateFailedMarker(st.To), errText(markErr),
			failedWhy, strings.Contains(logText, failedWhy), strings.Contains(logText, kind.Namespace+"/"+CanaryName))})

	// Back on the previous kubelet and its configuration, nothing
	// restarted (the runtime, now against before the roll).
	s2, err := stage2(ctx, faulty)
	if err != nil {
		return err
	}
	verr := f.waitKubelet(ctx, faulty, st.From, true, time.Time{}, 2*time.Minute)
	now, err := kind.SnapshotNode(ctx, faulty)
	if err != nil {
		return err
	}
	diff := snapshot.Compare(workloadsOnly(f.snapBefore[faulty.Name()]), workloadsOnly(now))
	var changed []string
	for _, p := range kubeletFiles {
		b, err := faulty.ReadFile(ctx, p)
		if err != nil || !bytes.Equal(b, f.faults.config[p]) {
			changed = append(changed, p)
		}
	}
	if f.canary == runtimeCanary {
		// The runtime step failed: containerd back to the distribution's,
		// the kubelet never swapped.
		back, detail := f.runtimeBack(ctx, faulty)
		f.Record(report.Check{Name: fmt.Sprintf("%s: %s's containerd rolled back (%s no more), its kubelet %s and configuration untouched, 0 restarts", prefix, faulty.Name(), f.runtime.Version, st.From),
			Passed: back && s2 == st.From && verr == nil && diff.Restarts == 0 && diff.RecreatedPods == 0 && len(changed) == 0,
			Detail: fmt.Sprintf("%s; stage2 %s; kubelet: %s; %d restarts, %d pods recreated (the runtime); %s not as before the roll: %s",
				detail, s2, errText(verr), diff.Restarts, diff.RecreatedPods, strings.Join(kubeletFiles, " "), list(changed))})
		if f.runtimeFrom != (plan.Runtime{}) {
			f.checkRuntimeRollbackFrom2(ctx, logText)
		}
	} else {
		f.Record(report.Check{Name: fmt.Sprintf("%s: %s rolled back to %s and its kubelet configuration, 0 restarts", prefix, faulty.Name(), st.From),
			Passed: s2 == st.From && verr == nil && diff.Restarts == 0 && diff.RecreatedPods == 0 && len(changed) == 0,
			Detail: fmt.Sprintf("stage2 %s; kubelet: %s; %d restarts, %d pods recreated (the runtime); %s not as before the roll: %s",
				s2, errText(verr), diff.Restarts, diff.RecreatedPods, strings.Join(kubeletFiles, " "), list(changed))})
	}

	// The failed Job ran again after its TTL: each re-run refused.
	var reruns, refused int
	if last != nil {
		for _, r := range append(append([]*jobRecord(nil), last.Earlier...), last)[1:] {
			if !r.Done {
				continue
			}
			reruns++
			if r.Failed && strings.Contains(readLog(f.jobLogPath(r)), "not trying again") {
				refused++
			}
		}
	}
	f.Record(report.Check{Name: fmt.Sprintf("%s: the re-runs of the failed Job on %s (TTL %d s) refused at once, the node stayed on %s", prefix, faulty.Name(), JobTTL, st.From),
		Passed: reruns >= 1 && refused == reruns && s2 == st.From,
		Detail: fmt.Sprintf("%d re-runs ended before the retry (%d Plan(s) touched by then), %d refused on the node's state", reruns, f.faults.retries, refused)})
	return nil
}

// checkStopped: the roll stopped at the faulty worker; the nodes it had not
// reached are untouched, the ones before upgraded.
func (f *fleetRun) checkStopped(ctx context.Context) {
	st := f.Steps[0]
	faulty := f.faultyWorker()
	var untouched, upgraded, wrong []string
	for _, w := range f.data.windows {
		n := f.nodeNamed(w.Node)
		switch w.Outcome {
		case outcomeUntouched:
			untouched = append(untouched, w.Node)
			s, err := stage2(ctx, n)
			if err != nil {
				wrong = append(wrong, err.Error())
			} else if s != st.From {
				wrong = append(wrong, fmt.Sprintf("%s: stage2 %s", w.Node, s))
			}
		case outcomeUpgraded:
			upgraded = append(upgraded, w.Node)
		case outcomeRolledBack:
			if w.Node != faulty.Name() {
				wrong = append(wrong, w.Node+" rolled back too")
			}
		default:
			wrong = append(wrong, w.Node+": "+w.Outcome)
		}
	}
	reached := len(f.Cluster.Workers()) - len(untouched)
	f.Record(report.Check{Name: fmt.Sprintf("%s: the roll stopped at %s, the workers after it untouched", f.label(), faulty.Name()),
		Passed: len(wrong) == 0 && f.lastStarted() == faulty.Name(),
		Detail: fmt.Sprintf("order %s; upgraded %s; untouched (no Job, stage2 %s) %s; %d of %d workers reached; wrong: %s",
			strings.Join(f.order, " "), list(upgraded), st.From, list(untouched), reached, len(f.Cluster.Workers()), list(wrong))})
}

// retryRoll is the operator's retry after the failed gate: the canary
// deleted, the node's roll state and marker removed under the roll's lock
// (README, "The roll's state"), the Plan touched (retryFailed); the next
// Job on the node rolls it and the roll goes on to its end.
func (f *fleetRun) retryRoll(ctx context.Context) error {
	defer f.saveControllerLog(ctx)
	faulty := f.faultyWorker()
	grace := int64(0)
	if err := f.Cluster.Client.CoreV1().Pods(kind.Namespace).Delete(ctx, CanaryName, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		return fmt.Errorf("deleting the canary: %w", err)
	}
	if err := kind.Poll(ctx, 2*time.Minute, func() error {
		if _, err := f.Cluster.Client.CoreV1().Pods(kind.Namespace).Get(ctx, CanaryName, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("the canary is still there")
		}
		return nil
	}); err != nil {
		return err
	}
	f.faults.canaryRetired = true
	out, err := faulty.Exec(ctx, nil, "flock", "/var/lib/kubelet-compat/roll/lock", "rm", "-f", rollStatePath, gateFailedMarker(f.Steps[0].To))
	if err != nil {
		return fmt.Errorf("%s: removing the roll's state: %w: %s", faulty.Name(), err, strings.TrimSpace(string(out)))
	}
	f.Logf("retry: the canary deleted, %s and %s removed on %s: SUC's next Job rolls it", rollStatePath, gateFailedMarker(f.Steps[0].To), faulty.Name())
	err = f.followRoll(ctx, f.allDone())
	f.data.rollEnd = time.Now()
	f.setWindows()
	return err
}

// checkRetry: the retry upgraded the faulty worker, its gate passed, and
// nothing restarted on it over the rollback and the retry.
func (f *fleetRun) checkRetry(ctx context.Context) error {
	faulty := f.faultyWorker()
	j := f.jobs[faulty.Name()]
	s2, err := stage2(ctx, faulty)
	if err != nil {
		return err
	}
	fig := f.data.nodeFigures(f.windowOf(faulty.Name()))
	gated := j != nil && strings.Contains(readLog(f.jobLogPath(j)), "gate: passed")
	f.Record(report.Check{Name: fmt.Sprintf("%s: the retry rolled %s to %s through its gate, 0 restarts over the rollback and the retry", f.label(), faulty.Name(), f.cur().To),
		Passed: j != nil && j.Done && !j.Failed && gated && s2 == f.Steps[0].To && fig.Restarts == 0 && fig.Recreated == 0 && fig.UIDsChanged == 0 && fig.Evicted == 0,
		Detail: fmt.Sprintf("Job runs on the node: %d, the last %s, gate passed: %t; stage2 %s; %s", runs(j), jobOutcome(j), gated, s2, describe(fig))})
	return nil
}

func runs(j *jobRecord) int {
	if j == nil {
		return 0
	}
	return j.Run
}

// jobOutcome names how a Job ended.
func jobOutcome(j *jobRecord) string {
	switch {
	case j == nil:
		return "none"
	case !j.Done:
		return "running"
	case j.Failed:
		return "failed"
	}
	return "complete"
}

func readLog(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// lastStarted is the last node the roll started.
func (f *fleetRun) lastStarted() string {
	if len(f.order) == 0 {
		return ""
	}
	return f.order[len(f.order)-1]
}

func (f *fleetRun) windowOf(node string) nodeWindow {
	for _, w := range f.data.windows {
		if w.Node == node {
			return w
		}
	}
	return nodeWindow{Node: node}
}

func (f *fleetRun) nodeNamed(name string) *kind.Node {
	for _, n := range f.Cluster.Nodes {
		if n.Name() == name {
			return n
		}
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
