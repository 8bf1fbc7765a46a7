package sim

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/proc"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times (100 on
// Linux x86-64).
const clockTicks = 100

func result(o Options, conc Concurrency, t0 time.Time, s snapshot, outcome string, before, after sample, suc *proc.Process) (Result, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", suc.PID))
	if err != nil {
		return Result{}, err
	}
	hwm, err := StatusKB(status, "VmHWM")
	if err != nil {
		return Result{}, err
	}
	rss, err := StatusKB(status, "VmRSS")
	if err != nil {
		return Result{}, err
	}
	end := s.last
	total := end.Sub(t0)
	window := after.at.Sub(before.at).Seconds()
	req := after.requests.Sub(before.requests)
	cpu := float64(after.sucTicks-before.sucTicks) / clockTicks
	r := Result{Concurrency: conc.Asked, N: conc.N, Nodes: o.Nodes, Scale: o.Scale,
		JobScaledS: o.ScaledJob().Seconds(), CPScaledS: o.ScaledControlPlane().Seconds(),
		ControlPlane: s.cpDone.Sub(t0).Seconds(), Total: total.Seconds(), Upgraded: s.upgraded, Failed: s.failedNodes,
		Outcome: outcome, FirstFailureS: -1, UpgradedAtFirst: s.atFirst,
		Requests: req.Total(), RequestRate: req.Total() / window, TopRequests: req.Top(8),
		SUCCPUSeconds: cpu, SUCCPUPercent: 100 * cpu / window,
		SUCPeakRSSMiB: float64(hwm) / 1024, SUCRSSMiB: float64(rss) / 1024,
		LoadBefore: before.load, LoadAfter: after.load, Started: t0.UTC().Format(time.RFC3339)}
	if !s.firstFailure.IsZero() {
		r.FirstFailureS = s.firstFailure.Sub(t0).Seconds()
	}
	r.Projected = Projection{Measured: total, Workers: s.upgraded + s.failed, Concurrency: conc.N,
		JobReal: seconds(o.JobSeconds), JobScaled: o.ScaledJob(),
		ControlPlaneReal: seconds(o.ControlPlaneSeconds), ControlPlaneScaled: o.ScaledControlPlane()}.Real().Seconds()
	return r, nil
}

// Summary is r in a few lines.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "concurrency %s (%d of %d nodes): %s after %.0f s (control plane %.0f s), %d upgraded, %d failed %v\n",
		r.Concurrency, r.N, r.Nodes, r.Outcome, r.Total, r.ControlPlane, r.Upgraded, len(r.Failed), r.Failed)
	fmt.Fprintf(&b, "  at real durations (x%g): %s\n", r.Scale, (time.Duration(r.Projected) * time.Second).Round(time.Second))
	if r.FirstFailureS >= 0 {
		fmt.Fprintf(&b, "  first failed Job at %.0f s, %d workers upgraded by then\n", r.FirstFailureS, r.UpgradedAtFirst)
	}
	fmt.Fprintf(&b, "  API: %.0f requests, %.1f/s; top: %s\n", r.Requests, r.RequestRate, strings.Join(r.TopRequests, ", "))
	fmt.Fprintf(&b, "  system-upgrade-controller: %.1f s CPU (%.1f%% of a core), peak RSS %.1f MiB, RSS %.1f MiB at the end\n",
		r.SUCCPUSeconds, r.SUCCPUPercent, r.SUCPeakRSSMiB, r.SUCRSSMiB)
	fmt.Fprintf(&b, "  load average: %s before, %s after", r.LoadBefore, r.LoadAfter)
	return b.String()
}
