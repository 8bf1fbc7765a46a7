package systemupgrade

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/roll"
)

// jobNode is a node of nodefakes_test.go's fakes (its programs, its
// files) that the Job's engine (roll, through its real NodeHost: chroot,
// the node's PATH, the Job's kubectl, flock(2)) rolls.
type jobNode struct {
	fake, host string
	env        []string
}

func newJobNode(t *testing.T, tc jobCase) jobNode {
	const prev, target = "1.30.14", "1.31.14"
	fake := t.TempDir()
	host, bin, pkgs, tmp := filepath.Join(fake, "host"), filepath.Join(fake, "bin"), filepath.Join(fake, "packages"), filepath.Join(fake, "tmp")
	for _, d := range []string{host, bin, pkgs, tmp} {
		assert.NilError(t, os.MkdirAll(d, 0o755))
	}
	for name, body := range fakes {
		script := "#!/bin/sh\nprintf '%s\\n' \"" + name + " $*\" >>\"$FAKE/calls\"\n" + body + "\n"
		assert.NilError(t, os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755))
	}
	for _, p := range []string{"kubernetes-1.31.14-node_1.31.14-2_amd64.deb", "kubernetes-unversioned_1.0.0-4_all.deb"} {
		assert.NilError(t, os.WriteFile(filepath.Join(pkgs, p), []byte(p), 0o644))
	}
	statusBefore, err := os.ReadFile(cliTestdata + "status.json.golden")
	assert.NilError(t, err)
	kubelet := func(v string) string {
		return strings.Replace(string(statusBefore), `"kubeletVersion": "v1.19.16"`, `"kubeletVersion": "v`+v+`"`, 1)
	}
	same := func(s string) string { return s }
	for _, f := range []*func(string) string{&tc.before, &tc.after, &tc.afterRuntime} {
		if *f == nil {
			*f = same
		}
	}
	files := map[string]string{
		"status-before.json": tc.before(kubelet(prev)), "status-after.json": tc.after(kubelet(target)),
		"status-runtime.json": tc.afterRuntime(tc.before(kubelet(prev))),
		"containerd":          "system", "containerd-runs": "system", "containerd-initial": "system",
		"runtime-installed": "containerd 1.7.35\ncontainerd 2.4.2\nrunc 1.5.3\n",
		"stage1":            prev, "stage2": prev, "node-ready": "True", "pods-before": readyPods, "pods-after": readyPods,
		"probes-before": readyProbes, "probes-after": readyProbes, "crictl": "", "events": "", "plan": "",
		"api-pods":        "default/plain-node-1 plain-uid\ndefault/seccomp-node-1 pinned-uid\nkube-system/etcd-node-1 etcd-uid\n",
		"kubelet-metrics": syncedMetrics, "gate": tc.gate, "unversioned": "1.0.0-2",
	}
	preflight, err := os.ReadFile(cliTestdata + "preflight-1.30-1.31.table.golden")
	assert.NilError(t, err)
	files["preflight"] = string(preflight)
	for name, data := range tc.host {
		files["host/"+name] = data
	}
	for name, data := range files {
		assert.NilError(t, os.MkdirAll(filepath.Dir(filepath.Join(fake, name)), 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(fake, name), []byte(data), 0o644))
	}
	if tc.left != "" {
		dir := filepath.Join("testdata", "left-by-upgrade.sh", tc.left)
		assert.NilError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(fake, rel)), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(fake, rel), data, 0o644)
		}))
	}
	path := bin + ":" + os.Getenv("PATH")
	env := append([]string{"PATH=" + path, "FAKE=" + fake, "PREV=" + prev, "TMPDIR=" + tmp, "FORMAT=deb", "CLUSTER=" + prev,
		"SYSTEM_UPGRADE_NODE_NAME=node-1", "SYSTEM_UPGRADE_PLAN_LATEST_VERSION=" + target,
		"KC_HOST=" + host, "KC_PACKAGES=" + pkgs, "KC_GATE_TIMEOUT=1", "KC_POLL=0.1", "KC_PROBE_WINDOW=0", "KC_LOCK_WAIT=2",
		"KC_HOST_PATH=" + path + ":/node-path-marker"}, tc.env...)
	return jobNode{fake: fake, host: host, env: env}
}

// goJob runs the Go engine as a Job on the node's real NodeHost; die
// kills it (a panic) right after the action of that name.
func (n jobNode) goJob(t *testing.T, die string) (out string, err error, killed bool) {
	for _, kv := range n.env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg, err := roll.ConfigFromEnv(os.Getenv)
	assert.NilError(t, err)
	h := roll.NewNodeHost(cfg)
	h.KubectlBin = filepath.Join(n.fake, "bin", "kubectl")
	defer h.Close() // the Job's process ends: its lock with it
	work := filepath.Join(n.fake, "tmp", "tmp.GoJob")
	assert.NilError(t, os.MkdirAll(work, 0o700))
	defer os.RemoveAll(work)
	var buf bytes.Buffer
	e := &roll.Engine{Config: cfg, Host: h, Out: &buf, Err: &buf, WorkDir: work}
	if die != "" {
		e.AfterAction = func(a string) {
			if a == die {
				panic("killed after " + a)
			}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			out, killed = buf.String(), true
			t.Logf("the Go engine, killed after %q:\n%s", die, out)
		}
	}()
	err = e.Upgrade(context.Background())
	t.Logf("the Go engine: %v\n%s", err, buf.String())
	return buf.String(), err, false
}

func (n jobNode) read(t *testing.T, name string) string {
	data, _ := os.ReadFile(filepath.Join(n.fake, name))
	return strings.TrimSpace(string(data))
}

func (n jobNode) phase(t *testing.T) string {
	st := roll.ParseState(n.read(t, "host"+roll.StateFile))
	return string(st.Phase)
}

// jobCase is a node of the fakes before a Job.
type jobCase struct {
	env []string
	// before and after change the kubelet's status before and after the
	// swap; afterRuntime after the runtime's (the previous kubelet on the
	// new containerd).
	before, after, afterRuntime func(string) string
	// gate is kubelet-compat gate's verdict at each call: lines "EXIT
	// VERDICT", the last one repeating (passed when empty).
	gate string
	// host are files on the node before the Job.
	host map[string]string
	// left is what a Job of the previous release (upgrade.sh, before the
	// engine ran the Job) left on the node when it was killed: a
	// directory of testdata/left-by-upgrade.sh laid over the node's files.
	left string
}

// TestJob rolls nodes with the Job's engine on its real NodeHost: a
// whole roll (its calls on the node checked), a Job killed after an
// action and the next one going on from the node's state, and a roll the
// previous release's Job (upgrade.sh) began and was killed in, which the
// engine goes on with from the state it left (the same file, format and
// lock: an operator may move the Plans to a new upgrade image mid-roll).
func TestJob(t *testing.T) {
	restarted := func(s string) string {
		return strings.Replace(s, "          \"c-pinned-uid-app\"\n", "          \"c-pinned-uid-app-2\"\n", 1)
	}
	oldConfig := map[string]string{"var/lib/kubelet/config.yaml": "the 1.30 configuration\n"}
	failing := jobCase{after: restarted, gate: gateLost, host: oldConfig}
	runtime := jobCase{env: []string{"KC_RUNTIME=containerd@1.7.35"}}
	left := func(tc jobCase, dir string) jobCase {
		tc.left = dir
		return tc
	}
	for _, tc := range []struct {
		name string
		tc   jobCase
		// dies: the first Job is killed after that action; the next one
		// runs to its end.
		dies       string
		wantPhase  string
		wantStage2 string
		wantOut    string
	}{
		{name: "a whole roll", wantPhase: "passed", wantStage2: "1.31.14", wantOut: "node node-1 upgraded to 1.31.14"},
		{name: "killed after the swap, the next Job gates", dies: "swap",
			wantPhase: "passed", wantStage2: "1.31.14", wantOut: "a Job before this one died after the swap, before its gate's verdict"},
		{name: "killed after kubeadm, the next Job goes on", dies: "kubeadm: upgrade",
			wantPhase: "passed", wantStage2: "1.31.14", wantOut: "a Job before this one died before the swap: going on from the packages"},
		{name: "killed in the rollback, the next Job finishes it", tc: failing, dies: "rollback: stage2",
			wantPhase: "rolled-back", wantStage2: "1.30.14", wantOut: "a Job before this one died while rolling back: finishing the rollback"},
		{name: "killed after the runtime switch, the next Job gates it, then the kubelet's step", tc: runtime,
			dies: "runtime: switch", wantPhase: "passed", wantStage2: "1.31.14",
			wantOut: "gate: passed: node node-1 runs kubelet v1.30.14 on containerd 1.7.35"},
		{name: "upgrade.sh killed after the swap, the engine gates", tc: left(jobCase{}, "after-swap"),
			wantPhase: "passed", wantStage2: "1.31.14", wantOut: "a Job before this one died after the swap, before its gate's verdict"},
		{name: "upgrade.sh killed after kubeadm, the engine goes on", tc: left(jobCase{}, "after-kubeadm"),
			wantPhase: "passed", wantStage2: "1.31.14", wantOut: "a Job before this one died before the swap: going on from the packages"},
		{name: "upgrade.sh killed in the rollback, the engine finishes it", tc: left(failing, "in-rollback"),
			wantPhase: "rolled-back", wantStage2: "1.30.14", wantOut: "a Job before this one died while rolling back: finishing the rollback"},
		{name: "upgrade.sh killed after the runtime switch, the engine gates it, then the kubelet's step", tc: left(runtime, "after-runtime"),
			wantPhase: "passed", wantStage2: "1.31.14", wantOut: "gate: passed: node node-1 runs kubelet v1.30.14 on containerd 1.7.35"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newJobNode(t, tc.tc)
			var out string
			var err error
			if tc.dies != "" {
				_, _, killed := n.goJob(t, tc.dies)
				assert.Assert(t, killed, "the Job was not killed")
			}
			out, err, _ = n.goJob(t, "")
			if tc.dies == "" && tc.tc.left == "" {
				calls := strings.Split(strings.TrimSpace(gateTimes.ReplaceAllString(workDir.ReplaceAllString(n.read(t, "calls"), "$$WORK"), "$1 T")), "\n")
				want := withChroot(append(append([]string{}, jobUpgradeNode...), jobGateOK...), n.host)
				assert.Check(t, is.DeepEqual(dedupe(calls), want))
			}
			if tc.wantPhase == "passed" {
				assert.Check(t, err, "the last Job failed:\n%s", out)
			} else {
				assert.Check(t, err != nil, "the last Job succeeded:\n%s", out)
			}
			assert.Check(t, is.Contains(out, tc.wantOut))
			assert.Check(t, is.Equal(n.phase(t), tc.wantPhase))
			assert.Check(t, is.Equal(n.read(t, "stage2"), tc.wantStage2))
			if tc.wantPhase == "rolled-back" {
				assert.Check(t, is.Equal(n.read(t, "stage1"), "1.30.14"))
				assert.Check(t, is.Equal(n.read(t, "host/var/lib/kubelet/config.yaml"), "the 1.30 configuration"))
				_, err := os.Stat(filepath.Join(n.host, roll.StagingDir, "1.31.14.gate-failed"))
				assert.Check(t, err, "the marker of a failed gate")
			}
			if rt := tc.tc.env; len(rt) > 0 {
				assert.Check(t, is.Equal(n.read(t, "containerd"), "1.7.35"))
			}
		})
	}
}

// jobUpgradeNode and jobGateOK are the calls of a worker's roll on the
// node and the API (the roll's lock is flock(2), no program).
var jobUpgradeNode = []string{
	"kubernetes-select status",
	"kubectl --kubeconfig $WORK/kubelet.kubeconfig get --raw /metrics/probes",
	"kubelet-compat preflight --node --from v1.30.14 --to v1.31.14 --kubeconfig /etc/kubernetes/kubelet.conf",
	"dpkg-query -W -f ${Status} kubernetes-unversioned",
	"dpkg-query -W -f ${Version} kubernetes-unversioned",
	"dpkg -i /var/lib/kubelet-compat/upgrade/1.31.14/kubernetes-1.31.14-node_1.31.14-2_amd64.deb /var/lib/kubelet-compat/upgrade/1.31.14/kubernetes-unversioned_1.0.0-4_all.deb",
	"kubernetes-select status",
	"kubernetes-select stage1 1.31.14",
	"kubeadm upgrade node",
	"kubelet-compat record --kubeconfig /etc/kubernetes/kubelet.conf",
	probesCall,
	statusCall,
	probesCall,
	"kubelet-compat record --kubeconfig /etc/kubernetes/kubelet.conf",
	pictureCall,
	statusCall,
	"kubernetes-select --restart-kubelet stage2 1.31.14",
}

var jobGateOK = []string{
	"kubectl get node node-1 -o jsonpath={.status.conditions[?(@.type==\"Ready\")].status} {.status.nodeInfo.kubeletVersion}",
	probesCall,
	gateCall,
	statusCall,
	probesCall,
}
