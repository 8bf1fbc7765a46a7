package fleet

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
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
