package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/pkg/proc"
)

// Result is one run: one concurrency on a fresh cluster.
type Result struct {
	Concurrency  string   `json:"concurrency"`
	N            int64    `json:"concurrencyNodes"`
	Nodes        int      `json:"nodes"`
	Scale        float64  `json:"scale"`
	JobScaledS   float64  `json:"jobScaledSeconds"`
	CPScaledS    float64  `json:"controlPlaneScaledSeconds"`
	ControlPlane float64  `json:"controlPlaneSeconds"` // CP Plan applied -> CP node labelled
	Total        float64  `json:"totalSeconds"`        // CP Plan applied -> last worker upgraded or failed
	Projected    float64  `json:"projectedSeconds"`    // Total at real durations (Projection)
	Upgraded     int      `json:"upgraded"`
	Failed       []string `json:"failed"`
	// Outcome: "complete" (every worker upgraded), "complete but failed"
	// (every worker upgraded but the failed ones, still held by the Plan),
	// or "stopped" (no progress for the stall time).
	Outcome string `json:"outcome"`
	// FirstFailureS is when the first Job failed (since the CP Plan, -1:
	// none) and UpgradedAtFirst how many workers were done then.
	FirstFailureS   float64  `json:"firstFailureSeconds"`
	UpgradedAtFirst int      `json:"upgradedAtFirstFailure"`
	Requests        float64  `json:"apiRequests"`
	RequestRate     float64  `json:"apiRequestsPerSecond"`
	TopRequests     []string `json:"topRequests"`
	SUCCPUSeconds   float64  `json:"sucCPUSeconds"`
	SUCCPUPercent   float64  `json:"sucCPUPercent"` // of one core, over the roll
	SUCPeakRSSMiB   float64  `json:"sucPeakRSSMiB"`
	SUCRSSMiB       float64  `json:"sucRSSMiB"`
	LoadBefore      string   `json:"loadBefore"`
	LoadAfter       string   `json:"loadAfter"`
	Started         string   `json:"started"`
}

// Run runs o, one fresh cluster per concurrency, in dir (logs and
// results.json stay; etcd's data is removed), and returns the results.
func Run(ctx context.Context, o Options, b Binaries, dir string, log io.Writer) ([]Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var results []Result
	for i, conc := range o.Concurrency {
		runDir := filepath.Join(dir, fmt.Sprintf("run%d-c%d", i+1, conc.N))
		fmt.Fprintf(log, "== run %d of %d: %d nodes, concurrency %s (%d), Jobs %s (control plane %s), %d failing\n",
			i+1, len(o.Concurrency), o.Nodes, conc.Asked, conc.N, o.ScaledJob(), o.ScaledControlPlane(), o.Fail)
		r, err := runOne(ctx, o, conc, b, runDir, log)
		if err != nil {
			return results, fmt.Errorf("run %d (concurrency %s): %w (logs in %s)", i+1, conc.Asked, err, filepath.Join(runDir, "logs"))
		}
		results = append(results, r)
		fmt.Fprintln(log, r.Summary())
		if err := os.RemoveAll(filepath.Join(runDir, "etcd")); err != nil {
			return results, err
		}
		j, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "results.json"), j, 0o644); err != nil {
			return results, err
		}
	}
	return results, nil
}

func runOne(ctx context.Context, o Options, conc Concurrency, b Binaries, dir string, log io.Writer) (Result, error) {
	c, err := startCluster(ctx, b, dir, log)
	if err != nil {
		return Result{}, err
	}
	defer c.stop(log)
	so := systemupgrade.DefaultOptions(o.Version)
	so.Concurrency = conc.N
	settings, err := c.populate(ctx, so, o.Nodes, log)
	if err != nil {
		return Result{}, err
	}
	fail := FailNodes(o.Fail, o.Workers())
	stages, err := Stages(StageTimes{Worker: o.ScaledJob(), ControlPlane: o.ScaledControlPlane(), ControlPlanePlan: systemupgrade.ControlPlanePlan}, fail)
	if err != nil {
		return Result{}, err
	}
	if err := c.startKwok(ctx, b.Kwok, stages, o.Nodes, log); err != nil {
		return Result{}, fmt.Errorf("kwok: %w", err)
	}
	suc, err := c.startSUC(ctx, b.SUC, settings, log)
	if err != nil {
		return Result{}, fmt.Errorf("system-upgrade-controller: %w", err)
	}
	plans, err := systemupgrade.Plans(so)
	if err != nil {
		return Result{}, err
	}
	return c.roll(ctx, o, conc, plans, suc, log)
}

// sample is what is read before and after a roll.
type sample struct {
	at       time.Time
	requests Requests
	sucTicks uint64
	load     string
}

func (c *cluster) sample(ctx context.Context, suc *proc.Process) (sample, error) {
	s := sample{at: time.Now()}
	raw, err := c.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return s, fmt.Errorf("the API server's /metrics: %w", err)
	}
	if s.requests, err = ParseRequests(raw); err != nil {
		return s, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", suc.PID))
	if err != nil {
		return s, err
	}
	if s.sucTicks, err = CPUTicks(stat); err != nil {
		return s, err
	}
	load, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return s, err
	}
	s.load = strings.Join(strings.Fields(string(load))[:3], " ")
	return s, nil
}

// roll applies the control-plane Plan, then (once SUC labelled the
// control-plane node) the workers Plan, and follows the roll until every
// worker is upgraded or failed, or nothing moved for the stall time.
func (c *cluster) roll(ctx context.Context, o Options, conc Concurrency, plans []systemupgrade.Plan, suc *proc.Process, log io.Writer) (Result, error) {
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching() // the informers end with this run's API server
	w := c.watch(watchCtx)
	before, err := c.sample(ctx, suc)
	if err != nil {
		return Result{}, err
	}
	t0 := time.Now()
	fmt.Fprintf(log, "%s applying Plan %s\n", t0.UTC().Format("15:04:05"), plans[0].Metadata.Name)
	if err := c.applyPlan(ctx, plans[0]); err != nil {
		return Result{}, err
	}
	cpWait := 3*o.ScaledControlPlane() + 3*time.Minute
	if err := poll(ctx, cpWait, 500*time.Millisecond, suc, func() (bool, string, error) {
		return !w.snapshot().cpDone.IsZero(), "the control-plane node not upgraded", nil
	}); err != nil {
		return Result{}, fmt.Errorf("control-plane Plan: %w", err)
	}
	fmt.Fprintf(log, "%s control plane done after %s; applying Plan %s (concurrency %d)\n",
		time.Now().UTC().Format("15:04:05"), time.Since(t0).Round(time.Second), plans[1].Metadata.Name, conc.N)
	if err := c.applyPlan(ctx, plans[1]); err != nil {
		return Result{}, err
	}
	s, outcome, err := follow(ctx, o, w, suc, log)
	if err != nil {
		return Result{}, err
	}
	after, err := c.sample(ctx, suc)
	if err != nil {
		return Result{}, err
	}
	return result(o, conc, t0, s, outcome, before, after, suc)
}

// follow waits for the end of the roll, printing progress every 15 s.
func follow(ctx context.Context, o Options, w *watcher, suc *proc.Process, log io.Writer) (snapshot, string, error) {
	workers := o.Workers()
	start, lastPrint := time.Now(), time.Now()
	limit := time.Duration(workers)*o.ScaledJob()*3 + 30*time.Minute
	for {
		s := w.snapshot()
		switch {
		case s.upgraded == workers:
			return s, "complete", nil
		case s.upgraded+s.failed == workers:
			return s, "complete but failed", nil
		case time.Since(s.last) > o.StallAfter():
			return s, "stopped", nil
		case time.Since(start) > limit:
			return s, "", fmt.Errorf("the roll took more than %s: %d of %d workers upgraded, %d failed", limit, s.upgraded, workers, s.failed)
		}
		if ended, err := suc.Exited(); ended {
			return s, "", fmt.Errorf("system-upgrade-controller exited: %v", err)
		}
		if time.Since(lastPrint) >= 15*time.Second {
			lastPrint = time.Now()
			fmt.Fprintf(log, "%s workers: %d of %d upgraded, %d failed, %d Jobs created (%s)\n",
				lastPrint.UTC().Format("15:04:05"), s.upgraded, workers, s.failed, s.jobs, time.Since(start).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return s, "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
