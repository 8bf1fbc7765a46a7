// Package fleet is the fleet roll-out on kind (make e2e E2E_PROVIDER=kind
// E2E=fleet, issue 22 section 4), a scenario of the kind provider:
// clusters of one control-plane node and Workers workers with the
// fleet's workloads, rolled From -> To by system-upgrade-controller's Plans
// running kc-roll (deploy/system-upgrade) at concurrency 1 and 2, the
// drain-based roll operators use today as the anchor, the naive in-place
// roll k3s and rke2 users run today (SUC's Plans, the released packages,
// no drain: the second anchor), and a roll whose health gate fails on
// worker 3. Each roll is a list of small actions on a cluster of its own,
// measured per node and in total (figures.go); the fault roll also
// kills the control plane's Job after its swap and ends with the
// operator's retry (fault.go). The minors roll (minors.go) takes one
// cluster of MinorsWorkers workers through a chain of minors, Plan after
// Plan, unattended.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// The fleet's rolls (-fleet-runs), in the order they run.
const (
	Concurrency1 = "concurrency-1"
	Concurrency2 = "concurrency-2"
	Drain        = "drain"
	Naive        = "naive"
	Fault        = "fault"
	// Runtime: our roll at concurrency 1 whose Plans carry KC_RUNTIME
	// (FleetRuntime): each node's Job moves containerd first, then the
	// kubelet. Not in Runs: run it with -fleet-runs runtime.
	Runtime = "runtime"
	// Runtime20: the road's next step on a cluster of its own, whose
	// nodes run FleetRuntime (selected before the workloads, as the
	// runtime roll leaves them): Plans with KC_RUNTIME FleetRuntime20, the
	// canary breaking under 2.0 on worker FaultWorker, whose failed gate's
	// rollback 2.0 -> 1.7 must find no task on a v3 shim. Not in Runs: run
	// it with -fleet-runs runtime-2.0.
	Runtime20 = "runtime-2.0"
	// Minors: a chain of steps (-versions 1.33.13,...,1.37.2), one Plan
	// after the other on one cluster; a plan of its own, so alone.
	Minors = "minors"
)

// FleetRuntime is the runtime roll's containerd: the first move off
// Debian's 1.6.20, the one that kills shims whose task reports no
// process at its start (kubelet-compat cgroups).
var FleetRuntime = plan.Runtime{Name: "containerd", Version: "1.7.36+compat.1"}

// FleetRuntime20 is the runtime-2.0 roll's containerd: the road's step
// after FleetRuntime, the first whose shims serve the task API v3, which
// containerd 1.x cannot reach (a rollback to 1.7 must find none).
var FleetRuntime20 = plan.Runtime{Name: "containerd", Version: "2.0.14+compat.1"}

// Runs are every roll of one step, the default.
var Runs = []string{Concurrency1, Concurrency2, Drain, Naive, Fault}

// rolls are every roll -fleet-runs takes, in the order they run.
var rolls = append(append([]string(nil), Runs...), Runtime, Runtime20, Minors, CAPI, CAPIReplace)

// Workers is the fleet clusters' worker count.
const Workers = 4

// FaultWorker is the worker (1-based) whose health gate fails.
const FaultWorker = 3

// GateTimeout is the Plans' gate timeout in the e2e (seconds): the
// faulty worker waits that long before its rollback.
const GateTimeout = 120

// ParseRuns reads -fleet-runs: a comma-separated subset of Runs, run in
// Runs' order, or the minors roll alone.
func ParseRuns(s string) ([]string, error) {
	want := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if !contains(rolls, r) {
			return nil, fmt.Errorf("-fleet-runs: unknown roll %q (%s)", r, strings.Join(rolls, ", "))
		}
		if want[r] {
			return nil, fmt.Errorf("-fleet-runs: %s given twice", r)
		}
		want[r] = true
	}
	if want[Minors] && len(want) > 1 {
		return nil, errors.New("-fleet-runs: minors rolls a chain of steps, the others one step: run it alone")
	}
	var out []string
	for _, r := range rolls {
		if want[r] {
			out = append(out, r)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Check refuses a plan the rolls cannot roll: one upgrade step of one
// minor (the control plane and every kubelet go From -> To once), or for
// the minors roll a chain of such steps, each from where the one before
// ended.
func Check(steps []kind.Step, runs []string) error {
	chain := contains(runs, Minors)
	if !chain && len(steps) != 1 {
		return fmt.Errorf("the fleet rolls one step, not %d (the minors roll: a chain of them)", len(steps))
	}
	if len(steps) == 0 {
		return errors.New("the minors roll needs a chain of steps (-versions 1.33.13,1.34.12,...)")
	}
	for i, st := range steps {
		if st.Rollback() || st.SkipLevel() {
			return fmt.Errorf("the fleet rolls one minor up at a time, not %s", st)
		}
		if i > 0 && st.From != steps[i-1].To {
			return fmt.Errorf("the minors roll's steps form a chain: %s does not start where %s ended", st, steps[i-1])
		}
		if err := kind.CheckSkew(st); err != nil {
			return err
		}
	}
	return nil
}

// fleetCluster names each roll's cluster.
func fleetCluster(roll string) string {
	switch roll {
	case Concurrency1:
		return "kc-e2e-fleet-c1"
	case Concurrency2:
		return "kc-e2e-fleet-c2"
	case Drain:
		return "kc-e2e-drain"
	case Naive:
		return "kc-e2e-naive"
	case Minors:
		return "kc-e2e-fleet-minors"
	case Runtime:
		return "kc-e2e-fleet-rt"
	case Runtime20:
		return "kc-e2e-fleet-rt2"
	case CAPI:
		return "kc-e2e-capi"
	case CAPIReplace:
		return "kc-e2e-capi-replace"
	}
	return "kc-e2e-fleet-fault"
}

// Options configure the fleet.
type Options struct {
	kind.ScenarioOptions
	Runs []string
	// ControllerBinary is system-upgrade-controller, built
	// (systemupgrade.BuildController).
	ControllerBinary string
	// RollBinary is the Job's program, kc-roll (systemupgrade.BuildRoll).
	RollBinary string
	// CacheDir is KC_CACHE (the CAPI rolls' load balancer image is built
	// from a debootstrap cached there).
	CacheDir string
}

// fleetRun is one roll on its cluster; it reuses the scenario's cluster
// pieces (create, network, images, snapshots, logs).
type fleetRun struct {
	*kind.ClusterRun
	roll        string
	concurrency int64
	drain       bool
	// naive: SUC's Plans run kc-roll naive with the released packages
	// (Options.Naive); ClusterRun.Patched is false, as for the drain roll.
	naive bool
	// fault: the fault roll's control-plane Job killed after its swap.
	fault bool
	// canary: what the canary on worker FaultWorker breaks under (the
	// fault roll: the target's kubelet; the runtime roll: its containerd),
	// whose gate failure, rollback and retry the roll then goes through.
	canary canaryKind
	minors bool
	// runtime is the containerd the Plans move each node to first
	// (KC_RUNTIME; the runtime roll), else zero.
	runtime plan.Runtime
	// runtimeFrom is the containerd every node runs before the roll,
	// selected before the workloads (the runtime-2.0 roll: the road's
	// step before runtime's); zero: Debian's.
	runtimeFrom plan.Runtime
	// step is the index in Steps of the step the roll is at (the minors
	// roll goes through each; the others have one).
	step int
	// sucImages are the OCI layouts of the controller's and the upgrade
	// Job's images, by target.
	sucImages map[string][]byte
	// bridgeImage is the etcd bridge the control plane's Plan carries
	// (the minors roll's step to an etcd 3.7).
	bridgeImage string

	snapBefore map[string]*snapshot.Snapshot
	apiBefore  map[string]apiPod
	ledger     *podLedger
	watch      *readiness.Watch
	api        *apiSampler
	data       rollData
	order      []string
	// jobs are the upgrade Jobs seen, per node (SUC rolls): the last one
	// of each node, with the earlier ones.
	jobs map[string]*jobRecord
	// faults: the fault roll's (fault.go).
	faults faultState
	// capi: a Cluster API roll's (capi.go), else nil.
	capi *capiState
}

// Run runs o.Runs, each on a cluster of its own, one after the other.
func Run(ctx context.Context, p *kind.Provider, o Options, stack *cleanup.Stack, rep *report.Report) error {
	if err := Check(o.Steps, o.Runs); err != nil {
		return err
	}
	var runs []*fleetRun
	for _, roll := range o.Runs {
		runs = append(runs, newFleetRun(p, o.ScenarioOptions, rep, roll, o.Steps))
	}
	if err := fleetPreflight(ctx, p, o, fleetNeeds(runs)); err != nil {
		return err
	}
	var mgmt *capiManagement
	for _, f := range runs {
		if f.capi == nil {
			continue
		}
		if mgmt == nil {
			var err error
			if mgmt, err = startCAPI(ctx, p, o, o.Steps[0].To, stack); err != nil {
				return fmt.Errorf("the CAPI management cluster: %w", err)
			}
		}
		f.capi.mgmt, f.capi.cluster = mgmt, capiWorkload(f.roll, o, mgmt.haproxy)
	}
	// One layout per target for the patched SUC rolls, one for the naive
	// roll.
	type key struct {
		naive  bool
		target string
	}
	layouts := map[key][]byte{}
	var clusters []kind.ClusterRunner
	for _, f := range runs {
		if !f.drain {
			f.sucImages = map[string][]byte{}
			for _, st := range f.Steps {
				k := key{f.naive, st.To}
				if layouts[k] == nil {
					layout, err := sucImages(o.ControllerBinary, o.RollBinary, st.To, o.Output, f.naive)
					if err != nil {
						return err
					}
					layouts[k] = layout
				}
				f.sucImages[st.To] = layouts[k]
			}
		}
		clusters = append(clusters, f)
	}
	return kind.RunClusters(ctx, p, stack, clusters)
}

// newFleetRun is one roll on its cluster, before its images are set: the
// minors roll takes steps, a chain, on MinorsWorkers workers; the others
// the one step on Workers.
func newFleetRun(p *kind.Provider, o kind.ScenarioOptions, rep *report.Report, roll string, steps []kind.Step) *fleetRun {
	released := roll == Drain || roll == Naive || roll == CAPIReplace
	o.Workers = Workers
	if roll == Minors {
		o.Workers = MinorsWorkers
	} else {
		steps = steps[:1]
	}
	f := &fleetRun{ClusterRun: &kind.ClusterRun{Provider: p, Options: o, Report: rep, Name: fleetCluster(roll), Steps: steps, Patched: !released},
		roll: roll, concurrency: 1, drain: roll == Drain, naive: roll == Naive, fault: roll == Fault, minors: roll == Minors}
	if roll == Concurrency2 {
		f.concurrency = 2
	}
	switch roll {
	case Fault:
		f.canary = kubeletCanary
	case Runtime:
		f.runtime, f.canary = FleetRuntime, runtimeCanary
	case Runtime20:
		f.runtime, f.runtimeFrom, f.canary = FleetRuntime20, FleetRuntime, runtimeCanary
	case CAPI:
		f.capi, f.canary = &capiState{}, kubeletCanary
	case CAPIReplace:
		f.capi = &capiState{replace: true}
	}
	if f.capi != nil {
		f.ClusterRun.Options.Workers = capiWorkers
	}
	return f
}

// cur is the step the roll is at.
func (f *fleetRun) cur() kind.Step { return f.Steps[f.step] }

// buildNeeds are what a fleet's rolls need built beyond the node image
// and the target's images.
type buildNeeds struct {
	// patched: the target's patched packages (our SUC rolls); kubectl: the
	// upgrade Job's image (every SUC roll); unpatched: the target's
	// packages as released (the drain and naive rolls).
	patched, kubectl, unpatched bool
	// runtimes: the runtime rolls' packages (make runtime-deb): the
	// containerd they select before the roll and the one they roll to.
	runtimes []plan.Runtime
}

func fleetNeeds(runs []*fleetRun) buildNeeds {
	var n buildNeeds
	for _, f := range runs {
		n.patched = n.patched || f.Patched
		n.kubectl = n.kubectl || !f.drain
		n.unpatched = n.unpatched || f.drain || f.naive
		for _, rt := range []plan.Runtime{f.runtimeFrom, f.runtime} {
			if rt != (plan.Runtime{}) && !slices.Contains(n.runtimes, rt) {
				n.runtimes = append(n.runtimes, rt)
			}
		}
	}
	return n
}

// fleetPreflight checks that what the rolls need was built before any
// cluster is made: the node image, the target's images, its patched
// packages and kubectl (the upgrade Job's image) and its unpatched
// packages (the drain and naive rolls swap in the kubelet as released).
func fleetPreflight(ctx context.Context, p *kind.Provider, o Options, needs buildNeeds) error {
	var m kind.MissingBuilds
	need, exists := m.Need, kind.Built
	first := o.Steps[0].From
	need(p.Engine.ImageExists(ctx, kind.NodeImage(first)), "node image "+kind.NodeImage(first))
	for _, st := range o.Steps {
		need(exists(filepath.Join(o.Output, "kind", "images", st.To+".tar")), "images of "+st.To)
		if needs.patched {
			need(exists(filepath.Join(nodeimage.PackageDir(o.Output, "patched"), nodeimage.NodePackages(st.To)[0])), "patched packages of "+st.To)
		}
		if needs.kubectl {
			need(exists(filepath.Join(o.Output, st.To, "kubectl")), "kubectl of "+st.To)
		}
		if needs.unpatched {
			need(exists(filepath.Join(nodeimage.PackageDir(o.Output, "unpatched"), nodeimage.NodePackages(st.To)[0])), "unpatched packages of "+st.To)
		}
	}
	for _, rt := range needs.runtimes {
		_, _, err := kind.RuntimeDebs(kind.RuntimeDebDir(o.Output), rt)
		need(err == nil, fmt.Sprintf("the runtime packages of %s (%v)", rt, err))
	}
	return m.Err("make kind-images E2E=fleet")
}

// do adapts a fleetRun method to an Action.
func (f *fleetRun) do(fn func(ctx context.Context) error) func(*kind.ClusterRun, context.Context) error {
	return func(_ *kind.ClusterRun, ctx context.Context) error { return fn(ctx) }
}

func (f *fleetRun) actions() []kind.Action {
	if f.capi != nil {
		return f.capiActions()
	}
	if f.minors {
		return f.minorsActions()
	}
	st := f.Steps[0]
	out := []kind.Action{
		{Name: "create the cluster on " + kind.NodeImage(st.From), Do: (*kind.ClusterRun).Create},
		{Name: "install the pod network", Do: func(r *kind.ClusterRun, ctx context.Context) error { return r.Cluster.InstallCNI(ctx) }},
		{Name: "import the workload images into every node", Do: (*kind.ClusterRun).ImportImages},
		{Name: "import the images of " + st.To + " into every node (no registry: pre-loaded, as air-gapped fleets do)", Do: f.do(f.importTargetImages)},
	}
	if !f.drain {
		out = append(out, kind.Action{Name: "import system-upgrade-controller's and the upgrade Job's images into every node", Do: f.do(f.importSUCImages)})
	}
	if f.runtimeFrom != (plan.Runtime{}) {
		out = append(out,
			kind.Action{Name: fmt.Sprintf("stage the runtime's .debs (containerd %s, runc) on every node", f.runtimeFrom.Version),
				Do: func(r *kind.ClusterRun, ctx context.Context) error { return r.StageRuntime(ctx, f.runtimeFrom) }},
			kind.Action{Name: fmt.Sprintf("every node's containerd moved from Debian's 1.6.20 to %s before the workloads (cgroups --repair, runtime-select --restart-containerd), as the runtime roll leaves them", f.runtimeFrom.Version),
				Do: f.do(f.selectRuntimeFrom)})
	}
	if f.runtime != (plan.Runtime{}) {
		runs := "Debian's containerd 1.6.20 runs"
		if f.runtimeFrom != (plan.Runtime{}) {
			runs = "containerd " + f.runtimeFrom.Version + " runs"
		}
		out = append(out, kind.Action{Name: fmt.Sprintf("stage the runtime's .debs (containerd %s, runc) on every node; %s", f.runtime.Version, runs),
			Do: func(r *kind.ClusterRun, ctx context.Context) error { return r.StageRuntime(ctx, f.runtime) }})
	}
	out = append(out,
		kind.Action{Name: "create the fleet's workloads and the static pods", Do: f.do(f.createWorkloads)},
		kind.Action{Name: "wait until every pod is ready", Do: f.do(f.waitReady)},
		kind.Action{Name: "baseline: snapshots, the API's pods, the pod ledger and the readiness watchers", Do: f.do(f.baseline)})
	switch {
	case f.drain:
		out = append(out, kind.Action{Name: "the drain roll " + st.String() + ": node by node, cordon, kubectl drain, swap (the kubelet as released), uncordon", Do: f.do(f.drainRoll)})
	case f.naive:
		out = append(out,
			kind.Action{Name: "apply system-upgrade-controller", Do: f.do(f.applyController)},
			kind.Action{Name: fmt.Sprintf("the naive roll %s: apply the Plans (kc-roll naive, the packages as released, concurrency %d; no drain, no cordon, no record, no gate) and follow the roll until the workloads are Ready again", st, f.concurrency), Do: f.do(f.sucRoll)})
	case f.fault:
		out = append(out,
			kind.Action{Name: "apply system-upgrade-controller (Jobs kept " + fmt.Sprint(JobTTL) + " s after they end)", Do: f.do(f.applyController)},
			kind.Action{Name: fmt.Sprintf("apply the Plans (%s, concurrency %d) and follow the roll: the control plane's Job killed right after its swap, the gate failing on worker %d", st.To, f.concurrency, FaultWorker), Do: f.do(f.sucRoll)},
			kind.Action{Name: fmt.Sprintf("the faults: the control plane gated by SUC's re-run; worker %d rolled back with its configuration, re-runs refused; the roll stopped there", FaultWorker), Do: f.do(f.checkFault)},
			kind.Action{Name: fmt.Sprintf("the operator's retry: the canary deleted, worker %d's roll state and marker removed; the roll goes on to its end", FaultWorker), Do: f.do(f.retryRoll)})
	case f.runtime != (plan.Runtime{}):
		out = append(out,
			kind.Action{Name: "apply system-upgrade-controller (Jobs kept " + fmt.Sprint(JobTTL) + " s after they end)", Do: f.do(f.applyController)},
			kind.Action{Name: fmt.Sprintf("apply the Plans (%s, concurrency %d, KC_RUNTIME %s: each node's Job moves containerd first) and follow the roll: the runtime step's gate failing on worker %d", st.To, f.concurrency, f.runtime, FaultWorker), Do: f.do(f.sucRoll)},
			kind.Action{Name: fmt.Sprintf("the fault: worker %d's containerd rolled back%s, its kubelet untouched, re-runs refused; the roll stopped there", FaultWorker, f.rollbackTo()), Do: f.do(f.checkFault)},
			kind.Action{Name: fmt.Sprintf("the operator's retry: the canary deleted, worker %d's roll state and marker removed; the roll goes on to its end", FaultWorker), Do: f.do(f.retryRoll)},
			kind.Action{Name: "every node runs containerd " + f.runtime.Version + ", each runtime gate passed on the kubelet's syncs of every pod", Do: f.do(f.checkRuntimeMoved)})
	default:
		out = append(out,
			kind.Action{Name: "apply system-upgrade-controller", Do: f.do(f.applyController)},
			kind.Action{Name: fmt.Sprintf("apply the Plans (%s, concurrency %d) and follow the roll", st.To, f.concurrency), Do: f.do(f.sucRoll)})
	}
	out = append(out,
		kind.Action{Name: "after the roll: every pod ready, snapshots, the API's pods", Do: f.do(f.afterRoll)},
		kind.Action{Name: "the Job that ran across the roll completes", Do: f.do(f.completeBatch)},
		kind.Action{Name: "the figures, per node and in total", Do: f.do(f.reportRoll)})
	if f.canary != noCanary {
		out = append(out, kind.Action{Name: fmt.Sprintf("the retry: worker %d upgraded through its gate, nothing restarted over the rollback and the retry", FaultWorker), Do: f.do(f.checkRetry)})
	}
	return out
}

// Run runs the roll's actions on its cluster, then deletes the cluster
// (kind.ClusterRunner).
func (f *fleetRun) Run(ctx context.Context, stack *cleanup.Stack) error {
	done := f.stopWatchers
	if f.capi != nil {
		// CAPI deletes its Cluster first: CAPD would make the machines'
		// containers again.
		done = func() {
			f.stopWatchers()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			f.capiDelete(ctx)
		}
	}
	return f.RunThenDelete(ctx, stack, f.actions(), done)
}

// stopWatchers ends the ledger and the readiness watchers, whatever ended
// the run.
func (f *fleetRun) stopWatchers() {
	if f.ledger != nil {
		f.ledger.end()
	}
	if f.watch != nil {
		f.watch.End()
	}
	if f.api != nil {
		f.api.end()
	}
}

// Runner is the fleet's runner of plans (plan.Runner): kind's runner
// (Name, Describe, Versions, Images: the engine, the node images) with
// the fleet's Check and Run: Runs, each on a cluster of its own.
type Runner struct {
	*kind.Runner
	// Runs are the rolls to run, in Runs' order (-fleet-runs, ParseRuns).
	Runs []string
}

var _ plan.Runner = (*Runner)(nil)

// Describe is the run's header; the CAPI rolls' clusters are CAPI's.
func (r *Runner) Describe(p plan.Plan) string {
	for _, roll := range r.Runs {
		if !contains(CAPIRuns, roll) {
			return r.Runner.Describe(p)
		}
	}
	return fmt.Sprintf("kind provider: a management cluster and Cluster API workload clusters (CAPD: %d control-plane machines, %d workers), state in %s", capiControlPlanes, capiWorkers, r.Root)
}

// Check refuses what kind's runner refuses (rollback steps, a record
// after the swap), then a plan the fleet cannot roll (Check).
func (r *Runner) Check(p plan.Plan) error {
	if plan.HasRollback(p.Steps) {
		return errors.New(plan.RollbackLocalOnly)
	}
	if p.RecordAfterSwap {
		return errors.New(plan.RecordAfterSwapLocalOnly)
	}
	return Check(p.Steps, r.Runs)
}

// Run brings the engine and the images up, builds the controller
// when a roll needs it (cached), and runs the fleet.
func (r *Runner) Run(ctx context.Context, p plan.Plan, stack *cleanup.Stack, rep *report.Report) error {
	prov, err := r.Up(ctx, p, stack)
	if err != nil {
		return err
	}
	bin, roll := "", ""
	if len(r.Runs) > 1 || r.Runs[0] != Drain {
		if bin, err = systemupgrade.BuildController(ctx, r.CacheDir, p.Log); err != nil {
			return err
		}
		// This tree's engine, built for every run: it is what the run tests.
		roll = filepath.Join(p.Output, "e2e", "kc-roll")
		if err := systemupgrade.BuildRoll(ctx, roll, p.Log); err != nil {
			return err
		}
	}
	o := Options{ScenarioOptions: kind.ScenarioOptions{Plan: p, LogDir: filepath.Join(p.ReportDir, "logs")},
		Runs: r.Runs, ControllerBinary: bin, RollBinary: roll, CacheDir: r.CacheDir}
	return Run(ctx, prov, o, stack, rep)
}
