package kubeletcompat

import (
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestActuatedAsAllocated(t *testing.T) {
	own := Version{Major: 1, Minor: 33, Patch: 13}
	for _, tt := range []struct {
		name        string
		previous    string // "" = no compat file
		containerID string
		want        bool
	}{
		{name: "listed container", previous: "v1.32.13", containerID: "c1", want: true},
		{name: "pending file", previous: "v1.33.13", containerID: "c1", want: true},
		{name: "unlisted container", previous: "v1.32.13", containerID: "c9"},
		{name: "empty container ID", previous: "v1.32.13", containerID: ""},
		{name: "no file", containerID: "c1"},
		{name: "rollback file", previous: "v1.34.0", containerID: "c1", want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f *File
			if tt.previous != "" {
				f = testFile()
				f.PreviousVersion = tt.previous
				must(t, f.Validate())
			}
			if got, why := NewDecider(f, own, kubeletStart).ActuatedAsAllocated(tt.containerID); got != tt.want || got != (why != "") {
				t.Errorf("ActuatedAsAllocated(%q) = %v %q, want %v", tt.containerID, got, why, tt.want)
			}
		})
	}
}

// TestCompatActuatedAsAllocated: the kubelet's entry logs each container
// once, and decides as upstream without a file or without a Compat.
func TestCompatActuatedAsAllocated(t *testing.T) {
	pod := startedPod("u1", "containerd://c1")
	n := newNode(t)
	c := n.compat("v1.33.13", time.Hour)
	if c.ActuatedAsAllocated(pod, "app", "c1") {
		t.Error("taken as actuated without a compat file")
	}
	n.record("v1.32.13")
	c = n.compat("v1.33.13", time.Hour)
	for i := 0; i < 3; i++ {
		if !c.ActuatedAsAllocated(pod, "app", "c1") {
			t.Fatal("listed container not taken as actuated")
		}
	}
	if c.ActuatedAsAllocated(pod, "app", "c9") {
		t.Error("unlisted container taken as actuated")
	}
	if got := n.log.count(`Taking the allocated resources of a container started by the previous kubelet as actuated pod="default/web" containerName="app" containerID="c1"`); got != 1 {
		t.Errorf("logged %d times, want once: %q", got, n.log.lines)
	}
	for name, c := range n.upstreamCompats() {
		if c.ActuatedAsAllocated(pod, "app", "c1") {
			t.Errorf("%s Compat took a container as actuated", name)
		}
	}
}

// TestLegacyActuatedResources: what the runtime reports wins; otherwise
// only RestartContainer resources are taken as allocated, so a NotRequired
// resize accepted while the previous kubelet ran is actuated in place
// (issue 19, item 4).
func TestLegacyActuatedResources(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	policy := func(cpu, memory v1.ResourceResizeRestartPolicy) []v1.ContainerResizePolicy {
		return []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: cpu}, {ResourceName: v1.ResourceMemory, RestartPolicy: memory}}
	}
	allocated := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("200Mi"), v1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("200Mi")},
	}
	for _, tt := range []struct {
		name                           string
		policy                         []v1.ContainerResizePolicy
		cpuReq, cpuLim, memReq, memLim *resource.Quantity
		want                           string // requests; limits
	}{
		{name: "default NotRequired, nothing reported: only what is never resized", want: "ephemeral-storage=1Gi; "},
		{name: "RestartContainer, nothing reported: allocated", policy: policy(v1.RestartContainer, v1.RestartContainer),
			want: "cpu=500m,ephemeral-storage=1Gi,memory=200Mi; cpu=1,memory=200Mi"},
		{name: "memory RestartContainer only", policy: policy(v1.NotRequired, v1.RestartContainer),
			want: "ephemeral-storage=1Gi,memory=200Mi; memory=200Mi"},
		{name: "reported values win over the allocation", policy: policy(v1.RestartContainer, v1.RestartContainer),
			cpuReq: q("250m"), cpuLim: q("500m"), memLim: q("100Mi"),
			want: "cpu=250m,ephemeral-storage=1Gi,memory=200Mi; cpu=500m,memory=100Mi"},
		{name: "reported values with NotRequired", cpuReq: q("250m"), memLim: q("100Mi"),
			want: "cpu=250m,ephemeral-storage=1Gi; memory=100Mi"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1.Container{Name: "app", Resources: allocated, ResizePolicy: tt.policy}
			got := LegacyActuatedResources(c, tt.cpuReq, tt.cpuLim, tt.memReq, tt.memLim)
			if s := listString(got.Requests) + "; " + listString(got.Limits); s != tt.want {
				t.Errorf("LegacyActuatedResources = %q, want %q", s, tt.want)
			}
		})
	}
	if got := LegacyActuatedResources(nil, nil, nil, nil, nil); got.Requests != nil || got.Limits != nil {
		t.Errorf("nil container: %v", got)
	}
}

func listString(l v1.ResourceList) string {
	var parts []string
	for name, q := range l {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
