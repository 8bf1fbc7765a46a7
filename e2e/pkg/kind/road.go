package kind

// The road (plan.Plan.RuntimeMoves): the container runtime moved in place
// on every node of a running cluster between its kubelet steps, with the
// project's runtime packages (runtime-select), as an operator moves
// containerd with Kubernetes.

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/execlog"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/swap"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimecompat"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// RuntimeDebDir is where make runtime-deb writes the runtime's packages.
func RuntimeDebDir(output string) string { return filepath.Join(output, "runtime-debs") }

// RuntimeDebs are the packages a runtime move stages on a node: the
// selection (runtime-select), the target's containerd, and the newest runc
// built, which moves with it.
func RuntimeDebs(dir string, to plan.Runtime) (debs []string, runc string, err error) {
	find := func(glob string) ([]string, error) {
		m, err := filepath.Glob(filepath.Join(dir, glob))
		if err != nil || len(m) == 0 {
			return nil, fmt.Errorf("no %s in %s (make runtime-deb RUNTIME_COMPONENTS=%s,runc@1.5.3)", glob, dir, to)
		}
		return m, nil
	}
	unversioned, err := find("runtime-unversioned_*.deb")
	if err != nil {
		return nil, "", err
	}
	containerd, err := find(fmt.Sprintf("runtime-containerd-%s_*.deb", to.Version))
	if err != nil {
		return nil, "", err
	}
	runcs, err := find("runtime-runc-*_*.deb")
	if err != nil {
		return nil, "", err
	}
	// runtime-runc-1.5.3_1.5.3-1_amd64.deb: the version is the name's.
	sort.Slice(runcs, func(i, j int) bool { return plan.VersionLess(runcVersion(runcs[i]), runcVersion(runcs[j])) })
	newest := runcs[len(runcs)-1]
	return []string{unversioned[0], containerd[0], newest}, runcVersion(newest), nil
}

func runcVersion(deb string) string {
	name := strings.TrimPrefix(filepath.Base(deb), "runtime-runc-")
	v, _, _ := strings.Cut(name, "_")
	return v
}

// roadActions are the actions of the road's runtime moves under kubelet
// at: per move, the runtime's .debs staged on every node, the cluster's
// snapshot, each node's runtime moved in turn (the control-plane node
// first, as a kubelet step goes), and the whole cluster checked.
func (r *ClusterRun) roadActions(at string) []Action {
	var out []Action
	for _, mv := range r.Options.RuntimeMoves {
		if mv.At != at {
			continue
		}
		mv := mv
		out = append(out,
			Action{"runtime " + mv.String() + ": stage its .debs on every node", func(r *ClusterRun, ctx context.Context) error { return r.StageRuntime(ctx, mv.Step.To) }},
			Action{"runtime " + mv.String() + ": snapshot", func(r *ClusterRun, ctx context.Context) error { return r.startMove(ctx, mv) }})
		for i := 0; i <= r.Options.Workers; i++ {
			i := i
			out = append(out, Action{"move the runtime of " + nodeWhat(i) + " " + mv.Step.String(), func(r *ClusterRun, ctx context.Context) error { return r.moveRuntime(ctx, r.Cluster.Nodes[i], mv) }})
		}
		out = append(out, Action{"runtime " + mv.String() + ": workloads and the API unchanged", (*ClusterRun).checkStep})
	}
	return out
}

// nodeWhat names node i of a cluster in the actions.
func nodeWhat(i int) string {
	if i == 0 {
		return "the control-plane node"
	}
	return fmt.Sprintf("worker %d", i)
}

// StageRuntime installs the runtime's .debs next to what runs (Debian's
// containerd stays installed) on every node, as an operator stages them.
func (r *ClusterRun) StageRuntime(ctx context.Context, to plan.Runtime) error {
	debs, _, err := RuntimeDebs(RuntimeDebDir(r.Options.Output), to)
	if err != nil {
		return err
	}
	const stageDir = "/root/kc-e2e-stage/runtime"
	for _, n := range r.Cluster.Nodes {
		if _, err := n.Exec(ctx, nil, "mkdir", "-p", stageDir); err != nil {
			return err
		}
		var paths []string
		for _, d := range debs {
			if err := r.Provider.Engine.Command("cp", d, n.name+":"+stageDir+"/").Run(ctx); err != nil {
				return err
			}
			paths = append(paths, stageDir+"/"+filepath.Base(d))
		}
		if _, err := r.ExecLogged(ctx, n, "dpkg-install-"+to.String(), append([]string{"dpkg", "-i"}, paths...)...); err != nil {
			return err
		}
	}
	return nil
}

// startMove is a runtime move's start: as a kubelet step's, labelled by
// the move; the kubelets stay at mv.At.
func (r *ClusterRun) startMove(ctx context.Context, mv plan.RuntimeMove) error {
	if err := r.startStep(ctx, Step{From: mv.At, To: mv.At}); err != nil {
		return err
	}
	r.label = mv.String()
	return nil
}

// moveRuntime moves n's runtime through the swap sequence, the runtime as
// what is swapped: record, the picture before, runc and then containerd
// selected (runtime-select --restart-containerd: the running containers
// keep their shims), the node back, three sync periods, the picture after.
// The running kubelet is the same process throughout. Then exec and logs
// on a container the old containerd started.
func (r *ClusterRun) moveRuntime(ctx context.Context, n *Node, mv plan.RuntimeMove) error {
	_, runc, err := RuntimeDebs(RuntimeDebDir(r.Options.Output), mv.Step.To)
	if err != nil {
		return err
	}
	h := r.nodeBack(n)
	h.WaitFailed = swap.FailPatched(r.Patched, r.Logf, n.name+": ")
	if r.Patched {
		// The project's procedure: what containerd 1.7+ would kill as a
		// leaked shim is put back first (the control restarts containerd
		// as operators do today, without it).
		h.Prepare = func(ctx context.Context, _ *snapshot.Snapshot) error { return r.repairCgroups(ctx, n, mv) }
	}
	res, err := swap.Run(ctx, kindNode{r: r, n: n, to: mv.Step.To.String()}, r.selectRuntime(n, mv.Step.To, runc), h)
	if err != nil {
		return err
	}
	run := r.swapRun(res, n, mv.String(), mv.Step.From.String(), mv.Step.To.String())
	judgeMove(&run, r.Patched)
	r.addRun(run, mv.String())
	for _, c := range r.execAndLog(ctx, n, res.Before, res.After, fmt.Sprintf("%s %s %s %s: ", r.Name, n.name, mv, r.Variant())) {
		r.Logf("check %q: passed %t: %s", c.Name, c.Passed, c.Detail)
		r.Record(c)
	}
	return nil
}

// judgeMove asserts a patched cluster's move as a kubelet step's (0
// restarts, 0 pods recreated, 0 UIDs changed); the control's (the
// kubelet as released) is reported: upstream keeps everything on a
// runtime move done right, so there is nothing of its own to hold it to.
func judgeMove(run *report.Run, patched bool) {
	if patched {
		report.AssertPatched(run)
		return
	}
	run.Passed = run.Pods > 0
	run.Verdict = fmt.Sprintf("reported, not asserted (the kubelet as released under a runtime move): %d restarts (%s), %d pods recreated, %d pod UIDs changed",
		run.Restarts, strings.Join(run.Diff.RestartedPods, " "), run.RecreatedPods, run.Diff.UIDChanges)
}

// selectRuntime selects runc (taken by containerd's next start) and then
// containerd with its restart, through the packages' runtime-select, and
// waits until the CRI answers with to's version; the swap starts at the
// restart.
func (r *ClusterRun) selectRuntime(n *Node, to plan.Runtime, runc string) swap.Swapper {
	return func(ctx context.Context) (time.Time, error) {
		if _, err := r.ExecLogged(ctx, n, "runtime-select-runc-"+runc, "runtime-select", "runc", runc); err != nil {
			return time.Time{}, err
		}
		start := time.Now()
		if _, err := r.ExecLogged(ctx, n, "runtime-select-"+to.String(), "runtime-select", "--restart-containerd", "containerd", to.Version); err != nil {
			return start, err
		}
		err := Poll(ctx, 2*time.Minute, func() error {
			out, err := n.Exec(ctx, nil, "crictl", "--timeout", "10s", "version")
			if err != nil {
				return err
			}
			if !RuntimeVersionIs(string(out), to.Version) {
				return fmt.Errorf("crictl version: %s", strings.Join(strings.Fields(string(out)), " "))
			}
			return nil
		})
		if err != nil {
			return start, fmt.Errorf("%s: containerd %s not answering: %w", n.name, to.Version, err)
		}
		return start, nil
	}
}

// RuntimeVersionIs reads crictl version's RuntimeVersion line.
func RuntimeVersionIs(out, version string) bool {
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "RuntimeVersion" {
			return strings.TrimPrefix(strings.TrimSpace(v), "v") == version
		}
	}
	return false
}

// execAndLog makes execlog's checks through crictl in the node (exec
// through the new containerd and the old shim; crictl logs, the file the
// new containerd now writes; crictl attach, the new containerd's
// streaming server) on a workload container that ran before the
// move and still runs under the same ID.
func (r *ClusterRun) execAndLog(ctx context.Context, n *Node, before, after *snapshot.Snapshot, prefix string) []report.Check {
	still := map[string]bool{}
	for _, c := range after.Containers {
		if c.State == "RUNNING" {
			still[c.ID] = true
		}
	}
	var cands []snapshot.Container
	for _, c := range workloadsOnly(before).Containers {
		if c.State == "RUNNING" && still[c.ID] {
			cands = append(cands, c)
		}
	}
	en := execlog.Node{
		Exec: func(ctx context.Context, id string, argv ...string) (string, error) {
			out, err := n.Exec(ctx, nil, append([]string{"crictl", "--timeout", "20s", "exec", id}, argv...)...)
			return string(out), err
		},
		// crictl attach runs until its container exits: timeout ends it
		// inside the node, and its output comes back then.
		Attach: func(ctx context.Context, id string, out io.Writer) error {
			secs := strconv.Itoa(int((execlog.DefaultAttachFor - 2*time.Second) / time.Second))
			got, err := n.Exec(ctx, nil, "sh", "-c", `timeout "$1" crictl attach "$2"; rc=$?; [ $rc -eq 124 ] || exit $rc`, "sh", secs, id)
			out.Write(got)
			return err
		},
		LogHas: func(ctx context.Context, id, marker string) (string, error) {
			return "crictl logs", Poll(ctx, 15*time.Second, func() error {
				out, err := n.Exec(ctx, nil, "crictl", "logs", "--tail", "50", id)
				if err == nil && !strings.Contains(string(out), marker) {
					err = fmt.Errorf("crictl logs has no %s", marker)
				}
				return err
			})
		},
	}
	execC, logC, used := execlog.Check(ctx, en, cands)
	attachC := execlog.Attach(ctx, en, used)
	execC.Name, logC.Name, attachC.Name = prefix+execC.Name, prefix+logC.Name, prefix+attachC.Name
	return []report.Check{execC, logC, attachC}
}

// repairCgroups runs kubelet-compat cgroups --repair on n before its
// runtime moves to a containerd that kills shims whose task reports no
// process (pkg/runtimecompat), and records what it put back.
func (r *ClusterRun) repairCgroups(ctx context.Context, n *Node, mv plan.RuntimeMove) error {
	if !runtimecompat.KillsShimsWithoutProcesses(mv.Step.To.Name, mv.Step.To.Version) {
		return nil
	}
	out, err := r.ExecLogged(ctx, n, "cgroups-repair-"+mv.Step.To.String(), "kubelet-compat", "cgroups", "--repair")
	c := report.Check{Name: fmt.Sprintf("%s %s %s %s: kubelet-compat cgroups --repair before the restart", r.Name, n.name, mv, r.Variant()), Passed: err == nil}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	put := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "put back: ") {
			put++
		}
	}
	c.Detail = fmt.Sprintf("%d container(s) put back into their cgroups: %s", put, strings.Join(lines, "; "))
	if err != nil {
		c.Detail = err.Error()
	}
	r.Logf("check %q: passed %t: %s", c.Name, c.Passed, c.Detail)
	r.Record(c)
	return nil
}
