package kubeletcompat

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestWaivedRejection(t *testing.T) {
	for _, tt := range []struct {
		reason string
		want   bool
	}{
		{"NodeAffinity", true},
		{"MatchNodeSelector", true},
		{"TaintToleration", true},
		{"PodToleratesNodeTaints", true},
		{"OutOfcpu", true},
		{"OutOfmemory", true},
		{"OutOfpods", true},
		{"OutOfephemeral-storage", true},
		{"OutOfexample.com/gpu", true},
		{"Evicted", true},
		{"OutOf", false},
		{"NodePorts", false},
		{"NodeName", false},
		{"SysctlForbidden", false},
		{"UnexpectedAdmissionError", false},
		{"TopologyAffinityError", false},
		{"AppArmor", false},
		// 1.36+: a node feature the kubelet does not declare (KEP-5328).
		{"PodFeatureUnsupported", false},
		{"InvalidNodeInfo", false},
		{"UnknownReason", false},
		{"nodeaffinity", false},
		{"", false},
	} {
		if got := WaivedRejection(tt.reason); got != tt.want {
			t.Errorf("WaivedRejection(%q) = %v, want %v", tt.reason, got, tt.want)
		}
	}
}

// startedPod is a pod whose API status reports the container c1 under the
// given runtime ID, as the API server has it from the previous kubelet (or
// as an API user wrote it: the status is never evidence).
func startedPod(uid, containerID string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(uid)}}
	if containerID != "" {
		pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", ContainerID: containerID}}
	}
	return pod
}

// runs is what the runtime reports for a pod: these running containers.
func runs(ids ...string) RuntimePod {
	return RuntimePod{RunningContainerIDs: ids, SandboxReady: len(ids) > 0}
}

// TestAdmitDespite: only a waived reason, for a pod that the runtime shows
// runs a container the file lists (or a static pod the file records whose
// sandbox the runtime runs), with the file in force, admits a pod that an
// admission handler rejected; resource fit and eviction only on the first
// start after the swap.
func TestAdmitDespite(t *testing.T) {
	own := Version{Major: 1, Minor: 21, Patch: 14}
	later := kubeletStart.Add(30 * 24 * time.Hour) // a restart of the same kubelet a month later
	for _, tt := range []struct {
		name     string
		previous string // "" = no compat file
		start    time.Time
		pod      *v1.Pod
		rt       RuntimePod
		reason   string
		want     bool
		wantWhy  string
	}{
		{name: "runs a listed container, node selector", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c1"), reason: "NodeAffinity", want: true, wantWhy: "the runtime runs container c1"},
		{name: "runs a listed container, 1.17 reason", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c1"), reason: "MatchNodeSelector", want: true},
		{name: "runs a listed container, resource fit", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c1"), reason: "OutOfpods", want: true},
		{name: "runs a listed container, eviction", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c1"), reason: "Evicted", want: true},
		{name: "runs a listed container, taints", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c1"), reason: "TaintToleration", want: true},
		{name: "runs a listed and an unlisted container", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c9", "c1"), reason: "NodeAffinity", want: true},
		{name: "recorded static pod UID, sandbox runs", previous: "v1.20.15", pod: startedPod("0f1e2d3c", ""), rt: RuntimePod{SandboxReady: true}, reason: "OutOfcpu", want: true, wantWhy: "static pod's UID"},
		{name: "recorded static pod UID, no sandbox runs (after a reboot)", previous: "v1.20.15", pod: startedPod("0f1e2d3c", ""), reason: "OutOfcpu"},
		{name: "pending file", previous: "v1.21.14", pod: startedPod("u1", ""), rt: runs("c1"), reason: "NodeAffinity", want: true},
		{name: "later restart: affinity still waived", previous: "v1.20.15", start: later, pod: startedPod("u1", ""), rt: runs("c1"), reason: "NodeAffinity", want: true},
		{name: "later restart: taints still waived", previous: "v1.20.15", start: later, pod: startedPod("u1", ""), rt: runs("c1"), reason: "TaintToleration", want: true},
		{name: "later restart: resource fit as upstream", previous: "v1.20.15", start: later, pod: startedPod("u1", ""), rt: runs("c1"), reason: "OutOfcpu"},
		{name: "later restart: eviction as upstream", previous: "v1.20.15", start: later, pod: startedPod("u1", ""), rt: runs("c1"), reason: "Evicted"},
		{name: "kubelet started before record: resource fit as upstream", previous: "v1.20.15", start: kubeletStart.Add(-48 * time.Hour), pod: startedPod("u1", ""), rt: runs("c1"), reason: "OutOfpods"},
		{name: "runs a listed container, sysctls", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c1"), reason: "SysctlForbidden"},
		{name: "runs a listed container, device allocation", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c1"), reason: "UnexpectedAdmissionError"},
		{name: "runs a listed container, topology", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c1"), reason: "TopologyAffinityError"},
		{name: "runs a listed container, host ports", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c1"), reason: "NodePorts"},
		{name: "runs an unlisted container", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs("c9"), reason: "NodeAffinity"},
		{name: "status names a listed container, the runtime runs none (exited)", previous: "v1.20.15", pod: startedPod("u1", "containerd://c1"), reason: "NodeAffinity"},
		{name: "new pod", previous: "v1.20.15", pod: startedPod("u1", ""), reason: "NodeAffinity"},
		{name: "empty container ID", previous: "v1.20.15", pod: startedPod("u1", ""), rt: runs(""), reason: "NodeAffinity"},
		{name: "no file", pod: startedPod("u1", ""), rt: runs("c1"), reason: "NodeAffinity"},
		{name: "rollback file", previous: "v1.22.0", pod: startedPod("u1", ""), rt: runs("c1"), reason: "NodeAffinity", want: true, wantWhy: "lists it"},
		{name: "nil pod", previous: "v1.20.15", rt: runs("c1"), reason: "NodeAffinity"},
		{name: "pod without UID", previous: "v1.20.15", pod: startedPod("", ""), rt: runs("c1"), reason: "NodeAffinity"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f *File
			if tt.previous != "" {
				f = testFile()
				f.PreviousVersion = tt.previous
				f.RecordedAt = kubeletStart.Add(-2 * time.Minute) // record, then the swap
				must(t, f.Validate())
			}
			start := tt.start
			if start.IsZero() {
				start = kubeletStart
			}
			got, why := NewDecider(f, own, start).AdmitDespite(tt.pod, tt.rt, tt.reason)
			if got != tt.want || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("AdmitDespite = %v %q, want %v %q", got, why, tt.want, tt.wantWhy)
			}
		})
	}
}

// fakeRuntime answers for the pods it knows and fails for "broken".
type fakeRuntime map[string]RuntimePod

func (r fakeRuntime) lookup(uid string) (RuntimePod, error) {
	if uid == "broken" {
		return RuntimePod{}, errors.New("runtime down")
	}
	return r[uid], nil
}

// TestCompatAdmitDespite: the kubelet's entry asks the runtime, logs each
// waived pod once, and decides as upstream without a file, without a
// runtime, when the runtime fails, or without a Compat.
func TestCompatAdmitDespite(t *testing.T) {
	pod := startedPod("u1", "containerd://c1")
	rt := fakeRuntime{"u1": runs("c1"), "u2": runs("c9"), "attacker-pod-uid": runs("c-attacker")}
	n := newNode(t)
	c := n.compat("v1.21.14", time.Hour)
	c.SetRuntime(rt.lookup)
	if c.AdmitDespite(pod, "NodeAffinity", "") {
		t.Error("admitted a rejected pod without a compat file")
	}
	n.record("v1.20.15")
	c = n.compat("v1.21.14", time.Hour)
	if c.AdmitDespite(pod, "NodeAffinity", "") {
		t.Error("admitted a rejected pod without a runtime to check it against")
	}
	c.SetRuntime(rt.lookup)
	for i := 0; i < 3; i++ {
		if !c.AdmitDespite(pod, "NodeAffinity", "Predicate NodeAffinity failed") {
			t.Fatal("pod running a listed container rejected")
		}
	}
	if c.AdmitDespite(pod, "SysctlForbidden", "forbidden sysctl") {
		t.Error("sysctl rejection waived")
	}
	if c.AdmitDespite(startedPod("u2", "containerd://c9"), "NodeAffinity", "") {
		t.Error("unlisted pod admitted")
	}
	if c.AdmitDespite(startedPod("attacker-pod-uid", "containerd://c1"), "NodeAffinity", "") {
		t.Error("pod with a forged status admitted")
	}
	if c.AdmitDespite(startedPod("broken", "containerd://c1"), "NodeAffinity", "") {
		t.Error("admitted although the runtime did not answer")
	}
	if got := n.log.count(`Admitting a pod started before this kubelet despite an admission rejection pod="default/web" podUID="u1" reason="NodeAffinity" message="Predicate NodeAffinity failed"`); got != 1 {
		t.Errorf("waiver logged %d times, want once: %q", got, n.log.lines)
	}
	for name, c := range n.upstreamCompats() {
		c.SetRuntime(rt.lookup)
		if c.AdmitDespite(pod, "NodeAffinity", "") {
			t.Errorf("%s Compat admitted a rejected pod", name)
		}
	}
}

// upstreamCompats are the Compats that must decide as upstream although the
// node's file is in force: a nil one, and one disabled because it does not
// know its kubelet's hash.
func (n *node) upstreamCompats() map[string]*Compat {
	return map[string]*Compat{
		"nil":      nil,
		"disabled": New(Config{Path: n.path, KubeletVersion: "v1.15.12", OwnerUID: os.Getuid()}),
	}
}

// TestAdmitDespiteForgedStatus: a pod created after record, whose API
// status an API user set to name a container the file lists for ANOTHER
// pod, is rejected as upstream rejects it, with the file active or
// pending (issue 19, item 1).
func TestAdmitDespiteForgedStatus(t *testing.T) {
	own := Version{Major: 1, Minor: 21, Patch: 14}
	for _, previous := range []string{"v1.20.15", "v1.21.14"} {
		for _, reason := range []string{"OutOfmemory", "OutOfpods", "NodeAffinity", "Evicted", "TaintToleration"} {
			f := testFile()
			f.PreviousVersion = previous
			must(t, f.Validate())
			forged := startedPod("attacker-pod-uid", "containerd://c1")
			// The runtime runs the attacker's own container, not c1.
			if got, why := NewDecider(f, own, kubeletStart).AdmitDespite(forged, runs("c-attacker"), reason); got {
				t.Errorf("file %s, %s: a pod whose status names another pod's listed container was admitted: %s", previous, reason, why)
			}
		}
	}
}
