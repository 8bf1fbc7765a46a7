package fleet

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

func TestParseRuns(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "concurrency-1,concurrency-2,drain,naive,fault", want: Runs},
		{in: "fault, drain", want: []string{Drain, Fault}},
		{in: "naive,drain", want: []string{Drain, Naive}},
		{in: "naive", want: []string{Naive}},
		{in: "concurrency-2", want: []string{Concurrency2}},
		{in: "concurrency-3", wantErr: `unknown roll "concurrency-3"`},
		{in: "", wantErr: `unknown roll ""`},
		{in: "drain,drain", wantErr: "drain given twice"},
		{in: "minors", want: []string{Minors}},
		{in: "runtime", want: []string{Runtime}},
		{in: "runtime,concurrency-1", want: []string{Concurrency1, Runtime}},
		{in: "runtime-2.0,runtime", want: []string{Runtime, Runtime20}},
		{in: "minors,concurrency-1", wantErr: "run it alone"},
	} {
		got, err := ParseRuns(tt.in)
		if tt.wantErr != "" {
			assert.ErrorContains(t, err, tt.wantErr, tt.in)
			continue
		}
		assert.NilError(t, err, tt.in)
		assert.DeepEqual(t, got, tt.want)
	}
}

func TestCheck(t *testing.T) {
	chain := []kind.Step{{From: "1.33.13", To: "1.34.12"}, {From: "1.34.12", To: "1.35.8"}, {From: "1.35.8", To: "1.36.5"}, {From: "1.36.5", To: "1.37.2"}}
	for _, tt := range []struct {
		steps   []kind.Step
		runs    []string
		wantErr string
	}{
		{steps: []kind.Step{{From: "1.30.14", To: "1.31.14"}}, runs: Runs},
		{steps: nil, runs: Runs, wantErr: "one step, not 0"},
		{steps: chain[:2], runs: Runs, wantErr: "one step, not 2"},
		{steps: []kind.Step{{From: "1.30.14", To: "1.32.13"}}, runs: Runs, wantErr: "one minor up"},
		{steps: []kind.Step{{From: "1.31.14", To: "1.30.14"}}, runs: Runs, wantErr: "one minor up"},
		{steps: chain, runs: []string{Minors}},
		{steps: chain[:1], runs: []string{Minors}},
		{steps: nil, runs: []string{Minors}, wantErr: "needs a chain"},
		{steps: []kind.Step{chain[0], chain[2]}, runs: []string{Minors}, wantErr: "does not start where"},
		{steps: []kind.Step{chain[0], {From: "1.34.12", To: "1.36.5"}}, runs: []string{Minors}, wantErr: "one minor up"},
	} {
		err := Check(tt.steps, tt.runs)
		if tt.wantErr == "" {
			assert.NilError(t, err)
		} else {
			assert.ErrorContains(t, err, tt.wantErr)
		}
	}
}

// TestMinorsRoll: one cluster of MinorsWorkers workers born at the chain's
// first version; per step the target's images, a baseline, the Plans of
// the step's target and the figures; checks named per step; the Job across
// every step completed once, at the end.
func TestMinorsRoll(t *testing.T) {
	chain := []kind.Step{{From: "1.33.13", To: "1.34.12"}, {From: "1.34.12", To: "1.35.8"}, {From: "1.35.8", To: "1.36.5"}, {From: "1.36.5", To: "1.37.2"}}
	f := newFleetRun(nil, kind.ScenarioOptions{Workers: 7}, nil, Minors, chain)
	assert.Check(t, is.Equal(f.Options.Workers, MinorsWorkers))
	assert.Check(t, is.Equal(f.Name, "kc-e2e-fleet-minors"))
	assert.Check(t, f.Patched)
	var names []string
	for _, a := range f.actions() {
		names = append(names, a.Name)
	}
	all := strings.Join(names, "\n")
	assert.Check(t, is.Contains(names[0], kind.NodeImage("1.33.13")))
	assert.Check(t, is.Equal(strings.Count(all, "apply system-upgrade-controller"), 1))
	// The controller runs from its image: imported before it is applied
	// (the first run of the roll waited 3 minutes for a controller whose
	// image no node had).
	assert.Check(t, strings.Index(all, "import the upgrade Job's image of 1.34.12") < strings.Index(all, "apply system-upgrade-controller"), all)
	for _, st := range chain {
		assert.Check(t, is.Contains(all, st.String()+": import the images of "+st.To))
		assert.Check(t, is.Contains(all, st.String()+": apply the Plans ("+st.To+", concurrency 1; the etcd bridge"))
		assert.Check(t, is.Contains(all, st.String()+": the figures"))
	}
	assert.Check(t, is.Contains(names[len(names)-1], "the Job that ran across every step completes"))
	// The images a step left behind go before the next step's come in
	// (the disk of one machine holds three nodes of two minors, not five).
	assert.Check(t, is.Equal(strings.Count(all, ": remove the images of "), len(chain)-1))
	assert.Check(t, is.Contains(all, "1.34.12 -> 1.35.8: remove the images of 1.33.13 that 1.34.12 no longer lists from every node (not pause)"))
	assert.Check(t, strings.Index(all, "1.34.12 -> 1.35.8: remove the images") < strings.Index(all, "import the images of 1.35.8"))
	assert.Check(t, !strings.Contains(all, "drain") && !strings.Contains(all, "retry"), all)

	f.step = 3
	assert.Check(t, is.Equal(f.cur(), chain[3]))
	assert.Check(t, is.Equal(f.label(), "kc-e2e-fleet-minors minors 1.36.5 -> 1.37.2"))
	assert.Check(t, is.Equal(f.rollName(), "SUC, concurrency 1, minor 4 of 4 (cluster born at 1.33.13)"))
	f.bridgeImage = "registry.k8s.io/etcd:3.6.16-0"
	o := f.planOptions()
	assert.Check(t, is.Equal(o.Version, "1.37.2"))
	assert.Check(t, is.Equal(o.EtcdBridgeImage, f.bridgeImage))
	assert.Check(t, is.DeepEqual(o.KubeadmArgs, []string{"--ignore-preflight-errors=SystemVerification"}), "kubeadm 1.35+ on cgroup v1")
	f.step = 0
	assert.Check(t, is.Len(f.planOptions().KubeadmArgs, 0), "kubeadm 1.34")

	// The one-step rolls keep their one step and their label.
	c1 := newFleetRun(nil, kind.ScenarioOptions{}, nil, Concurrency1, chain)
	assert.Check(t, is.Equal(len(c1.Steps), 1))
	assert.Check(t, is.Equal(c1.Options.Workers, Workers))
	assert.Check(t, is.Equal(c1.label(), "kc-e2e-fleet-c1 concurrency-1"))
}

// TestFleetObjects: the workloads the issue names, the StatefulSet's
// volumes pinned to workers 2 and 3, and the canary only on the fault and
// runtime rolls, with the probe of what it breaks under.
func TestFleetObjects(t *testing.T) {
	workers := []string{"c-worker", "c-worker2", "c-worker3", "c-worker4"}
	for _, tt := range []struct {
		node      string
		canary    canaryKind
		version   string
		wantProbe []string
		wantMount string
	}{
		{version: "1.31.14"},
		{node: "c-worker3", canary: kubeletCanary, version: "1.31.14", wantProbe: canaryProbe(kubeRoot, "1.31.14"), wantMount: kubeRoot},
		{node: "c-worker3", canary: runtimeCanary, version: "1.7.35", wantProbe: runtimeCanaryProbe("/usr/local/runtime", "containerd", "1.7.35"), wantMount: "/usr/local/runtime"},
	} {
		objs, err := fleetObjects(workers, tt.node, tt.canary, tt.version)
		assert.NilError(t, err)
		var pvNodes []string
		var pods []*v1.Pod
		kinds := map[string]int{}
		for _, o := range objs {
			switch x := o.(type) {
			case *v1.PersistentVolume:
				pvNodes = append(pvNodes, x.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values...)
				assert.Equal(t, x.Spec.StorageClassName, fleetStorageClass)
			case *policyv1.PodDisruptionBudget:
				assert.Equal(t, x.Spec.MinAvailable.IntValue(), 3)
				assert.DeepEqual(t, x.Spec.Selector.MatchLabels, kind.AppLabel(kind.DeploymentName))
			case *appsv1.Deployment:
				kinds["deployment/"+x.Name] = int(*x.Spec.Replicas)
			case *appsv1.StatefulSet:
				kinds["statefulset/"+x.Name] = int(*x.Spec.Replicas)
				assert.Equal(t, *x.Spec.VolumeClaimTemplates[0].Spec.StorageClassName, fleetStorageClass)
			case *appsv1.DaemonSet:
				kinds["daemonset/"+x.Name] = 1
			case *batchv1.Job:
				kinds["job/"+x.Name] = 1
				assert.Equal(t, x.Spec.Template.Spec.RestartPolicy, v1.RestartPolicyNever)
			case *v1.Pod:
				pods = append(pods, x)
			}
		}
		assert.DeepEqual(t, pvNodes, []string{"c-worker2", "c-worker3"})
		assert.DeepEqual(t, kinds, map[string]int{"deployment/web": 4, "deployment/solo": 1, "statefulset/db": 2, "daemonset/agent": 1, "job/batch": 1})
		if tt.node == "" {
			assert.Equal(t, len(pods), 0)
			continue
		}
		assert.Equal(t, len(pods), 1)
		assert.Equal(t, pods[0].Spec.NodeName, tt.node)
		assert.DeepEqual(t, pods[0].Spec.Containers[0].ReadinessProbe.Exec.Command, tt.wantProbe)
		assert.Equal(t, pods[0].Spec.Containers[0].VolumeMounts[0].MountPath, tt.wantMount)
		assert.Equal(t, pods[0].Spec.Volumes[0].HostPath.Path, tt.wantMount)
	}
	// Two workers (the minors roll): a volume on each.
	objs, err := fleetObjects(workers[:2], "", noCanary, "1.31.14")
	assert.NilError(t, err)
	var pvNodes []string
	for _, o := range objs {
		if pv, ok := o.(*v1.PersistentVolume); ok {
			pvNodes = append(pvNodes, pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values...)
		}
	}
	assert.DeepEqual(t, pvNodes, []string{"c-worker", "c-worker2"})
	_, err = fleetObjects(workers[:1], "", noCanary, "1.31.14")
	assert.ErrorContains(t, err, "need worker 2")
}

// TestCanaryProbe runs the canary's readiness check against a packages'
// root as kubernetes-select leaves it: Ready unless stage2 serves the
// target, whatever the link's form.
func TestCanaryProbe(t *testing.T) {
	for _, tt := range []struct {
		name      string
		installed []string
		current   string // the link's target, relative to the root ("@" for absolute)
		ready     bool
	}{
		{name: "before the roll: the target is not installed", installed: []string{"1.30.14"}, current: "../1.30.14/stage2", ready: true},
		{name: "installed, not selected", installed: []string{"1.30.14", "1.31.14"}, current: "../1.30.14/stage2", ready: true},
		{name: "selected (relative link)", installed: []string{"1.30.14", "1.31.14"}, current: "../1.31.14/stage2", ready: false},
		{name: "selected (absolute link)", installed: []string{"1.30.14", "1.31.14"}, current: "@1.31.14/stage2", ready: false},
		{name: "rolled back", installed: []string{"1.30.14", "1.31.14"}, current: "@1.30.14/stage2", ready: true},
		{name: "no stage2", installed: []string{"1.30.14"}, ready: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, v := range tt.installed {
				assert.NilError(t, os.MkdirAll(filepath.Join(root, v, "stage2"), 0o755))
			}
			assert.NilError(t, os.MkdirAll(filepath.Join(root, "current"), 0o755))
			if tt.current != "" {
				target := tt.current
				if target[0] == '@' {
					target = filepath.Join(root, target[1:])
				}
				assert.NilError(t, os.Symlink(target, filepath.Join(root, "current", "stage2")))
			}
			checkProbe(t, canaryProbe(root, "1.31.14"), tt.ready)
		})
	}
}

// checkProbe runs a readiness check's command under the system shell and,
// where Debian's busybox-static is installed, under busybox's (the pod's).
func checkProbe(t *testing.T, args []string, ready bool) {
	t.Helper()
	shells := [][]string{{args[0]}}
	if _, err := os.Stat("/bin/busybox"); err == nil {
		shells = append(shells, []string{"/bin/busybox", args[0]})
	}
	for _, sh := range shells {
		cmd := append(append([]string{}, sh...), args[1:]...)
		err := exec.Command(cmd[0], cmd[1:]...).Run()
		assert.Check(t, is.Equal(err == nil, ready), "%v: %v", sh, err)
	}
}

// TestRuntimeCanaryProbe runs the runtime canary's readiness check against
// a runtime root as runtime-select leaves it: Ready unless containerd's
// selection is the roll's version.
func TestRuntimeCanaryProbe(t *testing.T) {
	for _, tt := range []struct {
		name      string
		installed []string
		current   string // the link's target, relative to current/ ("@" for absolute); "": the distribution's
		ready     bool
	}{
		{name: "before staging: nothing installed, the distribution's", ready: true},
		{name: "staged, the distribution's selected", installed: []string{"1.7.35"}, ready: true},
		{name: "selected (relative link)", installed: []string{"1.7.35"}, current: "../containerd/1.7.35", ready: false},
		{name: "selected (absolute link)", installed: []string{"1.7.35"}, current: "@containerd/1.7.35", ready: false},
		{name: "another version selected", installed: []string{"1.7.35", "1.7.36+compat.1"}, current: "../containerd/1.7.36+compat.1", ready: true},
		{name: "rolled back to the distribution's", installed: []string{"1.7.35"}, ready: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, v := range tt.installed {
				assert.NilError(t, os.MkdirAll(filepath.Join(root, "containerd", v, "bin"), 0o755))
			}
			assert.NilError(t, os.MkdirAll(filepath.Join(root, "current"), 0o755))
			if tt.current != "" {
				target := tt.current
				if target[0] == '@' {
					target = filepath.Join(root, target[1:])
				}
				assert.NilError(t, os.Symlink(target, filepath.Join(root, "current", "containerd")))
			}
			checkProbe(t, runtimeCanaryProbe(root, "containerd", "1.7.35"), tt.ready)
		})
	}
}

// TestRuntimeGateEvidence reads the runtime step's gate out of Job logs as
// kc-roll writes them: the gate's output indented under its own lines.
func TestRuntimeGateEvidence(t *testing.T) {
	header := "kc-roll: gate: every pod of the picture synced by the kubelet, no container of them restarted or lost (kubelet-compat gate):\n" +
		"  gate runtime step on node w1: passed\n" +
		"  picture /var/lib/kubelet-compat/roll/picture-runtime.json taken 2026-12-07T10:00:00Z, kubelet pid 10 started 2026-12-07T09:00:00Z\n" +
		"  running kubelet pid 10 started 2026-12-07T09:00:00Z; syncs count from 2026-12-07T10:00:05Z; judged at 2026-12-07T10:01:00Z\n"
	byRecord := "  sync evidence: record: the sync record of the running kubelet v1.30.14 pid 10 started 2026-12-07T09:00:00Z, written 2026-12-07T10:00:59Z\n"
	byWait := "  sync evidence: fixed-wait: no sync record\n"
	kept := func(pod, evidence string) string {
		return "  kc-e2e/" + pod + " uid u-" + pod + ": kept, synced\n    container app 1234 runs on\n    " + evidence + "\n"
	}
	synced := "synced at 2026-12-07T10:00:40Z (3 sync(s) by the running kubelet)"
	assumed := "assumed synced: the fixed wait of 30s since 2026-12-07T10:00:05Z is over (no sync record of the running kubelet)"
	after := "kc-roll: node w1: containerd 1.7.35 runs under kubelet 1.30.14 and its gate passed: now the kubelet's step\n" +
		"kc-roll: gate: every pod of the picture synced by the kubelet, no container of them restarted or lost (kubelet-compat gate):\n" +
		"  gate kubelet step on node w1: passed\n" + byRecord + kept("web-1", synced)
	for _, tt := range []struct {
		name string
		log  string
		want gateEvidence
		ok   bool
	}{
		{name: "every pod synced by the record", log: header + byRecord + kept("web-1", synced) + kept("db-0", synced) + "  kc-e2e/new-1 uid u-new: new\n" + after,
			want: gateEvidence{found: true, byRecord: true, pods: 2, synced: 2}, ok: true},
		{name: "on the fixed wait", log: header + byWait + kept("web-1", assumed) + after,
			want: gateEvidence{found: true, pods: 1, synced: 1, assumed: 1}},
		{name: "a pod kept but not synced (gone-only is not passed)", log: header + byRecord + "  kc-e2e/web-1 uid u: kept, waiting for a sync\n" + after,
			want: gateEvidence{found: true, byRecord: true, pods: 1}},
		{name: "the kubelet step's gate only", log: after},
		{name: "a failed runtime gate", log: strings.Replace(header, ": passed", ": lost", 1) + byRecord + kept("web-1", synced)},
		{name: "the gate's output ends the log", log: header + byRecord + kept("web-1", synced),
			want: gateEvidence{found: true, byRecord: true, pods: 1, synced: 1}, ok: true},
	} {
		got := runtimeGateEvidence(tt.log)
		assert.Check(t, is.DeepEqual(got, tt.want, gocmp.AllowUnexported(gateEvidence{})), tt.name)
		assert.Check(t, is.Equal(got.ok(), tt.ok), tt.name)
	}
}

// TestParseRuntimeRollback: the runtime rollback kc-roll logs (the lines
// of deploy/system-upgrade/roll's runtime rollback, 2.0 -> 1.7), and what
// fails the check.
func TestParseRuntimeRollback(t *testing.T) {
	const p = "kubelet-compat-upgrade: "
	gate := p + "rolling the runtime back to containerd 1.7.36+compat.1 (the runtime step's health gate failed)\n"
	config := p + "rollback: /etc/containerd/config.toml put back from /etc/containerd/config.toml.kc-1.7.36+compat.1\n"
	looked := p + "rollback: looked for tasks on shims of the task API v3 in /run/containerd/io.containerd.runtime.v2.task (containerd 1.7.36+compat.1 could not reach them): none of 27 task(s)\n"
	sel := p + "rollback: runtime-select --restart-containerd containerd 1.7.36+compat.1\n"
	done := p + "runtime: containerd 1.7.36+compat.1 answers the CRI (crictl version: v1.7.36+compat.1, 3s)\n" +
		p + "rolled back: containerd 1.7.36+compat.1 is selected and answers the CRI; the kubelet was not touched (stage2 and stage1 serve 1.30.14 and 1.30.14)\n"
	refused := p + "the rollback failed: containerd 1.7.36+compat.1 cannot reach the 1 task(s) containerd 2.0.14+compat.1 started (their shims serve the task API v3 only; containerd/containerd#11720: their containers would be orphaned): k8s.io/abc; containerd 2.0.14+compat.1 stays selected and its pods run on (the next Job tries again)\n"
	const want = "1.7.36+compat.1"
	for _, tt := range []struct {
		name, log string
		ok        bool
		tasks     int
	}{
		{name: "looked, none, put back, selected", log: gate + looked + config + sel + done, ok: true, tasks: 27},
		{name: "put back before the look (kc-roll before the refusal came first, as on kind 2026-12-08)", log: gate + config + looked + sel + done, ok: true, tasks: 27},
		{name: "no look logged (an older kc-roll)", log: gate + config + sel + done},
		{name: "looked after selecting", log: gate + config + sel + looked + done, tasks: 27},
		{name: "looked among no task (the wrong directory)", log: gate + config + strings.Replace(looked, "none of 27", "none of 0", 1) + sel + done},
		{name: "the configuration not put back", log: gate + looked + sel + done, tasks: 27},
		{name: "put back from another backup", log: gate + strings.Replace(config, "kc-1.7.36+compat.1", "kc-system", 1) + looked + sel + done, tasks: 27},
		{name: "refused: a task on a v3 shim", log: gate + config + refused},
		{name: "selected another", log: gate + config + looked + strings.Replace(sel, want, "system", 1) + done, tasks: 27},
		{name: "never answered", log: gate + config + looked + sel, tasks: 27},
	} {
		got := parseRuntimeRollback(tt.log)
		assert.Check(t, is.Equal(got.ok(want), tt.ok), "%s: %s", tt.name, got)
		assert.Check(t, is.Equal(got.tasks, tt.tasks), tt.name)
	}
	got := parseRuntimeRollback(gate + config + refused)
	assert.Check(t, is.Contains(got.String(), "cannot reach the 1 task(s)"))
	got = parseRuntimeRollback(gate + config + looked + sel + done)
	assert.Check(t, is.Equal(got.String(), "looked for tasks on v3 shims: none of 27; configuration put back from /etc/containerd/config.toml.kc-1.7.36+compat.1; runtime-select containerd 1.7.36+compat.1; rolled back to 1.7.36+compat.1"))
}

// TestParseTaskShims: the node's task bundles (taskShimsScript), those on
// a v3 shim by their bootstrap.json.
func TestParseTaskShims(t *testing.T) {
	got, err := parseTaskShims("")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got.tasks, 0))
	out := "k8s.io/a -\n" +
		`k8s.io/b {"version":2,"address":"unix:///run/containerd/s/b","protocol":"ttrpc"}` + "\n" +
		`k8s.io/c {"version":3,"address":"unix:///run/containerd/s/c","protocol":"ttrpc"}` + "\n"
	got, err = parseTaskShims(out)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got.tasks, 3))
	assert.Check(t, is.DeepEqual(got.v3, []string{"k8s.io/c"}))
	_, err = parseTaskShims("k8s.io/d {not json\n")
	assert.Check(t, is.ErrorContains(err, "k8s.io/d/bootstrap.json"))
	_, err = parseTaskShims("garbage\n")
	assert.Check(t, is.ErrorContains(err, "task bundles"))
}

var t0 = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func sample(s int, serving ...string) readiness.Sample {
	smp := readiness.Sample{T: at(s), Serving: map[string]bool{}}
	for _, p := range serving {
		smp.Serving[p] = true
	}
	return smp
}

// TestReadinessFigures: the single replica's time without a ready
// endpoint and the endpoint removals, within a window.
func TestReadinessFigures(t *testing.T) {
	d := rollData{app: map[string]string{"solo-a": SoloName, "solo-b": SoloName, "web-1": kind.DeploymentName, "agent-x": kind.DaemonSetName}}
	// solo-a serves until 10, nothing serves 10..16, solo-b from 16; web-1
	// drops at 20 and is back at 22; agent-x is behind no Service of ours.
	samples := []readiness.Sample{
		sample(0, "solo-a", "web-1", "agent-x"),
		sample(10, "web-1", "agent-x"),
		sample(16, "solo-b", "web-1"),
		sample(20, "solo-b"),
		sample(22, "solo-b", "web-1"),
		sample(30, "solo-b", "web-1"),
	}
	for _, tt := range []struct {
		name        string
		from, to    int
		unavailable float64
		removed     []string
	}{
		{name: "the whole roll", from: 0, to: 30, unavailable: 6, removed: []string{"solo-a", "web-1"}},
		{name: "a window around the move", from: 8, to: 12, unavailable: 2, removed: []string{"solo-a"}},
		{name: "a window after it", from: 17, to: 30, unavailable: 0, removed: []string{"web-1"}},
		{name: "a window before it", from: 0, to: 9, unavailable: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, unavailableSeconds(samples, d.member(SoloName), at(tt.from), at(tt.to)), tt.unavailable)
			assert.DeepEqual(t, endpointRemovals(samples, d.member(fleetServices...), at(tt.from), at(tt.to)), tt.removed)
		})
	}
}

func pod(name, uid, node, app string, deleting bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Labels: map[string]string{"app": app}}, Spec: v1.PodSpec{NodeName: node}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

// TestPodLedger: a pod evicted twice (moved onto a node drained later) is
// counted on both nodes; its replacements are counted where they appeared.
func TestPodLedger(t *testing.T) {
	clock := t0
	l := &podLedger{pods: map[string]*podRecord{}, now: func() time.Time { return clock }}
	l.observe(pod("web-1", "u1", "w1", kind.DeploymentName, false), false)
	l.observe(pod("db-0", "u2", "w2", kind.StatefulSetName, false), false)
	l.synced = true
	clock = at(10) // w1 drained
	l.observe(pod("web-1", "u1", "w1", kind.DeploymentName, true), false)
	clock = at(11)
	l.observe(pod("web-2", "u3", "", kind.DeploymentName, false), false)
	l.observe(pod("web-2", "u3", "w2", kind.DeploymentName, false), false)
	l.observe(pod("web-1", "u1", "w1", kind.DeploymentName, true), true)
	clock = at(30) // w2 drained: web-2 moves again, db-0 is recreated under its name
	l.observe(pod("web-2", "u3", "w2", kind.DeploymentName, true), false)
	l.observe(cache.DeletedFinalStateUnknown{Key: "kc-e2e/db-0", Obj: pod("db-0", "u2", "w2", kind.StatefulSetName, false)}, false)
	clock = at(31)
	l.observe(pod("web-3", "u4", "w1", kind.DeploymentName, false), false)
	l.observe(pod("db-0", "u5", "w2", kind.StatefulSetName, false), false)
	recs := l.records()

	assert.Equal(t, deletedFrom(recs, "w1", at(0), at(40)), 1)
	assert.Equal(t, deletedFrom(recs, "w2", at(0), at(40)), 2)
	assert.Equal(t, deletedFrom(recs, "w2", at(0), at(20)), 0)
	assert.Equal(t, deletedFrom(recs, "", at(0), at(40)), 3)
	assert.Equal(t, createdIn(recs, at(0), at(20)), 1)
	assert.Equal(t, createdIn(recs, at(25), at(40)), 2)
	assert.Equal(t, podsOfApp(recs, kind.StatefulSetName), 2)
	assert.DeepEqual(t, deletedUIDs(recs), map[string]bool{"u1": true, "u2": true, "u3": true})
}

// TestNodeFigures: an evicted pod is counted as evicted, not as restarted;
// a DaemonSet pod restarted in place counts as a restart; kube-system is
// apart; a pod recreated by its StatefulSet changes its UID.
func TestNodeFigures(t *testing.T) {
	sb := func(pod, id, uid string) snapshot.Sandbox {
		return snapshot.Sandbox{Pod: pod, ID: id, UID: uid, Ready: true}
	}
	ctr := func(pod, name, id, sandbox string) snapshot.Container {
		return snapshot.Container{Pod: pod, Name: name, ID: id, SandboxID: sandbox, State: "RUNNING"}
	}
	before := &snapshot.Snapshot{
		Sandboxes: []snapshot.Sandbox{sb("kc-e2e/db-0", "s1", "u-db"), sb("kc-e2e/agent-x", "s2", "u-agent"), sb("kube-system/kube-proxy-1", "s3", "u-kp")},
		Containers: []snapshot.Container{ctr("kc-e2e/db-0", "db", "c1", "s1"), ctr("kc-e2e/agent-x", "agent", "c2", "s2"),
			ctr("kube-system/kube-proxy-1", "kube-proxy", "c3", "s3")},
	}
	after := &snapshot.Snapshot{
		Sandboxes: []snapshot.Sandbox{sb("kc-e2e/db-0", "s4", "u-db2"), sb("kc-e2e/agent-x", "s2", "u-agent"), sb("kube-system/kube-proxy-1", "s3", "u-kp")},
		Containers: []snapshot.Container{ctr("kc-e2e/db-0", "db", "c4", "s4"), ctr("kc-e2e/agent-x", "agent", "c5", "s2"),
			ctr("kube-system/kube-proxy-1", "kube-proxy", "c6", "s3")},
	}
	d := rollData{
		before: map[string]*snapshot.Snapshot{"w1": before}, after: map[string]*snapshot.Snapshot{"w1": after},
		apiBefore: map[string]apiPod{"db-0": {UID: "u-db", Node: "w1"}, "agent-x": {UID: "u-agent", Node: "w1"}, "web-1": {UID: "u-web", Node: "w2"}},
		apiAfter:  map[string]apiPod{"db-0": {UID: "u-db2", Node: "w1"}, "agent-x": {UID: "u-agent", Node: "w1"}, "web-1": {UID: "u-web", Node: "w2"}},
		records: []podRecord{{Name: "db-0", UID: "u-db", Node: "w1", Deleted: at(5)}, {Name: "db-0", UID: "u-db2", Node: "w1", Created: true, Seen: at(6)},
			{Name: "agent-x", UID: "u-agent", Node: "w1"}},
		samples:   []readiness.Sample{sample(0, "db-0"), sample(5), sample(9, "db-0"), sample(20, "db-0")},
		app:       map[string]string{"db-0": kind.StatefulSetName},
		windows:   []nodeWindow{{Node: "w1", Start: at(1), End: at(12), Outcome: outcomeUpgraded}, {Node: "w2", Outcome: outcomeUntouched}},
		rollStart: at(0), rollEnd: at(20),
	}
	nodes, total := d.figures()
	assert.Equal(t, len(nodes), 2)
	w1 := nodes[0]
	assert.Check(t, is.Equal(w1.Restarts, 1), "the DaemonSet pod's container")
	assert.Check(t, is.Equal(w1.Recreated, 0))
	assert.Check(t, is.Equal(w1.SystemRestarts, 1))
	assert.Check(t, is.Equal(w1.Evicted, 1))
	assert.Check(t, is.Equal(w1.Rescheduled, 1))
	assert.Check(t, is.Equal(w1.UIDsChanged, 1))
	assert.Check(t, is.Equal(w1.EndpointRemovals, 1))
	assert.Check(t, is.Equal(w1.Seconds, 11.0))
	assert.Check(t, is.Equal(w1.Detail, "restarted: kc-e2e/agent-x"))
	assert.Check(t, is.Equal(nodes[1].Outcome, outcomeUntouched))
	assert.Check(t, is.Equal(nodes[1].Seconds, 0.0))
	assert.Check(t, is.Equal(total.Restarts, 1))
	assert.Check(t, is.Equal(total.Evicted, 1))
	assert.Check(t, is.Equal(total.UIDsChanged, 1))
	assert.Check(t, is.Equal(total.Seconds, 20.0))
}

// TestJobWindows: the order is kc-roll's start; a node without a Job is
// untouched, a failed Job's node rolled back; the overlap is the
// concurrency seen.
func TestJobWindows(t *testing.T) {
	nodes := testNodes("cp", "w1", "w2", "w3", "w4")
	jobs := map[string]*jobRecord{
		"cp": {Node: "cp", Start: at(0), End: at(60), Done: true},
		"w2": {Node: "w2", Start: at(61), End: at(120), Done: true},
		"w1": {Node: "w1", Start: at(62), End: at(125), Done: true},
		"w3": {Node: "w3", Start: at(126), End: at(300), Done: true, Failed: true},
	}
	windows, order := jobWindows(nodes, jobs)
	assert.DeepEqual(t, order, []string{"cp", "w2", "w1", "w3"})
	var outcomes []string
	for _, w := range windows {
		outcomes = append(outcomes, w.Outcome)
	}
	assert.DeepEqual(t, outcomes, []string{outcomeUpgraded, outcomeUpgraded, outcomeUpgraded, outcomeRolledBack, outcomeUntouched})
	assert.Equal(t, maxOverlap(windows), 2)
	assert.Equal(t, maxOverlap(windows[3:]), 1)
	assert.Equal(t, maxOverlap(nil), 0)
	assert.Equal(t, lastEnd(windows), at(300))
	assert.Check(t, lastEnd(windows[4:]).IsZero())
}

// TestJobWindowsOverReruns: a node whose Job SUC created again (the
// killed one, a retry) has one window from its first Job's start to its
// last Job's end, and its outcome is its last Job's.
func TestJobWindowsOverReruns(t *testing.T) {
	nodes := testNodes("cp", "w1")
	killed := &jobRecord{Node: "cp", Run: 1, Start: at(0), End: at(40), Done: true, Failed: true}
	failed := &jobRecord{Node: "w1", Run: 1, Start: at(100), End: at(200), Done: true, Failed: true}
	refused := &jobRecord{Node: "w1", Run: 2, Earlier: []*jobRecord{failed}, Start: at(230), End: at(231), Done: true, Failed: true}
	jobs := map[string]*jobRecord{
		"cp": {Node: "cp", Run: 2, Earlier: []*jobRecord{killed}, Start: at(70), End: at(90), Done: true},
		"w1": {Node: "w1", Run: 3, Earlier: []*jobRecord{failed, refused}, Start: at(300), End: at(360), Done: true},
	}
	windows, order := jobWindows(nodes, jobs)
	assert.DeepEqual(t, order, []string{"cp", "w1"})
	assert.DeepEqual(t, windows, []nodeWindow{
		{Node: "cp", Start: at(0), End: at(90), Outcome: outcomeUpgraded},
		{Node: "w1", Start: at(100), End: at(360), Outcome: outcomeUpgraded},
	})
	assert.Check(t, jobs["w1"].first() == failed)
	assert.Check(t, failed.first() == failed)
	// A Job not begun yet after earlier ones: the first's start.
	assert.Equal(t, (&jobRecord{Earlier: []*jobRecord{{}, failed}}).firstStart(), at(100))
}

// TestNextJob: SUC creates a failed Job again under the same name: the
// record follows the Job's UID.
func TestNextJob(t *testing.T) {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "apply-x-on-cp", UID: "u1", Labels: map[string]string{sucLabelPlan: "kubelet-compat-control-plane"}}}
	first, created := nextJob(nil, j, "cp")
	assert.Check(t, created)
	assert.Check(t, is.Equal(first.Run, 1))
	assert.Check(t, is.Equal(first.Plan, "kubelet-compat-control-plane"))
	same, created := nextJob(first, j, "cp")
	assert.Check(t, !created)
	assert.Check(t, same == first)
	// SUC replaces the paused Job it has just created, before its pod:
	// the same run.
	again := j.DeepCopy()
	again.UID = "u2"
	replaced, created := nextJob(first, again, "cp")
	assert.Check(t, created)
	assert.Check(t, is.Equal(replaced.Run, 1))
	assert.Check(t, replaced.first() == replaced)
	// A Job that had a pod and failed, created again: the next run.
	replaced.HadPod, replaced.Done, replaced.Failed = true, true, true
	third := j.DeepCopy()
	third.UID = "u3"
	second, created := nextJob(replaced, third, "cp")
	assert.Check(t, created)
	assert.Check(t, is.Equal(second.Run, 2))
	assert.Check(t, is.Equal(second.Name, "apply-x-on-cp"), "the same name")
	assert.Check(t, second.first() == replaced)
}

// TestSwappedTo: the kill waits for the roll's state "swapping" to the
// target and the kubelet's process on the target's binary.
func TestSwappedTo(t *testing.T) {
	state := "target=1.31.14\nprevious=1.30.14\nphase=swapping\nswapped_at=2026-12-03T18:00:00Z\n"
	newKubelet := "kubelet-exe=/usr/local/kubernetes/1.31.14/stage2/usr/bin/kubelet\n"
	oldKubelet := "kubelet-exe=/usr/local/kubernetes/1.30.14/stage2/usr/bin/kubelet\n"
	for _, tc := range []struct {
		name, out string
		want      bool
	}{
		{"swapped: the new kubelet runs", state + newKubelet, true},
		{"the swap not yet: the old kubelet runs", state + oldKubelet, false},
		{"the kubelet restarting (no process)", state + "kubelet-exe=\n", false},
		{"the gate's verdict written", strings.Replace(state, "phase=swapping", "phase=passed", 1) + newKubelet, false},
		{"before the swap", strings.Replace(state, "phase=swapping", "phase=begun", 1) + oldKubelet, false},
		{"another target", strings.Replace(state, "target=1.31.14", "target=1.31.15", 1) + newKubelet, false},
		{"no roll", newKubelet, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Check(t, is.Equal(swappedTo(tc.out, "1.31.14"), tc.want))
		})
	}
}

func TestIsKubelet(t *testing.T) {
	for _, tt := range []struct {
		reported, version string
		patched, want     bool
	}{
		{"v1.31.14+compat.1", "1.31.14", true, true},
		{"v1.31.14", "1.31.14", false, true},
		{"v1.31.14", "1.31.14", true, false},
		{"v1.30.14+compat.1", "1.31.14", true, false},
		{"v1.31.140+compat.1", "1.31.14", true, false},
	} {
		assert.Equal(t, isKubelet(tt.reported, tt.version, tt.patched), tt.want, tt.reported)
	}
}

func TestStageVersion(t *testing.T) {
	status := "stage1: 1.31.14 (symlink)\nstage2: 1.30.14 (symlink)\n"
	assert.Equal(t, stageVersion(status, "stage1"), "1.31.14")
	assert.Equal(t, stageVersion(status, "stage2"), "1.30.14")
	assert.Equal(t, stageVersion("", "stage2"), "")
}

// TestFleetPlans: each roll's Plans, as kubectl applies them: the target,
// the roll's concurrency for the workers (the control plane: 1), the
// e2e's gate timeout, no cordon.
func TestFleetPlans(t *testing.T) {
	for _, tt := range []struct {
		roll        string
		concurrency string
		// the Plans' names and the upgrade container's mode
		cp, workers, mode string
	}{
		{Concurrency1, "concurrency: 1", systemupgrade.ControlPlanePlan, systemupgrade.WorkersPlan, "upgrade"},
		{Concurrency2, "concurrency: 2", systemupgrade.ControlPlanePlan, systemupgrade.WorkersPlan, "upgrade"},
		{Fault, "concurrency: 1", systemupgrade.ControlPlanePlan, systemupgrade.WorkersPlan, "upgrade"},
		{Naive, "concurrency: 1", systemupgrade.NaiveControlPlanePlan, systemupgrade.NaiveWorkersPlan, "naive"},
	} {
		f := newFleetRun(nil, kind.ScenarioOptions{}, nil, tt.roll, []kind.Step{{From: "1.30.14", To: "1.31.14"}})
		o := f.planOptions()
		assert.Check(t, is.Equal(o.GateTimeout, GateTimeout))
		assert.Check(t, !o.Cordon)
		plans, err := systemupgrade.Plans(o)
		assert.NilError(t, err)
		var objs []interface{}
		for _, p := range plans {
			objs = append(objs, p)
		}
		stream, err := systemupgrade.YAMLStream(objs)
		assert.NilError(t, err)
		docs := strings.Split(string(stream), "---\n")[1:]
		assert.Equal(t, len(docs), 2)
		assert.Check(t, is.Contains(docs[0], "name: "+tt.cp))
		assert.Check(t, is.Contains(docs[0], "concurrency: 1"))
		assert.Check(t, is.Contains(docs[1], "name: "+tt.workers))
		assert.Check(t, is.Contains(docs[1], tt.concurrency), tt.roll)
		assert.Check(t, is.Contains(docs[1], "version: 1.31.14"))
		assert.Check(t, is.Contains(docs[1], "    - "+tt.mode+"\n"), tt.roll)
		assert.Check(t, is.Equal(strings.Contains(docs[1], `value: "120"`), !f.naive), "the gate's timeout: %s", tt.roll)
		assert.Check(t, !strings.Contains(docs[0]+docs[1], "cordon: true"), tt.roll)
	}
}

// TestSUCImages: both images in one layout, the upgrade image named as SUC
// names it (the Plan's image, tagged with its version), with the target's
// packages; a target without packages is refused.
func TestSUCImages(t *testing.T) {
	if _, err := os.Stat(hostdeps.Busybox.Name); err != nil {
		t.Skip("needs Debian's busybox-static")
	}
	out := t.TempDir()
	write := func(path string) {
		assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		assert.NilError(t, os.WriteFile(path, []byte(filepath.Base(path)), 0o755))
	}
	controller, roll := filepath.Join(out, "system-upgrade-controller"), filepath.Join(out, "kc-roll")
	write(controller)
	write(roll)
	write(filepath.Join(out, "1.31.14", "kubectl"))
	for _, p := range []string{"kubernetes-1.31.14-node_1.31.14-1_amd64.deb", "kubernetes-1.31.14-kubeadm_1.31.14-1_amd64.deb",
		"kubernetes-1.31.14-client_1.31.14-1_amd64.deb", "kubernetes-unversioned_1.0.0-1_all.deb", "kubernetes-1.30.14-node_1.30.14-1_amd64.deb"} {
		write(filepath.Join(nodeimage.PackageDir(out, "patched"), p))
	}
	layout, err := sucImages(controller, roll, "1.31.14", out, false)
	assert.NilError(t, err)
	for _, want := range []string{systemupgrade.ControllerImageRef, "kubelet-compat.local/system-upgrade/upgrade:1.31.14",
		"packages/kubernetes-1.31.14-kubeadm_1.31.14-1_amd64.deb", "packages/kubernetes-unversioned_1.0.0-1_all.deb"} {
		assert.Check(t, bytes.Contains(layout, []byte(want)), want)
	}
	assert.Check(t, !bytes.Contains(layout, []byte("packages/kubernetes-1.30.14-node")), "another version's package")
	assert.Check(t, !bytes.Contains(layout, []byte("released-node")), "the released packages in our roll's image")

	// The naive roll's image: the packages as released (the drain roll's).
	_, err = sucImages(controller, roll, "1.31.14", out, true)
	assert.ErrorContains(t, err, "no package of Kubernetes 1.31.14 in "+nodeimage.PackageDir(out, "unpatched"))
	write(filepath.Join(nodeimage.PackageDir(out, "unpatched"), "kubernetes-1.31.14-node_1.31.14-1_amd64.deb"))
	assert.NilError(t, os.WriteFile(filepath.Join(nodeimage.PackageDir(out, "unpatched"), "kubernetes-1.31.14-node_1.31.14-1_amd64.deb"), []byte("released-node"), 0o644))
	naive, err := sucImages(controller, roll, "1.31.14", out, true)
	assert.NilError(t, err)
	for _, want := range []string{systemupgrade.ControllerImageRef, "kubelet-compat.local/system-upgrade/naive:1.31.14", "released-node"} {
		assert.Check(t, bytes.Contains(naive, []byte(want)), want)
	}
	assert.Check(t, !bytes.Contains(naive, []byte("packages/kubernetes-1.31.14-kubeadm")), "a patched package in the naive image")

	write(filepath.Join(out, "1.32.13", "kubectl"))
	_, err = sucImages(controller, roll, "1.32.13", out, false)
	assert.ErrorContains(t, err, "no package of Kubernetes 1.32.13")
}

func TestRequestTotal(t *testing.T) {
	for _, tt := range []struct {
		name    string
		metrics string
		total   float64
		ok      bool
	}{
		{"every series summed", `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",verb="LIST",version="v1"} 12
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",verb="POST",version="v1"} 3.5e+01
apiserver_request_duration_seconds_count{verb="LIST"} 999
apiserver_request_total_other 5
`, 47, true},
		{"no such counter", "process_cpu_seconds_total 3\n", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			total, ok := requestTotal([]byte(tt.metrics))
			assert.Equal(t, ok, tt.ok)
			assert.Equal(t, total, tt.total)
		})
	}
}

func TestRequestsIn(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 12, 2, 0, 0, s, 0, time.UTC) }
	samples := []apiSample{{at(0), 100}, {at(5), 150}, {at(10), 40}, {at(15), 90}, {at(20), 1000}}
	for _, tt := range []struct {
		name     string
		from, to time.Time
		want     float64
	}{
		{"steady", at(0), at(5), 50},
		{"across a restart: the lower sample counts from zero", at(0), at(15), 50 + 40 + 50},
		{"one sample: nothing to compare", at(5), at(7), 0},
		{"outside the samples", at(30), at(40), 0},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, requestsIn(samples, tt.from, tt.to), tt.want) })
	}
}

// TestFleetRolls: each roll's cluster, variant and actions; the naive
// roll is SUC's (the controller, the Plans, its own image) with the
// released kubelet, no drain, and is reported as an anchor.
func TestFleetRolls(t *testing.T) {
	st := kind.Step{From: "1.30.14", To: "1.31.14"}
	names := func(f *fleetRun) string {
		var out []string
		for _, a := range f.actions() {
			out = append(out, a.Name)
		}
		return strings.Join(out, "\n")
	}
	for _, tt := range []struct {
		roll, cluster, variant, name string
		concurrency                  int64
		// want and wantNot are in, and not in, the actions' names.
		want, wantNot []string
	}{
		{roll: Concurrency1, cluster: "kc-e2e-fleet-c1", variant: "patched", name: "SUC, concurrency 1", concurrency: 1,
			want: []string{"apply system-upgrade-controller", "apply the Plans (1.31.14, concurrency 1)"}, wantNot: []string{"drain", "naive", "the faults", "killed", "retry"}},
		{roll: Concurrency2, cluster: "kc-e2e-fleet-c2", variant: "patched", name: "SUC, concurrency 2", concurrency: 2,
			want: []string{"apply the Plans (1.31.14, concurrency 2)"}},
		{roll: Drain, cluster: "kc-e2e-drain", variant: "unpatched", name: "drain (cordon, kubectl drain, swap, uncordon)", concurrency: 1,
			want: []string{"the drain roll 1.30.14 -> 1.31.14"}, wantNot: []string{"system-upgrade-controller", "naive"}},
		{roll: Naive, cluster: "kc-e2e-naive", variant: "unpatched", name: "naive (SUC, concurrency 1, released kubelets, no drain)", concurrency: 1,
			want: []string{"import system-upgrade-controller's and the upgrade Job's images", "apply system-upgrade-controller",
				"the naive roll 1.30.14 -> 1.31.14: apply the Plans (kc-roll naive, the packages as released, concurrency 1; no drain, no cordon, no record, no gate)",
				"the figures, per node and in total"},
			wantNot: []string{"kubectl drain", "the fault"}},
		{roll: Fault, cluster: "kc-e2e-fleet-fault", variant: "patched", name: "SUC, concurrency 1, gate fails on worker 3", concurrency: 1,
			want: []string{"Jobs kept 30 s after they end", "the control plane's Job killed right after its swap, the gate failing on worker 3",
				"worker 3 rolled back with its configuration, re-runs refused; the roll stopped there",
				"the operator's retry: the canary deleted, worker 3's roll state and marker removed",
				"the retry: worker 3 upgraded through its gate"}},
		{roll: Runtime, cluster: "kc-e2e-fleet-rt", variant: "patched", name: "SUC, concurrency 1, containerd 1.7.36+compat.1 first (KC_RUNTIME), runtime gate fails on worker 3", concurrency: 1,
			want: []string{"stage the runtime's .debs (containerd 1.7.36+compat.1, runc) on every node; Debian's containerd 1.6.20 runs",
				"apply the Plans (1.31.14, concurrency 1, KC_RUNTIME containerd@1.7.36+compat.1: each node's Job moves containerd first) and follow the roll: the runtime step's gate failing on worker 3",
				"the fault: worker 3's containerd rolled back, its kubelet untouched, re-runs refused; the roll stopped there",
				"the operator's retry: the canary deleted, worker 3's roll state and marker removed",
				"every node runs containerd 1.7.36+compat.1, each runtime gate passed on the kubelet's syncs of every pod",
				"the retry: worker 3 upgraded through its gate"},
			wantNot: []string{"drain", "naive", "the faults", "killed"}},
		{roll: Runtime20, cluster: "kc-e2e-fleet-rt2", variant: "patched", name: "SUC, concurrency 1, containerd 1.7.36+compat.1 -> 2.0.14+compat.1 first (KC_RUNTIME), runtime gate fails on worker 3", concurrency: 1,
			want: []string{"stage the runtime's .debs (containerd 1.7.36+compat.1, runc) on every node",
				"every node's containerd moved from Debian's 1.6.20 to 1.7.36+compat.1 before the workloads",
				"stage the runtime's .debs (containerd 2.0.14+compat.1, runc) on every node; containerd 1.7.36+compat.1 runs",
				"apply the Plans (1.31.14, concurrency 1, KC_RUNTIME containerd@2.0.14+compat.1: each node's Job moves containerd first)",
				"the fault: worker 3's containerd rolled back to 1.7.36+compat.1 (no task on a v3 shim, its configuration put back), its kubelet untouched",
				"every node runs containerd 2.0.14+compat.1, each runtime gate passed on the kubelet's syncs of every pod",
				"the retry: worker 3 upgraded through its gate"},
			wantNot: []string{"drain", "naive", "the faults", "killed", "Debian's containerd 1.6.20 runs"}},
	} {
		t.Run(tt.roll, func(t *testing.T) {
			f := newFleetRun(nil, kind.ScenarioOptions{}, nil, tt.roll, []kind.Step{st})
			assert.Check(t, is.Equal(f.Name, tt.cluster))
			assert.Check(t, is.Equal(f.Variant(), tt.variant))
			assert.Check(t, is.Equal(f.rollName(), tt.name))
			assert.Check(t, is.Equal(f.concurrency, tt.concurrency))
			got := names(f)
			for _, w := range tt.want {
				assert.Check(t, is.Contains(got, w))
			}
			for _, w := range tt.wantNot {
				assert.Check(t, !strings.Contains(got, w), "%q in:\n%s", w, got)
			}
		})
	}
	// Every roll on a cluster of its own.
	seen := map[string]bool{}
	for _, r := range Runs {
		assert.Check(t, !seen[fleetCluster(r)], "%s shares its cluster", r)
		seen[fleetCluster(r)] = true
	}
}

// TestFleetNeeds: what the rolls need built; the naive roll needs the
// released packages and kubectl, not the patched packages.
func TestFleetNeeds(t *testing.T) {
	st := kind.Step{From: "1.30.14", To: "1.31.14"}
	for _, tt := range []struct {
		rolls []string
		want  buildNeeds
	}{
		{rolls: Runs, want: buildNeeds{patched: true, kubectl: true, unpatched: true}},
		{rolls: []string{Naive}, want: buildNeeds{kubectl: true, unpatched: true}},
		{rolls: []string{Drain}, want: buildNeeds{unpatched: true}},
		{rolls: []string{Concurrency1, Fault}, want: buildNeeds{patched: true, kubectl: true}},
		{rolls: []string{Runtime}, want: buildNeeds{patched: true, kubectl: true, runtimes: []plan.Runtime{FleetRuntime}}},
		{rolls: []string{Runtime20}, want: buildNeeds{patched: true, kubectl: true, runtimes: []plan.Runtime{FleetRuntime, FleetRuntime20}}},
		{rolls: []string{Runtime, Runtime20}, want: buildNeeds{patched: true, kubectl: true, runtimes: []plan.Runtime{FleetRuntime, FleetRuntime20}}},
	} {
		var runs []*fleetRun
		for _, r := range tt.rolls {
			runs = append(runs, newFleetRun(nil, kind.ScenarioOptions{}, nil, r, []kind.Step{st}))
		}
		assert.Check(t, is.DeepEqual(fleetNeeds(runs), tt.want, gocmp.AllowUnexported(buildNeeds{})), "%v", tt.rolls)
	}
}

// TestContainerRun: a container the kubelet restarted ran from its first
// start (the naive roll's released kubelet restarts the Job's container).
func TestContainerRun(t *testing.T) {
	term := func(start, end int) *v1.ContainerStateTerminated {
		return &v1.ContainerStateTerminated{StartedAt: metav1.NewTime(at(start)), FinishedAt: metav1.NewTime(at(end))}
	}
	for _, tt := range []struct {
		name       string
		cs         v1.ContainerStatus
		start, end int
	}{
		{name: "one run", cs: v1.ContainerStatus{State: v1.ContainerState{Terminated: term(10, 70)}}, start: 10, end: 70},
		{name: "restarted", cs: v1.ContainerStatus{RestartCount: 1, State: v1.ContainerState{Terminated: term(50, 55)},
			LastTerminationState: v1.ContainerState{Terminated: term(10, 48)}}, start: 10, end: 55},
	} {
		start, end := containerRun(tt.cs)
		assert.Check(t, is.Equal(start, at(tt.start)), tt.name)
		assert.Check(t, is.Equal(end, at(tt.end)), tt.name)
	}
}

// TestRetiredNotEvicted: the canary the fault roll's retry deletes is not
// counted as an eviction; any other deletion is.
func TestRetiredNotEvicted(t *testing.T) {
	records := []podRecord{
		{Name: CanaryName, UID: "c", Node: "w3", App: CanaryName, Deleted: at(10)},
		{Name: "web-1", UID: "w", Node: "w3", App: "web", Deleted: at(11)},
	}
	assert.Equal(t, deletedFrom(records, "w3", at(0), at(20)), 2)
	retire(records, CanaryName)
	assert.Equal(t, deletedFrom(records, "w3", at(0), at(20)), 1)
	assert.Check(t, deletedUIDs(records)["c"], "still left out of the runtime's comparison")
}

// TestRetryDue: SUC v0.20.1 creates a failed Job again only when its Plan
// changes after the Job is gone, so the fault roll does the operator's
// retry (README): once a failed Job it waits a re-run for has been gone
// retryAfter, it touches the Job's Plan once; it stops, rather than wait
// out its 45 minutes, when no Job follows the retry within recreateGrace,
// or when SUC never deletes the failed Job. The faulty worker waits for one
// re-run (refused on the node's state), then for one more after the retry
// began.
func TestRetryDue(t *testing.T) {
	end := at(0)
	gone := end.Add(JobTTL * time.Second)
	failed := func(node string, run int, goneAt time.Time) *jobRecord {
		return &jobRecord{Name: "apply-" + node, Plan: "p-" + node, Node: node, Run: run, Done: true, Failed: true, End: end, GoneAt: goneAt}
	}
	for _, tt := range []struct {
		name    string
		job     *jobRecord
		retired bool
		now     time.Time
		retry   bool
		err     string
	}{
		{name: "still there within its TTL", job: failed("cp", 1, time.Time{}), now: end.Add(JobTTL * time.Second)},
		{name: "gone, SUC may still create it", job: failed("cp", 1, gone), now: gone.Add(retryAfter)},
		{name: "gone past retryAfter: the retry", job: failed("cp", 1, gone), now: gone.Add(retryAfter + time.Second), retry: true},
		{name: "never deleted", job: failed("cp", 1, time.Time{}), now: end.Add(JobTTL*time.Second + recreateGrace + time.Second),
			err: "cp: SUC has not deleted the failed Job apply-cp 121s after it ended (its TTL is 30 s)"},
		{name: "retried, waiting", job: func() *jobRecord { j := failed("cp", 1, gone); j.RetriedAt = gone.Add(retryAfter); return j }(),
			now: gone.Add(retryAfter + recreateGrace)},
		{name: "retried, overdue", job: func() *jobRecord { j := failed("cp", 1, gone); j.RetriedAt = gone.Add(retryAfter); return j }(),
			now: gone.Add(retryAfter + recreateGrace + time.Second),
			err: "cp: SUC has not created the failed Job apply-cp again 91s after its Plan p-cp was touched"},
		{name: "the faulty worker's first failure: one re-run", job: failed("w3", 1, gone), now: gone.Add(time.Hour), retry: true},
		{name: "its refused re-run: none before the retry", job: failed("w3", 2, gone), now: gone.Add(time.Hour)},
		{name: "its refused re-run once the retry began", job: failed("w3", 2, gone), retired: true, now: gone.Add(time.Hour), retry: true},
		{name: "a completed Job", job: &jobRecord{Name: "apply-w1", Node: "w1", Run: 1, Done: true, End: end, GoneAt: gone}, now: gone.Add(time.Hour)},
		{name: "a running Job", job: &jobRecord{Name: "apply-w1", Node: "w1", Run: 2}, now: gone.Add(time.Hour)},
	} {
		f := &fleetRun{fault: true, canary: kubeletCanary, ClusterRun: &kind.ClusterRun{Cluster: &kind.Cluster{Nodes: testNodes("cp", "w1", "w2", "w3")}},
			jobs: map[string]*jobRecord{tt.job.Node: tt.job}}
		f.faults.canaryRetired = tt.retired
		due, err := f.retryDue(tt.now)
		if tt.err != "" {
			assert.Error(t, err, tt.err, tt.name)
			continue
		}
		assert.NilError(t, err, tt.name)
		assert.Equal(t, len(due) == 1, tt.retry, tt.name)
		f.fault, f.canary = false, noCanary
		due, err = f.retryDue(tt.now)
		assert.Check(t, err == nil && len(due) == 0, "%s: no canary, no retry", tt.name)
	}
}

// testNodes are a cluster's nodes that run nothing: the control-plane
// node, then the workers.
func testNodes(names ...string) []*kind.Node {
	var out []*kind.Node
	for i, n := range names {
		role := "worker"
		if i == 0 {
			role = "control-plane"
		}
		out = append(out, kind.NewNode(n, role, nil))
	}
	return out
}

// TestFleetRuntimePlans: only the runtime roll's Plans carry KC_RUNTIME.
func TestFleetRuntimePlans(t *testing.T) {
	st := kind.Step{From: "1.30.14", To: "1.31.14"}
	for _, roll := range append(append([]string(nil), Runs...), Runtime, Runtime20) {
		f := newFleetRun(nil, kind.ScenarioOptions{}, nil, roll, []kind.Step{st})
		want := ""
		switch roll {
		case Runtime:
			want = "containerd@1.7.36+compat.1"
		case Runtime20:
			want = "containerd@2.0.14+compat.1"
		}
		assert.Check(t, is.Equal(f.planOptions().Runtime, want), roll)
	}
}
