package kubeletcompat

import (
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

// startedPod is a pod whose status reports the container c1 under the
// given runtime ID, as the API server has it from the previous kubelet.
func startedPod(uid, containerID string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(uid)}}
	if containerID != "" {
		pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", ContainerID: containerID}}
	}
	return pod
}

// TestAdmitDespite: only a waived reason, for a pod the compat file shows
// was started before this kubelet, with the file in force, admits a pod
// that an admission handler rejected.
func TestAdmitDespite(t *testing.T) {
	own := Version{Major: 1, Minor: 21, Patch: 14}
	initOnly := startedPod("u2", "")
	initOnly.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "init", ContainerID: "docker://c1"}}
	for _, tt := range []struct {
		name     string
		previous string // "" = no compat file
		pod      *v1.Pod
		reason   string
		want     bool
		wantWhy  string
	}{
		{name: "listed container, node selector", previous: "v1.20.15", pod: startedPod("u1", "containerd://c1"), reason: "NodeAffinity", want: true, wantWhy: "container app (c1) is listed"},
		{name: "listed container, 1.17 reason", previous: "v1.20.15", pod: startedPod("u1", "containerd://c1"), reason: "MatchNodeSelector", want: true},
		{name: "listed container, resource fit", previous: "v1.20.15", pod: startedPod("u1", "containerd://c1"), reason: "OutOfpods", want: true},
		{name: "listed container, eviction", previous: "v1.20.15", pod: startedPod("u1", "containerd://c1"), reason: "Evicted", want: true},
		{name: "listed container, taints", previous: "v1.20.15", pod: startedPod("u1", "containerd://c1"), reason: "TaintToleration", want: true},
		{name: "listed container without prefix", previous: "v1.20.15", pod: startedPod("u1", "c1"), reason: "NodeAffinity", want: true},
		{name: "listed init container", previous: "v1.20.15", pod: initOnly, reason: "NodeAffinity", want: true, wantWhy: "container init"},
		{name: "recorded static pod UID", previous: "v1.20.15", pod: startedPod("0f1e2d3c", ""), reason: "OutOfcpu", want: true, wantWhy: "static pod's UID"},
		{name: "pending file", previous: "v1.21.14", pod: startedPod("u1", "containerd://c1"), reason: "NodeAffinity", want: true},
		{name: "listed container, sysctls", previous: "v1.20.15", pod: startedPod("u1", "containerd://c1"), reason: "SysctlForbidden"},
		{name: "listed container, device allocation", previous: "v1.20.15", pod: startedPod("u1", "containerd://c1"), reason: "UnexpectedAdmissionError"},
		{name: "listed container, topology", previous: "v1.20.15", pod: startedPod("u1", "containerd://c1"), reason: "TopologyAffinityError"},
		{name: "listed container, host ports", previous: "v1.20.15", pod: startedPod("u1", "containerd://c1"), reason: "NodePorts"},
		{name: "unlisted container", previous: "v1.20.15", pod: startedPod("u1", "containerd://c9"), reason: "NodeAffinity"},
		{name: "new pod (no status)", previous: "v1.20.15", pod: startedPod("u1", ""), reason: "NodeAffinity"},
		{name: "empty container ID", previous: "v1.20.15", pod: startedPod("u1", "containerd://"), reason: "NodeAffinity"},
		{name: "no file", pod: startedPod("u1", "containerd://c1"), reason: "NodeAffinity"},
		{name: "ignored file", previous: "v1.22.0", pod: startedPod("u1", "containerd://c1"), reason: "NodeAffinity"},
		{name: "nil pod", previous: "v1.20.15", reason: "NodeAffinity"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f *File
			if tt.previous != "" {
				f = testFile()
				f.PreviousVersion = tt.previous
				must(t, f.Validate())
			}
			got, why := NewDecider(f, own, kubeletStart).AdmitDespite(tt.pod, tt.reason)
			if got != tt.want || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("AdmitDespite = %v %q, want %v %q", got, why, tt.want, tt.wantWhy)
			}
		})
	}
}

// TestCompatAdmitDespite: the kubelet's entry logs each waived pod once,
// and decides as upstream without a file or without a Compat.
func TestCompatAdmitDespite(t *testing.T) {
	pod := startedPod("u1", "containerd://c1")
	n := newNode(t)
	c := n.compat("v1.21.14", time.Hour)
	if c.AdmitDespite(pod, "NodeAffinity", "") {
		t.Error("admitted a rejected pod without a compat file")
	}
	n.record("v1.20.15")
	c = n.compat("v1.21.14", time.Hour)
	for i := 0; i < 3; i++ {
		if !c.AdmitDespite(pod, "NodeAffinity", "Predicate NodeAffinity failed") {
			t.Fatal("listed pod rejected")
		}
	}
	if c.AdmitDespite(pod, "SysctlForbidden", "forbidden sysctl") {
		t.Error("sysctl rejection waived")
	}
	if c.AdmitDespite(startedPod("u2", "containerd://c9"), "NodeAffinity", "") {
		t.Error("unlisted pod admitted")
	}
	if got := n.log.count(`Admitting a pod started before this kubelet despite an admission rejection pod="default/web" podUID="u1" reason="NodeAffinity" message="Predicate NodeAffinity failed"`); got != 1 {
		t.Errorf("waiver logged %d times, want once: %q", got, n.log.lines)
	}
	for name, c := range n.upstreamCompats() {
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
