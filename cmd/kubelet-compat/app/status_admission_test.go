package app

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// admissionJSON is what status -o json says about admission and about why
// the compat file is still in force (issue 19, item 3, second bullet),
// declared here so that the test reads the output as a user would.
type admissionJSON struct {
	Admission *struct {
		InForce              bool       `json:"inForce"`
		ResourceWaivers      bool       `json:"resourceWaivers"`
		ResourceWaiversUntil *time.Time `json:"resourceWaiversUntil"`
		ResourceWaiversNote  string     `json:"resourceWaiversNote"`
		Pods                 []struct {
			Pod               string   `json:"pod"`
			UID               string   `json:"uid"`
			RunningContainers []string `json:"runningContainers"`
			SandboxReady      bool     `json:"sandboxReady"`
			StartedBefore     bool     `json:"startedBefore"`
			Why               string   `json:"why"`
			AdmittedDespite   []string `json:"admittedDespite"`
		} `json:"pods"`
	} `json:"admission"`
	InForce *struct {
		ListedRunning []struct {
			Pod       string `json:"pod"`
			Container string `json:"container"`
			ID        string `json:"id"`
			NeedsFile string `json:"needsFile"`
		} `json:"listedContainersRunning"`
		SweepNeeds []string  `json:"sweepNeeds"`
		Grace      string    `json:"grace"`
		GraceUntil time.Time `json:"graceUntil"`
		Until      string    `json:"until"`
	} `json:"inForce"`
}

// TestStatusAdmission: status lists, for every pod the container runtime
// runs, whether the running kubelet counts it as started before itself and
// which admission rejections it admits it despite (the library's Decider on
// the runtime's view), when the resource-fit and eviction waivers end, and
// why the compat file is still in force and until when (sweep's rule).
func TestStatusAdmission(t *testing.T) {
	etcd := pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true}
	seccomp := pod{file: "seccomp.yaml", yaml: seccompYAML, uid: "pinned-uid", created: beforeStart, ready: true}
	plain := pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: afterStart, ready: true}
	allWaivers := []string{"nodeAffinity", "taints", "resourceFit", "eviction"}
	type wantPod struct {
		startedBefore bool
		why           string
		waived        []string
	}
	for _, tc := range []struct {
		name     string
		recordAt time.Time
		now      time.Time
		pods     []pod
		// tweak changes the runtime after the swap.
		tweak          func(f *fixture)
		noFile         bool
		wantInForce    bool
		wantResource   bool
		wantNote       string
		wantPods       map[string]wantPod
		wantListed     []string // pod/container of the listed containers that run
		wantSweepNeeds int
		wantUntil      string
		wantTable      []string
	}{
		{
			name: "right after the swap", recordAt: kubeletStart.Add(-5 * time.Minute), now: kubeletStart.Add(2 * time.Minute),
			pods: []pod{etcd, seccomp, plain}, wantInForce: true, wantResource: true,
			wantNote: "the kubelet started within 1h0m0s after the record",
			wantPods: map[string]wantPod{
				"default/plain-node-1":    {why: "no running container of it is listed"},
				"default/seccomp-node-1":  {startedBefore: true, why: "the runtime runs container c-pinned-uid-app of the pod, and the compat file lists it", waived: allWaivers},
				"kube-system/etcd-node-1": {startedBefore: true, why: "the runtime runs container c-etcd-uid-etcd of the pod, and the compat file lists it", waived: allWaivers},
			},
			wantListed:     []string{"default/seccomp-node-1/app", "kube-system/etcd-node-1/etcd"},
			wantSweepNeeds: 2, // seccomp's hash, etcd's recorded UID
			wantUntil:      "not before 2023-11-14T22:40:00Z",
			wantTable: []string{
				"resource fit and eviction: waived, the kubelet started within 1h0m0s after the record",
				"default/seccomp-node-1   pinned-uid  affinity, taints, resources, eviction",
				"listed container kube-system/etcd-node-1/etcd (c-etcd-uid-et) runs",
				"static pod kube-system/etcd-node-1 runs under the recorded UID etcd-uid",
			},
		},
		{
			name: "the kubelet restarted more than an hour after the record", recordAt: kubeletStart.Add(-2 * time.Hour), now: kubeletStart.Add(time.Hour),
			pods: []pod{seccomp}, wantInForce: true, wantResource: false,
			wantNote: "ended at 2023-11-14T21:30:00Z",
			wantPods: map[string]wantPod{
				"default/seccomp-node-1": {startedBefore: true, why: "c-pinned-uid-app", waived: []string{"nodeAffinity", "taints"}},
			},
			wantListed:     []string{"default/seccomp-node-1/app"},
			wantSweepNeeds: 1,
			wantUntil:      "the grace (--grace 10m0s) ended at 2023-11-14T22:40:00Z",
			wantTable:      []string{"default/seccomp-node-1  pinned-uid  affinity, taints  "},
		},
		{
			name: "a static pod whose listed container was replaced: its recorded UID and its running sandbox", recordAt: kubeletStart.Add(-5 * time.Minute), now: kubeletStart.Add(2 * time.Minute),
			pods: []pod{etcd}, wantInForce: true, wantResource: true,
			tweak: func(f *fixture) {
				sb := f.srv.Sandboxes()[0]
				f.srv.Set([]cri.Sandbox{sb}, []cri.Container{{ID: "c-etcd-new", SandboxID: sb.ID, Name: "etcd", Image: "registry.k8s.io/etcd:3.4.13-0", State: cri.ContainerRunning, CreatedAt: afterStart,
					Labels:      map[string]string{cri.PodNameLabel: sb.Name, cri.PodNamespaceLabel: sb.Namespace, cri.PodUIDLabel: sb.UID, cri.ContainerNameLabel: "etcd"},
					Annotations: map[string]string{cri.ContainerHashAnnotation: "1"}}})
			},
			wantPods: map[string]wantPod{
				"kube-system/etcd-node-1": {startedBefore: true, why: "the compat file records the static pod's UID etcd-uid and the runtime runs its sandbox", waived: allWaivers},
			},
			wantSweepNeeds: 1, // the recorded UID
			wantUntil:      "not before 2023-11-14T22:40:00Z",
		},
		{
			name: "a listed container that exited waives nothing", recordAt: kubeletStart.Add(-5 * time.Minute), now: kubeletStart.Add(2 * time.Minute),
			pods: []pod{seccomp}, wantInForce: true, wantResource: true,
			tweak: func(f *fixture) {
				sb := f.srv.Sandboxes()[0]
				sb.Ready = false
				f.srv.Set([]cri.Sandbox{sb}, []cri.Container{{ID: "c-pinned-uid-app", SandboxID: sb.ID, Name: "app", State: cri.ContainerExited, CreatedAt: beforeStart,
					Labels: map[string]string{cri.PodNameLabel: sb.Name, cri.PodNamespaceLabel: sb.Namespace, cri.PodUIDLabel: sb.UID, cri.ContainerNameLabel: "app"}}})
			},
			wantPods:  map[string]wantPod{},
			wantUntil: "not before 2023-11-14T22:40:00Z",
			wantTable: []string{"no pod runs"},
		},
		{
			name: "no compat file: upstream", recordAt: kubeletStart.Add(-5 * time.Minute), now: kubeletStart.Add(2 * time.Minute),
			pods: []pod{seccomp}, noFile: true,
			wantTable: []string{"admission: as upstream (no compat file in force)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := upgradedAt(t, []string{cri.APIv1}, tc.recordAt, tc.now, tc.pods...)
			if tc.tweak != nil {
				tc.tweak(f)
			}
			if tc.noFile {
				assert.NilError(t, os.Remove(f.compatPath()))
			}
			assert.Equal(t, f.run("status", "-o", "json"), ExitOK, "stderr %s", f.stderr.String())
			var r admissionJSON
			assert.NilError(t, json.Unmarshal(f.stdout.Bytes(), &r))
			assert.Assert(t, r.Admission != nil, "status -o json says nothing about admission:\n%s", f.stdout.String())
			a := r.Admission
			assert.Check(t, is.Equal(a.InForce, tc.wantInForce))
			if !tc.wantInForce {
				assert.Check(t, is.Len(a.Pods, 0))
				assert.Check(t, r.InForce == nil, "inForce for a file that is not in force")
			} else {
				assert.Check(t, is.Equal(a.ResourceWaivers, tc.wantResource))
				assert.Assert(t, a.ResourceWaiversUntil != nil)
				assert.Check(t, is.Equal(a.ResourceWaiversUntil.UTC(), tc.recordAt.UTC().Add(time.Hour)))
				assert.Check(t, is.Contains(a.ResourceWaiversNote, tc.wantNote))
				got := map[string]wantPod{}
				for _, p := range a.Pods {
					got[p.Pod] = wantPod{startedBefore: p.StartedBefore, why: p.Why, waived: p.AdmittedDespite}
				}
				assert.Check(t, is.Equal(len(got), len(tc.wantPods)), "pods %v", got)
				for name, want := range tc.wantPods {
					g, ok := got[name]
					if !assert.Check(t, ok, "pod %s not listed: %v", name, got) {
						continue
					}
					assert.Check(t, is.Equal(g.startedBefore, want.startedBefore), name)
					assert.Check(t, is.Contains(g.why, want.why), name)
					if len(want.waived) == 0 {
						assert.Check(t, is.Len(g.waived, 0), name)
					} else {
						assert.Check(t, is.DeepEqual(g.waived, want.waived), name)
					}
				}
				assert.Assert(t, r.InForce != nil, "status -o json does not say why the file is in force")
				var listed []string
				for _, l := range r.InForce.ListedRunning {
					listed = append(listed, l.Pod+"/"+l.Container)
				}
				assert.Check(t, is.DeepEqual(listed, tc.wantListed))
				assert.Check(t, is.Len(r.InForce.SweepNeeds, tc.wantSweepNeeds), "%q", r.InForce.SweepNeeds)
				assert.Check(t, is.Equal(r.InForce.Grace, "10m0s"))
				assert.Check(t, is.Equal(r.InForce.GraceUntil.UTC(), kubeletStart.Add(10*time.Minute).UTC()))
				assert.Check(t, is.Contains(r.InForce.Until, tc.wantUntil))
			}
			assert.Equal(t, f.run("status"), ExitOK, "stderr %s", f.stderr.String())
			for _, want := range tc.wantTable {
				assert.Check(t, is.Contains(f.stdout.String(), want))
			}
			if strings.Contains(f.stdout.String(), "\t") {
				t.Errorf("the table has tabs:\n%s", f.stdout.String())
			}
		})
	}
}

// TestResourceWaiversHoldAsTheLibrary: the resource-fit and eviction rule
// status prints (Decider.ResourceWaiversHold) is the one AdmitDespite
// applies: for a pod started before the kubelet, it waives OutOfcpu and
// Evicted exactly when ResourceWaiversHold says so, at and around the
// window's edges.
func TestResourceWaiversHoldAsTheLibrary(t *testing.T) {
	recordedAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	file := &kubeletcompat.File{APIVersion: kubeletcompat.APIVersion, Kind: "UpgradeCompat", PreviousVersion: "v1.18.19", RecordedAt: recordedAt,
		Containers: []kubeletcompat.Container{{ID: "c1", HashVersion: "v1.18.19"}}}
	own := kubeletcompat.Version{Major: 1, Minor: 19, Patch: 16}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "web-uid"}}
	rt := kubeletcompat.RuntimePod{RunningContainerIDs: []string{"c1"}, SandboxReady: true}
	w := kubeletcompat.ResourceWaiverWindow
	for _, after := range []time.Duration{-time.Hour, -time.Nanosecond, 0, time.Nanosecond, w / 2, w - time.Nanosecond, w, w + time.Nanosecond, 30 * 24 * time.Hour} {
		start := recordedAt.Add(after)
		d := kubeletcompat.NewDecider(file, own, start)
		for _, reason := range []string{kubeletcompat.ReasonOutOfPrefix + "cpu", kubeletcompat.ReasonEvicted} {
			lib, _ := d.AdmitDespite(pod, rt, reason)
			assert.Check(t, is.Equal(d.ResourceWaiversHold(), lib), "kubelet started %s after the record, %s", after, reason)
		}
		// Affinity does not depend on the window.
		aff, _ := d.AdmitDespite(pod, rt, kubeletcompat.ReasonNodeAffinity)
		assert.Check(t, aff, "kubelet started %s after the record: NodeAffinity not waived", after)
	}
}

// TestStatusPendingFile: between record and the swap the file is in force
// (pending) for the kubelet that wrote it; sweep never deletes it, and the
// running kubelet started before the record does not waive resource fit.
func TestStatusPendingFile(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.addStaticPods("v1.18.19", pod{file: "seccomp.yaml", yaml: seccompYAML, uid: "pinned-uid", created: beforeStart, ready: true})
	f.runKubelet("v1.18.19")
	f.now = kubeletStart.Add(24 * time.Hour)
	assert.Equal(t, f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19")), ExitOK, "stderr %s", f.stderr.String())
	assert.Equal(t, f.run("status", "-o", "json"), ExitOK, "stderr %s", f.stderr.String())
	var r admissionJSON
	assert.NilError(t, json.Unmarshal(f.stdout.Bytes(), &r))
	assert.Assert(t, r.Admission != nil && r.InForce != nil, "%s", f.stdout.String())
	assert.Check(t, r.Admission.InForce)
	assert.Check(t, !r.Admission.ResourceWaivers)
	assert.Check(t, is.Contains(r.Admission.ResourceWaiversNote, "not waived, the kubelet started before the record"))
	assert.Check(t, is.Len(r.Admission.Pods, 1))
	assert.Check(t, is.DeepEqual(r.Admission.Pods[0].AdmittedDespite, []string{"nodeAffinity", "taints"}))
	assert.Check(t, is.Contains(r.InForce.Until, "sweep keeps it while it is pending"))
	assert.Equal(t, f.run("status"), ExitOK)
	assert.Check(t, is.Contains(f.stdout.String(), "until: sweep keeps it while it is pending (recorded for this kubelet's own version"))
}
