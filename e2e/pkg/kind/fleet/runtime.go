package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
)

// checkRuntimeMoved checks, after the runtime roll, that every node's
// containerd is the one the Plans named: the CRI's answer (crictl
// version) and the selection (runtime-select status); and that each
// node's runtime gate passed on the kubelet's own record of a sync of
// every pod of its picture after containerd came back, not on a timer.
func (f *fleetRun) checkRuntimeMoved(ctx context.Context) error {
	c := report.Check{Name: fmt.Sprintf("%s: every node runs containerd %s after the roll (KC_RUNTIME)", f.label(), f.runtime.Version), Passed: true}
	var per []string
	for _, n := range f.Cluster.Nodes {
		version, _ := n.Exec(ctx, nil, "crictl", "--timeout", "10s", "version")
		status, _ := n.Exec(ctx, nil, "runtime-select", "status")
		ok := kind.RuntimeVersionIs(string(version), f.runtime.Version) && strings.Contains(string(status), "containerd: "+f.runtime.Version)
		c.Passed = c.Passed && ok
		per = append(per, fmt.Sprintf("%s %s (%s)", n.Name(), map[bool]string{true: "yes", false: "NO"}[ok], strings.Join(strings.Fields(string(status)), " ")))
	}
	c.Detail = strings.Join(per, "; ")
	f.Logf("check %q: passed %t: %s", c.Name, c.Passed, c.Detail)
	f.Record(c)

	g := report.Check{Name: fmt.Sprintf("%s: each node's runtime gate passed once the kubelet's record showed every pod of its picture synced on containerd %s", f.label(), f.runtime.Version), Passed: true}
	per = nil
	for _, n := range f.Cluster.Nodes {
		j := f.jobs[n.Name()]
		if j == nil {
			g.Passed = false
			per = append(per, n.Name()+": no Job")
			continue
		}
		ev := runtimeGateEvidence(readLog(f.jobLogPath(j)))
		g.Passed = g.Passed && ev.ok()
		per = append(per, fmt.Sprintf("%s: %s", n.Name(), ev))
	}
	g.Detail = strings.Join(per, "; ")
	f.Logf("check %q: passed %t: %s", g.Name, g.Passed, g.Detail)
	f.Record(g)
	return nil
}

// runtimeBack says whether n's containerd is no longer the runtime roll's
// (runtime-select's selection and the CRI's answer), with what they say.
func (f *fleetRun) runtimeBack(ctx context.Context, n *kind.Node) (bool, string) {
	version, verr := n.Exec(ctx, nil, "crictl", "--timeout", "10s", "version")
	status, serr := n.Exec(ctx, nil, "runtime-select", "status")
	back := verr == nil && serr == nil && !kind.RuntimeVersionIs(string(version), f.runtime.Version) &&
		!strings.Contains(string(status), "containerd: "+f.runtime.Version)
	return back, fmt.Sprintf("runtime-select: %s; crictl version: %s", strings.Join(strings.Fields(string(status)), " "), strings.Join(strings.Fields(string(version)), " "))
}

// gateEvidence is what a Job's log says of its runtime step's gate (the
// kubelet-compat gate's output, which kc-roll logs indented).
type gateEvidence struct {
	// found: the log holds a passed runtime step's gate.
	found bool
	// byRecord: the gate judged the syncs on the kubelet's record (not
	// the fixed wait).
	byRecord bool
	// pods of the picture (kept), of them synced by the record.
	pods, synced int
	// assumed: pods taken as synced on the fixed wait.
	assumed int
}

func (e gateEvidence) ok() bool {
	return e.found && e.byRecord && e.pods > 0 && e.synced == e.pods && e.assumed == 0
}

func (e gateEvidence) String() string {
	if !e.found {
		return "no passed runtime gate in its Job's log"
	}
	how := "the fixed wait"
	if e.byRecord {
		how = "the kubelet's record"
	}
	return fmt.Sprintf("%d of %d pods of the picture synced by %s, %d assumed on the fixed wait", e.synced, e.pods, how, e.assumed)
}

// runtimeGateEvidence reads the last passed runtime step's gate in a
// Job's log: its header ("gate runtime step on node N: passed"), its
// sync evidence, each pod of the picture ("NS/NAME uid U: kept, synced")
// and their evidence, up to the next line of kc-roll's own.
func runtimeGateEvidence(log string) gateEvidence {
	var ev, cur gateEvidence
	in := false
	for _, line := range strings.Split(log, "\n") {
		text := strings.TrimPrefix(line, "  ")
		switch {
		case strings.HasPrefix(text, "gate runtime step on node ") && strings.HasSuffix(text, ": passed"):
			in, cur = true, gateEvidence{found: true}
			continue
		case !in:
			continue
		case !strings.HasPrefix(line, "  "):
			in, ev = false, cur
			continue
		}
		switch {
		case strings.HasPrefix(text, "sync evidence: "):
			cur.byRecord = strings.HasPrefix(text, "sync evidence: record")
		case strings.HasPrefix(text, "  ") && strings.Contains(text, "assumed synced"):
			cur.assumed++
		case strings.HasPrefix(text, " "):
		case strings.Contains(text, " uid ") && strings.Contains(text, ": kept"):
			cur.pods++
			if strings.HasSuffix(text, ", synced") {
				cur.synced++
			}
		}
	}
	if in {
		ev = cur
	}
	return ev
}

// containerdConfig is containerd's configuration on a node, which a step
// into 2.x migrates and its rollback puts back.
const containerdConfig = "/etc/containerd/config.toml"

// rollbackTo says, in an action's name, where the runtime-2.0 roll's
// failed gate takes the faulty worker's containerd back.
func (f *fleetRun) rollbackTo() string {
	if f.runtimeFrom == (plan.Runtime{}) {
		return ""
	}
	return fmt.Sprintf(" to %s (no task on a v3 shim, its configuration put back)", f.runtimeFrom.Version)
}

// selectRuntimeFrom moves every node's containerd to runtimeFrom before
// the workloads, as the runtime roll's step leaves a node (containerd
// only, runc as it was): kubelet-compat cgroups --repair first (1.7
// kills a shim whose task reports no process at its start), then
// runtime-select --restart-containerd, until the CRI answers with it.
func (f *fleetRun) selectRuntimeFrom(ctx context.Context) error {
	rt := f.runtimeFrom
	for _, n := range f.Cluster.Nodes {
		out, err := f.ExecLogged(ctx, n, "cgroups-repair-"+rt.String(), "kubelet-compat", "cgroups", "--repair")
		if err != nil {
			return fmt.Errorf("%s: kubelet-compat cgroups --repair: %w", n.Name(), err)
		}
		f.Logf("%s: cgroups --repair: %s", n.Name(), strings.Join(strings.Split(strings.TrimSpace(string(out)), "\n"), "; "))
		if _, err := f.ExecLogged(ctx, n, "runtime-select-"+rt.String(), "runtime-select", "--restart-containerd", "containerd", rt.Version); err != nil {
			return fmt.Errorf("%s: runtime-select --restart-containerd containerd %s: %w", n.Name(), rt.Version, err)
		}
		if err := kind.Poll(ctx, 2*time.Minute, func() error {
			out, err := n.Exec(ctx, nil, "crictl", "--timeout", "10s", "version")
			if err != nil {
				return err
			}
			if !kind.RuntimeVersionIs(string(out), rt.Version) {
				return fmt.Errorf("crictl version: %s", strings.Join(strings.Fields(string(out)), " "))
			}
			return nil
		}); err != nil {
			return fmt.Errorf("%s: containerd %s not answering: %w", n.Name(), rt.Version, err)
		}
		f.Logf("%s: containerd %s selected and answering the CRI", n.Name(), rt.Version)
	}
	return nil
}

// checkRuntimeRollbackFrom2 checks the runtime-2.0 roll's failed gate's
// rollback on the faulty worker, 2.x -> 1.x, the step back that is
// lossless only while no task runs on a shim 2.x started: kc-roll's log
// (logText, the failed Job's) says it looked for such tasks, found none
// among the node's tasks, put containerd's configuration back from its
// backup and selected runtimeFrom again; the node says the same
// (runtime-select, the CRI's version, the configuration byte for byte as
// before the roll, no bundle whose bootstrap.json says version 3).
func (f *fleetRun) checkRuntimeRollbackFrom2(ctx context.Context, logText string) {
	faulty := f.faultyWorker()
	from := f.runtimeFrom.Version
	version, verr := faulty.Exec(ctx, nil, "crictl", "--timeout", "10s", "version")
	status, serr := faulty.Exec(ctx, nil, "runtime-select", "status")
	onFrom := verr == nil && serr == nil && kind.RuntimeVersionIs(string(version), from) && strings.Contains(string(status), "containerd: "+from)
	cfg, cerr := faulty.ReadFile(ctx, containerdConfig)
	cfgBack := cerr == nil && len(f.faults.containerdConfig) > 0 && bytes.Equal(cfg, f.faults.containerdConfig)
	ev := parseRuntimeRollback(logText)
	out, terr := faulty.Exec(ctx, nil, "sh", "-c", taskShimsScript)
	var node nodeTasks
	if terr == nil {
		node, terr = parseTaskShims(string(out))
	}
	f.Record(report.Check{Name: fmt.Sprintf("%s: %s's failed runtime gate rolled containerd back %s -> %s: kc-roll looked for tasks on shims of the task API v3 and found none, the configuration put back from its backup",
		f.label(), faulty.Name(), f.runtime.Version, from),
		Passed: onFrom && cfgBack && ev.ok(from) && terr == nil && node.tasks > 0 && len(node.v3) == 0,
		Detail: fmt.Sprintf("runtime-select: %s; crictl version: %s; %s as before the roll: %t (%s); kc-roll's log: %s; the node's task bundles now: %s",
			strings.Join(strings.Fields(string(status)), " "), strings.Join(strings.Fields(string(version)), " "), containerdConfig, cfgBack, errText(cerr), ev, describeTasks(node, terr))})
}

// runtimeRollback is what a Job's log says of its runtime rollback.
type runtimeRollback struct {
	// looked: the rollback looked for tasks on v3 shims and found none,
	// among tasks; lookedLine, selectLine: their lines, in the log's order.
	looked                 bool
	tasks                  int
	lookedLine, selectLine int
	// configFrom: the backup containerd's configuration was put back from.
	configFrom string
	// selected: the containerd runtime-select was asked for; answered:
	// the one the rollback's end says is selected and answers the CRI.
	selected, answered string
	// failed: the rollback failed (a refusal), as the log says.
	failed string
}

// ok says whether the log shows a rollback to want that looked for v3
// tasks, found none among some, before it selected want, and put the
// configuration back from want's backup.
func (e runtimeRollback) ok(want string) bool {
	return e.looked && e.tasks > 0 && e.lookedLine < e.selectLine && e.configFrom == containerdConfig+".kc-"+want &&
		e.selected == want && e.answered == want && e.failed == ""
}

func (e runtimeRollback) String() string {
	if e.failed != "" {
		return e.failed
	}
	looked := "no look for tasks on v3 shims"
	if e.looked {
		looked = fmt.Sprintf("looked for tasks on v3 shims: none of %d", e.tasks)
	}
	return fmt.Sprintf("%s; configuration put back from %s; runtime-select containerd %s; rolled back to %s", looked, orNone(e.configFrom), orNone(e.selected), orNone(e.answered))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// parseRuntimeRollback reads a Job's log's runtime rollback: kc-roll's
// own lines (kubelet-compat-upgrade: ...) "rollback: looked for tasks on
// shims of the task API v3 in DIR (...): none of N task(s)", "rollback:
// /etc/containerd/config.toml put back from BACKUP", "rollback:
// runtime-select --restart-containerd containerd V", "rolled back:
// containerd V is selected ...", or "the rollback failed: ...".
func parseRuntimeRollback(log string) runtimeRollback {
	var e runtimeRollback
	for i, line := range strings.Split(log, "\n") {
		text := strings.TrimPrefix(line, "kubelet-compat-upgrade: ")
		switch {
		case strings.HasPrefix(text, "rollback: looked for tasks on shims of the task API v3 in "):
			_, rest, ok := strings.Cut(text, "): none of ")
			n, err := strconv.Atoi(strings.TrimSuffix(rest, " task(s)"))
			if ok && err == nil && strings.HasSuffix(rest, " task(s)") {
				e.looked, e.tasks, e.lookedLine = true, n, i+1
			}
		case strings.HasPrefix(text, "rollback: "+containerdConfig+" put back from "):
			e.configFrom = strings.TrimPrefix(text, "rollback: "+containerdConfig+" put back from ")
		case strings.HasPrefix(text, "rollback: runtime-select --restart-containerd containerd "):
			e.selected, e.selectLine = strings.TrimPrefix(text, "rollback: runtime-select --restart-containerd containerd "), i+1
		case strings.HasPrefix(text, "rolled back: containerd "):
			e.answered, _, _ = strings.Cut(strings.TrimPrefix(text, "rolled back: containerd "), " ")
		case strings.Contains(text, "the rollback failed: "):
			_, e.failed, _ = strings.Cut(text, "the rollback failed: ")
			e.failed = "the rollback failed: " + e.failed
		}
	}
	return e
}

// taskShimsScript lists a node's runtime v2 task bundles, one a line:
// NAMESPACE/ID and its bootstrap.json (which containerd 2.x writes for a
// shim it starts), or "-" without one.
const taskShimsScript = `cd /run/containerd/io.containerd.runtime.v2.task 2>/dev/null || exit 0
for d in */*/; do
  [ -d "$d" ] || continue
  t=${d%/}
  if [ -f "$t/bootstrap.json" ]; then printf '%s %s\n' "$t" "$(tr -d '\n' < "$t/bootstrap.json")"; else printf '%s -\n' "$t"; fi
done`

// nodeTasks are a node's task bundles: how many, and those on a shim of
// the task API v3.
type nodeTasks struct {
	tasks int
	v3    []string
}

// parseTaskShims reads taskShimsScript's output.
func parseTaskShims(out string) (nodeTasks, error) {
	var n nodeTasks
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		task, boot, ok := strings.Cut(line, " ")
		if !ok {
			return n, fmt.Errorf("task bundles: %q", line)
		}
		n.tasks++
		if boot == "-" {
			continue
		}
		var params struct {
			Version int `json:"version"`
		}
		if err := json.Unmarshal([]byte(boot), &params); err != nil {
			return n, fmt.Errorf("%s/bootstrap.json: %w", task, err)
		}
		if params.Version >= 3 {
			n.v3 = append(n.v3, task)
		}
	}
	return n, nil
}

func describeTasks(n nodeTasks, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d task(s), on a v3 shim: %s", n.tasks, list(n.v3))
}
