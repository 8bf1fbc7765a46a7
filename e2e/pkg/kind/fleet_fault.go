package kind

// The fault roll's checks: the canary on worker 3 makes upgrade.sh's health
// gate fail there; the Job's own rollback (record, stage2 back) must have
// put the previous kubelet back without a restart, the Job must have
// failed, which stops the Plan: the nodes the roll had not reached stay
// untouched.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
)

// gateFailedMarker is where upgrade.sh marks a node whose gate failed.
func gateFailedMarker(target string) string {
	return "/var/lib/kubelet-compat/upgrade/" + target + ".gate-failed"
}

func (f *fleetRun) checkFault(ctx context.Context) error {
	st := f.steps[0]
	faulty := f.c.Workers()[FleetFaultWorker-1]
	prefix := fmt.Sprintf("%s %s", f.name, f.roll)

	// The gate failed there, and said why.
	j := f.jobs[faulty.name]
	logText := ""
	if j != nil {
		b, _ := os.ReadFile(f.jobLogPath(j))
		logText = string(b)
	}
	_, markErr := faulty.ReadFile(ctx, gateFailedMarker(st.To))
	f.record(report.Check{Name: fmt.Sprintf("%s: the health gate failed on %s (worker %d), its Job failed", prefix, faulty.name, FleetFaultWorker),
		Passed: j != nil && j.Failed && markErr == nil && strings.Contains(logText, "the health gate failed") && strings.Contains(logText, Namespace+"/"+CanaryName),
		Detail: fmt.Sprintf("Job failed: %t; marker %s: %s; the Job's log names the canary: %t", j != nil && j.Failed, gateFailedMarker(st.To), errText(markErr),
			strings.Contains(logText, Namespace+"/"+CanaryName))})

	// Back on the previous kubelet, nothing restarted.
	s2, err := stage2(ctx, faulty)
	if err != nil {
		return err
	}
	verr := f.waitKubelet(ctx, faulty, st.From, true, time.Time{}, 2*time.Minute)
	fig := f.data.nodeFigures(f.windowOf(faulty.name))
	f.record(report.Check{Name: fmt.Sprintf("%s: %s rolled back to %s with 0 restarts", prefix, faulty.name, st.From),
		Passed: s2 == st.From && verr == nil && fig.Restarts == 0 && fig.Recreated == 0 && fig.UIDsChanged == 0 && fig.Evicted == 0,
		Detail: fmt.Sprintf("stage2 %s; kubelet: %s; %s", s2, errText(verr), describe(fig))})

	// The roll stopped there: the nodes it had not reached are untouched,
	// the ones before upgraded without a restart.
	var untouched, upgraded, wrong []string
	for _, w := range f.data.windows {
		n := f.nodeNamed(w.Node)
		switch w.Outcome {
		case outcomeUntouched:
			untouched = append(untouched, w.Node)
			s, err := stage2(ctx, n)
			if err != nil {
				return err
			}
			fig := f.data.nodeFigures(w)
			if s != st.From || fig.Restarts != 0 || fig.Recreated != 0 {
				wrong = append(wrong, fmt.Sprintf("%s: stage2 %s, %d restarts", w.Node, s, fig.Restarts))
			}
		case outcomeUpgraded:
			upgraded = append(upgraded, w.Node)
		case outcomeRolledBack:
			if w.Node != faulty.name {
				wrong = append(wrong, w.Node+" rolled back too")
			}
		default:
			wrong = append(wrong, w.Node+": "+w.Outcome)
		}
	}
	reached := len(f.c.Workers()) - len(untouched)
	f.record(report.Check{Name: fmt.Sprintf("%s: the roll stopped at %s, the workers after it untouched", prefix, faulty.name),
		Passed: len(wrong) == 0 && f.lastStarted() == faulty.name,
		Detail: fmt.Sprintf("order %s; upgraded %s; untouched (no Job, stage2 %s, 0 restarts) %s; %d of %d workers reached; wrong: %s",
			strings.Join(f.order, " "), list(upgraded), st.From, list(untouched), reached, len(f.c.Workers()), list(wrong))})
	return nil
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

func (f *fleetRun) nodeNamed(name string) *Node {
	for _, n := range f.c.Nodes {
		if n.name == name {
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
