package roll

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// packagesInImage are the upgrade image's packages in the cases.
var packagesInImage = []string{"kubernetes-1.31.14-node_1.31.14-2_amd64.deb", "kubernetes-unversioned_1.0.0-4_all.deb",
	"kubernetes-1.31.14-node-1.31.14-2.kc.x86_64.rpm"}

// newCaseNode is the fake node of a case, as upgrade_test.go's
// runScriptCase sets up its $FAKE, and the Job's environment.
func newCaseNode(t *testing.T, tc rollCase) (*fakeNode, map[string]string) {
	t.Helper()
	statusGolden, err := os.ReadFile(cliTestdata + "status.json.golden")
	assert.NilError(t, err)
	same := func(s string) string { return s }
	if tc.after == nil {
		tc.after = same
	}
	if tc.before == nil {
		tc.before = same
	}
	if tc.afterRuntime == nil {
		tc.afterRuntime = same
	}
	// The kubelet the node runs: the previous one, then the target's.
	kubelet := func(v string) string {
		return strings.Replace(string(statusGolden), `"kubeletVersion": "v1.19.16"`, `"kubeletVersion": "v`+v+`"`, 1)
	}
	f := &fakeNode{
		root: t.TempDir(), now: fakeStart,
		stage1: or(tc.stage1Before, prevVersion), stage2: or(tc.stage2Before, prevVersion),
		containerd: or(tc.containerd, "system"), containerdRuns: or(tc.containerd, "system"), containerdInitial: or(tc.containerd, "system"),
		runtimeInstalled: or(tc.runtimeInstalled, "containerd 1.7.35\ncontainerd 2.4.2\nrunc 1.5.3\n"),
		unversioned:      or(tc.unversioned, "1.0.0-2"),
		nodeReady:        or(tc.nodeReady, "True"),
		statusBefore:     tc.before(kubelet(prevVersion)),
		statusAfter:      tc.after(kubelet(targetVersion)),
		statusRuntime:    tc.afterRuntime(tc.before(kubelet(prevVersion))),
		probesBefore:     or(tc.probesBefore, readyProbes), probesAfter: or(tc.probesAfter, readyProbes),
		crictl: tc.crictl, events: tc.events,
		apiPods:        or(tc.apiPods, "default/plain-node-1 plain-uid\ndefault/seccomp-node-1 pinned-uid\nkube-system/etcd-node-1 etcd-uid\n"),
		kubeletMetrics: or(tc.kubeletMetrics, syncedMetrics),
		plan:           tc.plan,
		gate:           lines(tc.gate),
		locked:         tc.locked, unlockAfter: tc.unlockAfter,
	}
	if tc.preflight != "" {
		data, err := os.ReadFile(cliTestdata + tc.preflight)
		assert.NilError(t, err)
		f.preflight = string(data) + tc.preflightNotes
	}
	for name, data := range tc.host {
		writeHostFile(t, f, name, data)
	}
	if tc.state != "" {
		writeHostFile(t, f, StateFile, tc.state)
	}
	if tc.legacyMark {
		writeHostFile(t, f, gateFailedMarker(targetVersion), "2026-01-01T00:00:00Z\n")
	}
	pkgs := t.TempDir()
	for _, p := range packagesInImage {
		assert.NilError(t, os.WriteFile(filepath.Join(pkgs, p), []byte(p), 0o644))
	}
	env := map[string]string{"FORMAT": or(tc.format, "deb"), "CLUSTER": or(tc.cluster, prevVersion),
		"SYSTEM_UPGRADE_NODE_NAME": "node-1", "SYSTEM_UPGRADE_PLAN_LATEST_VERSION": targetVersion,
		"KC_PACKAGES": pkgs, "KC_GATE_TIMEOUT": "1", "KC_POLL": "0.1", "KC_PROBE_WINDOW": "0", "KC_LOCK_WAIT": "2"}
	if tc.staleKubelet {
		// The fake reports the version of stage2: make it the old one.
		env["KUBELET_REPORTS"] = prevVersion
	}
	for _, kv := range tc.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	f.env = env
	return f, env
}

func writeHostFile(t *testing.T, f *fakeNode, name, data string) {
	t.Helper()
	assert.NilError(t, os.MkdirAll(filepath.Dir(f.hostFile(name)), 0o755))
	assert.NilError(t, os.WriteFile(f.hostFile(name), []byte(data), 0o644))
}

// jobRun is how one Job ended.
type jobRun struct {
	out    string
	err    error
	killed *killed
}

// runJob runs the engine once on the fake node, as a Job in mode args
// (none is upgrade), its last word in out as kc-roll prints it.
func runJob(t *testing.T, f *fakeNode, env map[string]string, args []string, afterAction func(string)) (j jobRun) {
	t.Helper()
	var out bytes.Buffer
	defer func() {
		if p := recover(); p != nil {
			k, ok := p.(killed)
			if !ok {
				panic(p)
			}
			j = jobRun{out: out.String(), killed: &k}
		}
	}()
	cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		return jobRun{out: Prog + ": " + err.Error() + "\n", err: err}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if f.cancel != nil {
		f.cancel = cancel
	}
	e := &Engine{Config: cfg, Host: f, Out: &out, Err: &out, WorkDir: t.TempDir(), AfterAction: afterAction}
	workDir := e.WorkDir
	switch {
	case len(args) == 0:
		err = e.Upgrade(ctx)
	case args[0] == "naive":
		err = e.Naive(ctx)
	case args[0] == "wait-plan":
		err = e.WaitPlan(ctx, args[1])
	}
	for i, c := range f.calls {
		f.calls[i] = strings.ReplaceAll(c, workDir, "$WORK")
	}
	if err != nil {
		out.WriteString(Prog + ": " + err.Error() + "\n")
	}
	return jobRun{out: out.String(), err: err}
}

// normalCalls are the calls as upgrade_test.go compares them: the gate's
// times as T, a poll's repeats dropped (there, each call of the node
// comes after its chroot's: only kubectl's repeats are next to each other).
func normalCalls(calls []string) []string {
	var out []string
	for _, c := range calls {
		c = gateTimes.ReplaceAllString(c, "$1 T")
		if len(out) == 0 || out[len(out)-1] != c || !strings.HasPrefix(c, "kubectl ") {
			out = append(out, c)
		}
	}
	return out
}

var phaseLine = regexp.MustCompile(`(?m)^phase=(.*)$`)

// runRollCase runs a case as upgrade_test.go's runScriptCase runs it, and
// checks what it checks.
func runRollCase(t *testing.T, tc rollCase) {
	f, env := newCaseNode(t, tc)
	if tc.die != "" {
		f.die, f.dieNth = tc.die, tc.dieNth
		first := runJob(t, f, env, tc.args, nil)
		assert.Check(t, first.killed != nil, "want the first Job killed after %q, it ended (%v):\n%s", tc.die, first.err, first.out)
		t.Logf("first Job, killed after %q:\n%s", tc.die, first.out)
		f.die, f.calls = "", nil
	}
	j := runJob(t, f, env, tc.args, nil)
	t.Logf("the Job's log:\n%s", j.out)
	assert.Assert(t, j.killed == nil, "the Job was killed after %q", j.killed)
	if tc.wantErr != "" {
		assert.Check(t, j.err != nil, "want a failure, got success:\n%s", j.out)
		assert.Check(t, is.Contains(j.out, tc.wantErr))
	} else {
		assert.Check(t, j.err, "the roll failed:\n%s", j.out)
	}
	for _, w := range tc.wantOut {
		assert.Check(t, is.Contains(j.out, w))
	}
	for _, w := range tc.wantNotOut {
		assert.Check(t, !strings.Contains(j.out, w), "output has %q:\n%s", w, j.out)
	}
	for name, want := range tc.wantHost {
		got, err := os.ReadFile(f.hostFile(name))
		if want == "" {
			assert.Check(t, os.IsNotExist(err), "%s is on the node", name)
			continue
		}
		assert.Check(t, is.Equal(string(got), want), "%s on the node", name)
	}
	if tc.wantContainerd != "" {
		assert.Check(t, is.Equal(f.containerd, tc.wantContainerd), "containerd's selection")
		assert.Check(t, is.Equal(f.containerdRuns, tc.wantContainerd), "the containerd that runs")
	}
	state, stateErr := os.ReadFile(f.hostFile(StateFile))
	if tc.wantPhase != "" {
		phase := "none"
		if stateErr == nil {
			phase = phaseLine.FindStringSubmatch(string(state))[1]
		}
		assert.Check(t, is.Equal(phase, tc.wantPhase), "the roll's state:\n%s", state)
	}
	if tc.wantStage1 != "" {
		assert.Check(t, is.Equal(f.stage1, tc.wantStage1))
	}
	if tc.wantCalls != nil {
		assert.Check(t, is.DeepEqual(normalCalls(f.calls), tc.wantCalls), "output:\n%s", j.out)
	}
	assert.Check(t, is.Equal(f.stage2, tc.stage2))
	rolledBack := strings.Contains(string(state), "\nphase=rolled-back\n")
	assert.Check(t, is.Equal(rolledBack, tc.failedMark), "the roll's state:\n%s", state)
	// The marker of a failed gate, written with the rollback.
	_, err := os.Stat(f.hostFile(gateFailedMarker(targetVersion)))
	gateFailed := rolledBack && (strings.Contains(string(state), "\nreason=the health gate failed\n") ||
		strings.Contains(string(state), "\nreason=the runtime step's health gate failed\n")) && tc.state == ""
	assert.Check(t, is.Equal(err == nil, gateFailed || tc.legacyMark), "the marker of a failed gate")
	if tc.wantErr == "" && tc.stage2 == targetVersion && tc.args == nil {
		assert.Check(t, strings.Contains(string(state), "\nphase=passed\n"), "the roll's state:\n%s", state)
	}
	if tc.stage2 == targetVersion && tc.stage2Before == "" && tc.state == "" {
		for _, p := range packagesInImage[:2] {
			_, err := os.Stat(f.hostFile(StagingDir + "/1.31.14/" + p))
			staged := tc.format != "rpm" && !(tc.unversioned == "1.0.0-4" && strings.HasPrefix(p, "kubernetes-unversioned"))
			assert.Check(t, is.Equal(err == nil, staged), "package %s staged on the node", p)
		}
	}
	_ = time.Second
}
