package kubeletcompat

import (
	"testing"
	"time"
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
		{name: "ignored file", previous: "v1.34.0", containerID: "c1"},
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
