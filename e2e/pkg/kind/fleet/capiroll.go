package fleet

// The CAPI rolls' actions: the bump in CAPI's order (the control plane,
// then the workers' MachineDeployments), followed through CAPI's Machines
// and, in place, through the extension's Jobs in the workload cluster.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// capiActions are a CAPI roll's actions on its workload cluster.
func (f *fleetRun) capiActions() []kind.Action {
	st := f.Steps[0]
	c := f.capi.cluster
	out := []kind.Action{
		{Name: fmt.Sprintf("create the workload cluster %s/%s through Cluster API (CAPD) on %s: %d control-plane machines, MachineDeployments md-0 (2) and md-1 (1)", c.Namespace, c.Name, c.Image, c.ControlPlanes), Do: f.do(f.capiCreate)},
		{Name: "install the pod network", Do: func(r *kind.ClusterRun, ctx context.Context) error { return r.Cluster.InstallCNI(ctx) }},
		{Name: "import the workload images into every node", Do: (*kind.ClusterRun).ImportImages},
	}
	if !f.capi.replace {
		out = append(out,
			kind.Action{Name: "import the images of " + st.To + " into every node (no registry: pre-loaded, as air-gapped fleets do)", Do: f.do(f.importTargetImages)},
			kind.Action{Name: "import the upgrade Job's image into every node", Do: f.do(f.importSUCImages)})
	}
	out = append(out,
		kind.Action{Name: "create the fleet's workloads and the static pods", Do: f.do(f.createWorkloads)},
		kind.Action{Name: "wait until every pod is ready", Do: f.do(f.waitReady)},
		kind.Action{Name: "baseline: snapshots, the API's pods, the pod ledger, the readiness watchers, CAPI's Machines", Do: f.do(f.capiBaseline)})
	if f.capi.replace {
		out = append(out, kind.Action{Name: fmt.Sprintf("CAPI's default rollout %s: the control plane's version and machine template (the node image of %s), then each MachineDeployment's: every machine replaced", st, st.To), Do: f.do(f.capiReplaceRoll)})
	} else {
		out = append(out,
			kind.Action{Name: fmt.Sprintf("the bump %s in place through the extension: the KubeadmControlPlane's version, then md-0's; kc-roll in each machine's Job", st), Do: f.do(f.capiInPlaceRoll)},
			kind.Action{Name: fmt.Sprintf("the fault: md-1's version, its machine's gate failing (the canary): the node rolled back, the Machine's update failed with the gate's reason, its re-runs refused"), Do: f.do(f.capiFault)})
	}
	out = append(out,
		kind.Action{Name: "after the roll: every pod ready, snapshots, the API's pods", Do: f.do(f.capiAfterRoll)},
		kind.Action{Name: "the Job that ran across the roll completes", Do: f.do(f.completeBatch)},
		kind.Action{Name: "the figures, per node and in total", Do: f.do(f.reportRoll)},
		kind.Action{Name: "CAPI's Machines: created, deleted, versions, seconds per machine", Do: f.do(f.capiCheckMachines)})
	return out
}

// capiBaseline is the fleet's baseline and CAPI's Machines.
func (f *fleetRun) capiBaseline(ctx context.Context) error {
	if err := f.baseline(ctx); err != nil {
		return err
	}
	ms, err := f.capi.mgmt.machines(ctx, f.capi.cluster.Namespace, f.capi.cluster.Name)
	if err != nil {
		return err
	}
	f.capi.machinesBefore = ms
	f.NodeLog(f.Cluster.ControlPlane(), "capi-machines-before", capiMachinesJSON(ms))
	return nil
}

// capiBump patches the KubeadmControlPlane (md "") or a MachineDeployment
// to the step's target; template, when set, is the new machine template.
func (f *fleetRun) capiBump(ctx context.Context, md, template string) error {
	c, to := f.capi.cluster, f.Steps[0].To
	if md == "" {
		f.Logf("bump: KubeadmControlPlane %s-control-plane to v%s", c.Name, to)
		return f.capi.mgmt.patch(ctx, gvrKCPs, c.Namespace, c.Name+"-control-plane", capiVersionPatch(true, to, template))
	}
	f.Logf("bump: MachineDeployment %s-%s to v%s", c.Name, md, to)
	return f.capi.mgmt.patch(ctx, gvrMDs, c.Namespace, c.Name+"-"+md, capiVersionPatch(false, to, template))
}

// owned says whether a Machine is of the set owner names: "control-plane"
// or a MachineDeployment's short name (md-0).
func (f *fleetRun) owned(mc capiMachine, owner string) bool {
	if owner == "control-plane" {
		return mc.Owner == owner
	}
	return mc.Owner == f.capi.cluster.Name+"-"+owner
}

// machinesDone says whether every Machine of owner is at the target,
// up to date and not updating, and none is being deleted; else why not.
func (f *fleetRun) machinesDone(ctx context.Context, owner string, want int) error {
	ms, err := f.capi.mgmt.machines(ctx, f.capi.cluster.Namespace, f.capi.cluster.Name)
	if err != nil {
		return err
	}
	var n int
	for _, mc := range ms {
		if !f.owned(mc, owner) {
			continue
		}
		n++
		if mc.Deleting || mc.Version != "v"+f.Steps[0].To || mc.UpToDate.Status != "True" || mc.Updating.Status == "True" || mc.Node == "" {
			return fmt.Errorf("%s: %s", owner, mc)
		}
	}
	if n != want {
		return fmt.Errorf("%s: %d machines, want %d: %s", owner, n, want, machineList(ms))
	}
	return nil
}

// capiInPlaceRoll bumps the control plane, follows it (Machines and the
// extension's Jobs) to its end, then md-0 likewise. A Job that fails
// ends the roll at once.
func (f *fleetRun) capiInPlaceRoll(ctx context.Context) error {
	f.data.rollStart = time.Now()
	f.jobs = map[string]*jobRecord{}
	defer f.saveCAPILogs(ctx)
	steps := []struct {
		owner string
		want  int
	}{{"control-plane", f.capi.cluster.ControlPlanes}, {"md-0", capiMDs[0].Replicas}}
	for _, s := range steps {
		md := s.owner
		if md == "control-plane" {
			md = ""
		}
		if err := f.capiBump(ctx, md, ""); err != nil {
			return err
		}
		start := time.Now()
		err := f.followRoll(ctx, func() error {
			f.logNodeReadiness(ctx)
			return f.machinesDone(ctx, s.owner, s.want)
		})
		f.data.rollEnd = time.Now()
		f.setWindows()
		if err != nil {
			return fmt.Errorf("the in-place roll of %s: %w", s.owner, err)
		}
		f.Logf("%s: every machine updated in place in %.0fs", s.owner, time.Since(start).Seconds())
	}
	return nil
}

// logNodeReadiness logs each change of a node's Ready condition (status,
// reason) and of the workloads' pods that are not Ready, as the roll's
// polls see them: what lies behind an endpoint removal.
func (f *fleetRun) logNodeReadiness(ctx context.Context) {
	nodes, err := f.Cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	if f.capi.nodeReady == nil {
		f.capi.nodeReady = map[string]string{}
	}
	for _, n := range nodes.Items {
		state := "no Ready condition"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				state = fmt.Sprintf("%s (%s, heartbeat %s)", c.Status, c.Reason, c.LastHeartbeatTime.Format("15:04:05"))
				if c.Status == corev1.ConditionTrue {
					state = "True"
				}
			}
		}
		if prev := f.capi.nodeReady[n.Name]; prev != state {
			if prev != "" || state != "True" {
				f.Logf("node %s Ready: %s", n.Name, state)
			}
			f.capi.nodeReady[n.Name] = state
		}
	}
	pods, err := f.Cluster.Client.CoreV1().Pods(kind.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	var unready []string
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				unready = append(unready, fmt.Sprintf("%s (%s %s)", p.Name, c.Reason, c.Message))
			}
		}
	}
	if s := strings.Join(unready, ", "); s != f.capi.podsUnready {
		f.Logf("workload pods not Ready: %s", list(unready))
		f.capi.podsUnready = s
	}
}

// capiFault bumps md-1, whose one machine holds the canary: its Job's
// gate fails, kc-roll rolls the node back, the extension answers
// Failure; CAPI calls again, and once the failed Job's TTL passed the
// extension's next Job must refuse at once on the node's state. Then the
// fleet's checks of a rolled-back node, and CAPI's view.
func (f *fleetRun) capiFault(ctx context.Context) error {
	faulty := f.faultyWorker().Name()
	ms, err := f.capi.mgmt.machines(ctx, f.capi.cluster.Namespace, f.capi.cluster.Name)
	if err != nil {
		return err
	}
	var machine string
	for _, mc := range ms {
		if mc.Node == faulty {
			machine = mc.Name
			if !f.owned(mc, "md-1") {
				return fmt.Errorf("worker %d (%s), the canary's, is %s's, not md-1's", FaultWorker, faulty, mc.Owner)
			}
		}
	}
	if err := f.capiBump(ctx, "md-1", ""); err != nil {
		return err
	}
	defer f.saveCAPILogs(ctx)
	var failedAt time.Time
	err = f.followRoll(ctx, func() error {
		j, ok := f.jobs[faulty]
		if !ok || !j.first().Done {
			return fmt.Errorf("waiting for the Job on %s", faulty)
		}
		if !j.first().Failed {
			return stopPolling{fmt.Errorf("the Job on %s, whose gate must fail, succeeded (see %s)", faulty, f.jobLogPath(j.first()))}
		}
		if failedAt.IsZero() {
			failedAt = time.Now()
			f.Logf("the Job on %s failed: waiting for CAPI's Machine to say so and for the extension's next Job (the failed one's TTL is %d s)", faulty, JobTTL)
		}
		mc, err := f.capi.mgmt.machines(ctx, f.capi.cluster.Namespace, f.capi.cluster.Name)
		if err != nil {
			return err
		}
		if u := mc[machine].Updating; u.Reason != "InPlaceUpdateFailed" {
			return fmt.Errorf("Machine %s: Updating %s/%s", machine, u.Status, u.Reason)
		}
		if j.Run < 2 || !j.Done {
			return fmt.Errorf("waiting for the extension's next Job on %s", faulty)
		}
		return nil
	})
	f.setWindows()
	if err != nil {
		return fmt.Errorf("the fault on md-1: %w", err)
	}
	if err := f.checkRolledBack(ctx); err != nil {
		return err
	}
	// CAPI's view: the Machine kept (not replaced), its update failed with
	// the reason in the core controller's log (CAPI v1.13 logs a
	// Failure's message; the condition points there).
	after, err := f.capi.mgmt.machines(ctx, f.capi.cluster.Namespace, f.capi.cluster.Name)
	if err != nil {
		return err
	}
	mc, kept := after[machine]
	f.saveCAPILogs(ctx)
	coreLog := f.capiCoreLog()
	reasoned := strings.Contains(coreLog, "health gate failed") && strings.Contains(coreLog, machine)
	// (CAPI writes the desired version into the Machine's spec when it
	// starts the update: the spec says the target, its status does not.)
	f.recordCAPI(fmt.Sprintf("md-1's Machine %s kept (no replacement), its in-place update failed with the gate's reason", machine),
		kept && !mc.Deleting && mc.UpToDate.Status != "True" && mc.Updating.Reason == "InPlaceUpdateFailed" && reasoned,
		fmt.Sprintf("Machine %s; the core controller's log names the failed gate for it: %t", mc, reasoned))
	return nil
}

// capiCoreLog is CAPI core's saved log (saveCAPILogs).
func (f *fleetRun) capiCoreLog() string {
	paths, _ := filepath.Glob(filepath.Join(f.Options.LogDir, f.Name+"-capi-system-*.log"))
	var b strings.Builder
	for _, p := range paths {
		out, _ := os.ReadFile(p)
		b.Write(out)
	}
	return b.String()
}

// capiReplaceRoll is CAPI's default rollout: the control plane's version
// and a machine template of the target's node image, then each
// MachineDeployment's; followed until every Machine is a new one at the
// target, the CNI written onto each new node as it comes (the e2e's pod
// network has no DaemonSet).
func (f *fleetRun) capiReplaceRoll(ctx context.Context) error {
	m, c, to := f.capi.mgmt, f.capi.cluster, f.Steps[0].To
	var templates []byte
	for _, role := range append([]string{"control-plane"}, mdNames()...) {
		t, err := c.machineTemplate(role, to, kind.NodeImage(to))
		if err != nil {
			return err
		}
		templates = append(append(templates, t...), "\n---\n"...)
	}
	if err := m.kubectl(ctx, "templates-"+c.Name, templates, "apply", "-f", "-"); err != nil {
		return err
	}
	f.data.rollStart = time.Now()
	defer f.saveCAPILogs(ctx)
	defer func() { f.data.rollEnd = time.Now(); f.replaceWindows() }()
	steps := []struct {
		owner string
		want  int
	}{{"control-plane", f.capi.cluster.ControlPlanes}}
	for _, md := range capiMDs {
		steps = append(steps, struct {
			owner string
			want  int
		}{md.Name, md.Replicas})
	}
	for _, s := range steps {
		md := s.owner
		if md == "control-plane" {
			md = ""
		}
		if err := f.capiBump(ctx, md, capiTemplateName(c.Name, s.owner, to)); err != nil {
			return err
		}
		start := time.Now()
		if err := kind.Poll(ctx, 30*time.Minute, func() error {
			if err := f.keepCNI(ctx); err != nil {
				return err
			}
			if err := f.trackReplaced(ctx); err != nil {
				return err
			}
			return f.machinesDone(ctx, s.owner, s.want)
		}); err != nil {
			return fmt.Errorf("CAPI's rollout of %s: %w", s.owner, err)
		}
		f.Logf("%s: every machine replaced in %.0fs", s.owner, time.Since(start).Seconds())
	}
	return f.keepCNI(ctx)
}

func mdNames() []string {
	var out []string
	for _, md := range capiMDs {
		out = append(out, md.Name)
	}
	return out
}

// keepCNI reloads the cluster's nodes and, when they changed since the
// pod network was last written, writes it onto every node
// (kind.InstallCNI: each node's own subnet and the routes to the others')
// and the workloads' images into the new ones. A node not registered yet,
// or without a podCIDR, fails it: the next poll does it again.
func (f *fleetRun) keepCNI(ctx context.Context) error {
	if err := f.Cluster.Reload(ctx); err != nil {
		return err
	}
	if f.capi.networked == nil {
		f.capi.networked = map[string]bool{}
		for _, n := range f.capi.machinesBefore {
			f.capi.networked[n.Node] = true
		}
	}
	var added []*kind.Node
	for _, n := range f.Cluster.Nodes {
		if !f.capi.networked[n.Name()] {
			added = append(added, n)
		}
	}
	if len(added) == 0 {
		return nil
	}
	f.Logf("new nodes: %s (nodes now: %s)", nodeNames(added), nodeNames(f.Cluster.Nodes))
	if err := f.Cluster.InstallCNI(ctx); err != nil {
		return err
	}
	if err := f.ImportImagesInto(ctx, added); err != nil {
		return err
	}
	for _, n := range added {
		f.capi.networked[n.Name()] = true
	}
	return nil
}

func nodeNames(nodes []*kind.Node) string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name())
	}
	return strings.Join(out, " ")
}

// trackReplaced notes when each Machine of the baseline was first seen
// being deleted (CAPI drains its node) and first seen gone.
func (f *fleetRun) trackReplaced(ctx context.Context) error {
	ms, err := f.capi.mgmt.machines(ctx, f.capi.cluster.Namespace, f.capi.cluster.Name)
	if err != nil {
		return err
	}
	if f.capi.deleting == nil {
		f.capi.deleting, f.capi.gone = map[string]time.Time{}, map[string]time.Time{}
	}
	now := time.Now()
	for name, before := range f.capi.machinesBefore {
		mc, ok := ms[name]
		if ok && mc.UID != before.UID {
			ok = false
		}
		if ok && mc.Deleting && f.capi.deleting[name].IsZero() {
			f.capi.deleting[name] = now
		}
		if !ok && f.capi.gone[name].IsZero() {
			f.capi.gone[name] = now
			if f.capi.deleting[name].IsZero() {
				f.capi.deleting[name] = now
			}
		}
	}
	return nil
}

// replaceWindows are the replacement roll's windows: one per Machine at
// the baseline, from when it was first seen being deleted (its node
// drained) to when it was gone, outcome "replaced", in that order.
func (f *fleetRun) replaceWindows() {
	f.data.windows, f.order = nil, nil
	for name, mc := range f.capi.machinesBefore {
		f.data.windows = append(f.data.windows, nodeWindow{Node: mc.Node, Start: f.capi.deleting[name], End: f.capi.gone[name], Outcome: outcomeReplaced})
	}
	sort.Slice(f.data.windows, func(i, j int) bool { return f.data.windows[i].Start.Before(f.data.windows[j].Start) })
	for _, w := range f.data.windows {
		f.order = append(f.order, w.Node)
	}
}

// outcomeReplaced: CAPI replaced the node's Machine.
const outcomeReplaced = "replaced"

// capiAfterRoll is the fleet's afterRoll; after CAPI's rollout, whose
// new nodes lack the static pods and the StatefulSet's local volumes,
// what is not Ready within the wait is reported, not waited for.
func (f *fleetRun) capiAfterRoll(ctx context.Context) error {
	if !f.capi.replace {
		return f.afterRoll(ctx)
	}
	if _, err := f.Cluster.WaitPodsReady(ctx, 3*time.Minute, fleetPods(len(f.Cluster.Nodes), len(f.Statics.Pods), false), kind.Namespace); err != nil {
		f.Logf("after CAPI's rollout, not every pod came back (reported): %v", err)
	}
	statics := f.Statics
	f.Statics.Pods = nil
	defer func() { f.Statics = statics }()
	return f.afterRollNoWait(ctx)
}

// capiCheckMachines: the Machines CAPI created and deleted over the roll,
// and each one's version; in place none created or deleted.
func (f *fleetRun) capiCheckMachines(ctx context.Context) error {
	after, err := f.capi.mgmt.machines(ctx, f.capi.cluster.Namespace, f.capi.cluster.Name)
	if err != nil {
		return err
	}
	f.NodeLog(f.Cluster.ControlPlane(), "capi-machines-after", capiMachinesJSON(after))
	var created, deleted, atTarget []string
	beforeUIDs := map[string]bool{}
	for _, mc := range f.capi.machinesBefore {
		beforeUIDs[mc.UID] = true
		if a, ok := after[mc.Name]; !ok || a.UID != mc.UID {
			deleted = append(deleted, mc.Name)
		}
	}
	for _, mc := range after {
		if !beforeUIDs[mc.UID] {
			created = append(created, mc.Name)
		}
		if mc.Version == "v"+f.Steps[0].To && mc.UpToDate.Status == "True" {
			atTarget = append(atTarget, mc.Name)
		}
	}
	total := f.data.rollEnd.Sub(f.data.rollStart).Seconds()
	perMachine := total / float64(len(f.capi.machinesBefore))
	detail := fmt.Sprintf("%d Machines before; created %d (%s), deleted %d (%s); at v%s and up to date: %d; %.0fs in all, %.0fs per machine",
		len(f.capi.machinesBefore), len(created), list(created), len(deleted), list(deleted), f.Steps[0].To, len(atTarget), total, perMachine)
	if f.capi.replace {
		f.recordCAPI("CAPI's rollout (reported): Machines replaced", true, detail)
		return nil
	}
	// In place: md-1's machine stays on the previous version (its gate
	// failed), the others moved.
	f.recordCAPI("0 Machines created or deleted; the control plane and md-0 at the target in place", len(created) == 0 && len(deleted) == 0 && len(atTarget) == len(after)-capiMDs[1].Replicas, detail)
	return nil
}

// capiReport is the report's line of a CAPI roll's kind.
func (f *fleetRun) capiRollName() string {
	if f.capi.replace {
		return "Cluster API's default rollout (every machine replaced)"
	}
	return "Cluster API in place through the extension (kc-roll per machine), the gate failing on md-1's machine"
}
