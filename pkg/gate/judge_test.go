package gate

import (
	"strings"
	"testing"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// The pods of the tests at the picture.
var (
	webPod  = pod{name: "web", uid: uidWeb, sandbox: "sb-web", containers: []ctr{run("app", "c-app"), run("side", "c-side")}}
	etcdPod = pod{name: "etcd-node-1", uid: uidEtcd, sandbox: "sb-etcd", containers: []ctr{run("etcd", "c-etcd")}}
)

// withContainers is p running other containers.
func withContainers(p pod, cs ...ctr) pod {
	p.containers = cs
	return p
}

// inSandbox is p in another sandbox (and UID, when uid is set).
func inSandbox(p pod, sandbox, uid string, cs ...ctr) pod {
	p.sandbox, p.containers = sandbox, cs
	if uid != "" {
		p.uid = uid
	}
	return p
}

func TestJudge(t *testing.T) {
	later := since.Add(40 * time.Second) // after the fixed wait
	early := since.Add(10 * time.Second) // before
	syncedBoth := record(newKubelet, synced(uidWeb, early), synced(uidEtcd, early))
	restartedAt := since.Add(2 * time.Second)
	tests := []struct {
		name     string
		opts     Options
		now      time.Time
		nowPods  []pod
		rec      *kubeletcompat.SyncRecord
		want     Result
		evidence SyncEvidence
		outcomes map[string]Outcome // pod -> outcome
		// lines must each appear in the verdict's text (evidence, waiting,
		// record).
		lines []string
	}{
		{
			name: "kubelet step: kept and synced by the new kubelet", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, etcdPod}, rec: syncedBoth, want: Passed, evidence: ByRecord,
			outcomes: map[string]Outcome{"ns/web": Kept, "ns/etcd-node-1": Kept},
			lines:    []string{"synced at 2026-12-07T10:01:10Z", "the sync record of the running kubelet v1.35.2+compat.1 pid 200"},
		},
		{
			name: "kubelet step: the kubelet has not restarted since the picture", opts: withKubelet(kubeletStep(), oldKubelet), now: later,
			nowPods: []pod{webPod, etcdPod}, rec: record(oldKubelet, synced(uidWeb, later), synced(uidEtcd, later)), want: NotYet, evidence: ByRecord,
			lines: []string{"it has not restarted yet"},
		},
		{
			name: "kubelet step: the record is the old kubelet's, fixed wait not over", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, etcdPod}, rec: record(oldKubelet, synced(uidWeb, t0), synced(uidEtcd, t0)), want: NotYet, evidence: ByFixedWait,
			lines: []string{"not the running kubelet's (pid 200)", "the fixed wait, until 2026-12-07T10:01:30Z"},
		},
		{
			name: "kubelet step: the record is the old kubelet's, fixed wait over", opts: kubeletStep(), now: later,
			nowPods: []pod{webPod, etcdPod}, rec: record(oldKubelet, synced(uidWeb, t0), synced(uidEtcd, t0)), want: Passed, evidence: ByFixedWait,
			lines: []string{"assumed synced: the fixed wait of 30s since 2026-12-07T10:01:00Z is over"},
		},
		{
			name: "kubelet step: the record is the old kubelet's, record required", opts: requireRecord(kubeletStep()), now: since.Add(time.Hour),
			nowPods: []pod{webPod, etcdPod}, rec: record(oldKubelet, synced(uidWeb, t0), synced(uidEtcd, t0)), want: NotYet, evidence: ByNothing,
			lines: []string{"required: no fixed wait"},
		},
		{
			name: "kubelet step: same PID, another start: not the running kubelet's", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, etcdPod}, rec: record(Kubelet{PID: newKubelet.PID, StartedAt: t0.Add(-time.Hour)}, synced(uidWeb, early), synced(uidEtcd, early)),
			want: NotYet, evidence: ByFixedWait, lines: []string{"not the running kubelet's (pid 200 started 2026-12-07T10:01:00Z)"},
		},
		{
			name: "runtime step: no record, fixed wait over", opts: runtimeStep(), now: later,
			nowPods: []pod{webPod, etcdPod}, want: Passed, evidence: ByFixedWait, lines: []string{"no sync record"},
		},
		{
			name: "runtime step: a pod the record does not have", opts: runtimeStep(), now: later,
			nowPods: []pod{webPod, etcdPod}, rec: record(oldKubelet, synced(uidWeb, early)), want: NotYet, evidence: ByRecord,
			lines: []string{"the running kubelet's record has none"},
		},
		{
			name: "runtime step: the last sync failed", opts: runtimeStep(), now: later,
			nowPods: []pod{webPod, etcdPod}, rec: record(oldKubelet, synced(uidWeb, early), failed(uidEtcd, early, "rpc error: connection refused")), want: NotYet,
			evidence: ByRecord, lines: []string{"the last, at 2026-12-07T10:01:10Z, failed: rpc error: connection refused"},
		},
		{
			name: "runtime step: the last sync waits out a back-off", opts: runtimeStep(), now: later,
			nowPods: []pod{webPod, etcdPod}, rec: record(oldKubelet, synced(uidWeb, early), failed(uidEtcd, early, `failed to "StartContainer" for "side" with CrashLoopBackOff: "back-off 40s restarting failed container=side"`)), want: Passed,
			evidence: ByRecord, lines: []string{"its last sync waits out a back-off"},
		},
		{
			name: "restarted, with the kubelet's reason", opts: kubeletStep(), now: early,
			nowPods: []pod{withContainers(webPod, exited("app", "c-app"), run("app", "c-app2"), run("side", "c-side")), etcdPod},
			rec:     record(newKubelet, synced(uidWeb, early, killed("app", "c-app", "Container app definition changed", restartedAt)), synced(uidEtcd, early)),
			want:    Lost, evidence: ByRecord, outcomes: map[string]Outcome{"ns/web": Restarted, "ns/etcd-node-1": Kept},
			lines: []string{"container app restarted: c-app -> c-app2, killed by the kubelet at 2026-12-07T10:01:02Z: Container app definition changed"},
		},
		{
			name: "restarted, no kill recorded", opts: runtimeStep(), now: later,
			nowPods: []pod{withContainers(webPod, run("app", "c-app2"), run("side", "c-side")), etcdPod},
			want:    Lost, evidence: ByFixedWait, outcomes: map[string]Outcome{"ns/web": Restarted},
			lines: []string{"container app restarted: c-app -> c-app2, no kill of it recorded"},
		},
		{
			name: "still listed running, but the kubelet killed it", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, etcdPod},
			rec:     record(newKubelet, synced(uidWeb, early, killed("side", "c-side", "failed liveness probe", restartedAt)), synced(uidEtcd, early)),
			want:    Lost, outcomes: map[string]Outcome{"ns/web": Restarted}, evidence: ByRecord,
			lines: []string{"container side c-side still listed running, but killed by the kubelet"},
		},
		{
			name: "recreated: another sandbox, same UID", opts: kubeletStep(), now: early,
			nowPods: []pod{inSandbox(webPod, "sb-web2", "", run("app", "n-app"), run("side", "n-side")), etcdPod}, rec: syncedBoth,
			want: Lost, evidence: ByRecord, outcomes: map[string]Outcome{"ns/web": Recreated}, lines: []string{"runs in sandbox sb-web2, was sb-web"},
		},
		{
			name: "recreated: a static pod under another UID", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, inSandbox(etcdPod, "sb-etcd2", uidEtcd2, run("etcd", "n-etcd"))}, rec: syncedBoth,
			want: Lost, evidence: ByRecord, outcomes: map[string]Outcome{"ns/etcd-node-1": Recreated},
			lines: []string{"runs under uid " + uidEtcd2 + " (sandbox sb-etcd2), was uid " + uidEtcd},
		},
		{
			name: "gone: the pod runs no more at all", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, {name: "etcd-node-1", uid: uidEtcd, sandbox: "sb-etcd", notReady: true, containers: []ctr{exited("etcd", "c-etcd")}}},
			rec:     syncedBoth, want: GoneOnly, evidence: ByRecord,
			outcomes: map[string]Outcome{"ns/etcd-node-1": Gone, "ns/web": Kept}, lines: []string{"container etcd c-etcd: exited, code 0, no kill of it recorded"},
		},
		{
			name: "gone while another pod is not synced yet", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod}, rec: record(newKubelet), want: NotYet, outcomes: map[string]Outcome{"ns/etcd-node-1": Gone, "ns/web": Kept},
			evidence: ByRecord, lines: []string{"container etcd c-etcd: no longer listed"},
		},
		{
			name: "no ready sandbox, the kubelet killed the pod whole: recreated", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod},
			rec:     record(newKubelet, synced(uidWeb, early), synced(uidEtcd, early, killed("etcd", "c-etcd", kubeletcompat.ReasonPodKilled, restartedAt))),
			want:    Lost, evidence: ByRecord, outcomes: map[string]Outcome{"ns/etcd-node-1": Recreated}, lines: []string{"killed with its pod"},
		},
		{
			name: "no container runs in a ready sandbox: not yet", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, withContainers(etcdPod, exited("etcd", "c-etcd"))}, rec: syncedBoth,
			want: NotYet, evidence: ByRecord, outcomes: map[string]Outcome{"ns/etcd-node-1": Stopping},
			lines: []string{"the pod's sandbox to stop (it completed) or a container to start"},
		},
		{
			name: "no container runs in a ready sandbox, the kubelet killed it", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, withContainers(etcdPod, exited("etcd", "c-etcd"))},
			rec:     record(newKubelet, synced(uidWeb, early), synced(uidEtcd, early, killed("etcd", "c-etcd", "unhealthy", restartedAt))),
			want:    Lost, evidence: ByRecord, outcomes: map[string]Outcome{"ns/etcd-node-1": ContainerGone},
		},
		{
			name: "a new pod without a kill is logged", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, etcdPod, {name: "job-1", uid: uidNew, sandbox: "sb-new", containers: []ctr{run("work", "c-work")}}},
			rec:     record(newKubelet, synced(uidWeb, early), synced(uidEtcd, early), synced(uidNew, early, killed("work", "c-old", "before the swap", t0))),
			want:    Passed, evidence: ByRecord, outcomes: map[string]Outcome{"ns/job-1": New}, lines: []string{"created after the picture: judged only for a kill"},
		},
		{
			name: "a new pod the kubelet killed a container of since the swap", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, etcdPod, {name: "job-1", uid: uidNew, sandbox: "sb-new", containers: []ctr{run("work", "c-work2")}}},
			rec:     record(newKubelet, synced(uidWeb, early), synced(uidEtcd, early), synced(uidNew, early, killed("work", "c-work", "Container work definition changed", restartedAt))),
			want:    Lost, evidence: ByRecord, outcomes: map[string]Outcome{"ns/job-1": NewKilled},
			lines: []string{"container work c-work killed by the kubelet at 2026-12-07T10:01:02Z: Container work definition changed"},
		},
		{
			name: "a new pod that runs no more, killed since the swap", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, etcdPod},
			rec:     record(newKubelet, synced(uidWeb, early), synced(uidEtcd, early), synced(uidNew, early, killed("work", "c-work", "evicted", restartedAt))),
			want:    Lost, evidence: ByRecord, outcomes: map[string]Outcome{"ns/p-" + uidNew: NewKilled}, lines: []string{"created after the picture, runs no more"},
		},
		{
			name: "the compat file kept a container", opts: kubeletStep(), now: early,
			nowPods: []pod{webPod, etcdPod},
			rec:     record(newKubelet, synced(uidWeb, early, kept("app", "c-app", "hash of v1.34 kept")), synced(uidEtcd, early)),
			want:    Passed, evidence: ByRecord, lines: []string{"container app c-app kept by the compat file: hash of v1.34 kept"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(snap(t0, webPod, etcdPod), snap(tt.now, tt.nowPods...), tt.rec, tt.opts)
			text := verdictText(v)
			assert.Equal(t, v.Result, tt.want, text)
			assert.Equal(t, v.SyncEvidence, tt.evidence, text)
			got := map[string]Outcome{}
			for _, p := range v.Pods {
				got[p.Pod] = p.Outcome
			}
			for pod, want := range tt.outcomes {
				assert.Check(t, is.Equal(got[pod], want), "pod %s\n%s", pod, text)
			}
			for _, l := range tt.lines {
				assert.Check(t, is.Contains(text, l))
			}
		})
	}
}

// TestPodWithoutRunningContainers: a pod of the picture that ran nothing
// has nothing to lose and is not waited for.
func TestPodWithoutRunningContainers(t *testing.T) {
	done := pod{name: "done", uid: uidNew, sandbox: "sb-done", containers: []ctr{exited("work", "c-work")}}
	v := Judge(snap(t0, webPod, done), snap(since.Add(time.Second), webPod), record(newKubelet, synced(uidWeb, since.Add(time.Second))), kubeletStep())
	assert.Equal(t, v.Result, Passed, verdictText(v))
	assert.Equal(t, v.Pods[0].Pod, "ns/done")
	assert.Equal(t, v.Pods[0].Outcome, Kept)
	assert.Equal(t, v.Pods[0].Waiting, "")
}

func withKubelet(o Options, k Kubelet) Options {
	o.Kubelet = k
	return o
}

func requireRecord(o Options) Options {
	o.RequireRecord = true
	return o
}

// failed is a pod record whose last sync, at, failed with err.
func failed(uid string, at time.Time, err string) kubeletcompat.PodRecord {
	p := synced(uid, at)
	p.LastSyncError = err
	return p
}

// kept is a container record of a container the compat file kept.
func kept(name, id, reason string) kubeletcompat.ContainerRecord {
	return kubeletcompat.ContainerRecord{Name: name, ID: id, Kept: &kubeletcompat.KeptContainer{ID: id, Reason: reason, At: since}}
}

// verdictText is every line of the verdict, for the failure messages and
// the evidence checks.
func verdictText(v Verdict) string {
	lines := []string{string(v.Result), v.Record, v.Waiting}
	for _, p := range v.Pods {
		lines = append(lines, p.Pod+" "+string(p.Outcome)+" waiting: "+p.Waiting)
		for _, e := range p.Evidence {
			lines = append(lines, "  "+e)
		}
	}
	return strings.Join(lines, "\n")
}

// TestStaticPodInTwoAtThePicture: a static pod whose old UID still had a
// ready sandbox at the picture beside its new one is not recreated when
// the old one is gone: the new one was in the picture too.
func TestStaticPodInTwoAtThePicture(t *testing.T) {
	newer := inSandbox(etcdPod, "sb-etcd2", uidEtcd2, run("etcd", "n-etcd"))
	at := since.Add(time.Second)
	v := Judge(snap(t0, etcdPod, newer), snap(at, newer), record(newKubelet, synced(uidEtcd2, at)), kubeletStep())
	text := verdictText(v)
	assert.Equal(t, v.Result, GoneOnly, text)
	assert.Equal(t, len(v.Pods), 2, text)
	assert.Equal(t, v.Pods[0].UID, uidEtcd)
	assert.Equal(t, v.Pods[0].Outcome, Gone, text)
	assert.Equal(t, v.Pods[1].Outcome, Kept, text)
}
