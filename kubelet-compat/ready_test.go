package kubeletcompat

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWasReady(t *testing.T) {
	now := time.Now()
	defer SetReadyStartForTest(now)()
	yes, no := true, false
	running := func(id string, at time.Time) v1.ContainerStatus {
		return v1.ContainerStatus{Name: "c", ContainerID: id, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}
	}
	old := running("docker://a", now.Add(-time.Hour))
	old.Ready, old.Started = true, &yes
	pod := &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{old}}}
	notReady := old
	notReady.Ready, notReady.Started = false, &yes
	notStarted := old
	notStarted.Ready, notStarted.Started = false, &no
	exited := v1.ContainerStatus{Name: "c", ContainerID: "docker://a", Ready: true, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}

	for _, tc := range []struct {
		name           string
		pod            *v1.Pod
		c              v1.ContainerStatus
		ready, started bool
	}{
		{"same running container", pod, running("docker://a", now.Add(-time.Hour)), true, true},
		{"reported not ready", &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{notReady}}}, running("docker://a", now.Add(-time.Hour)), false, true},
		{"reported not started", &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{notStarted}}}, running("docker://a", now.Add(-time.Hour)), false, false},
		{"reported exited", &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exited}}}, running("docker://a", now.Add(-time.Hour)), false, false},
		{"sidecar", &v1.Pod{Status: v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{old}}}, running("docker://a", now.Add(-time.Hour)), true, true},
		{"other container id", pod, running("docker://b", now.Add(-time.Hour)), false, false},
		{"started after the kubelet", pod, running("docker://a", now.Add(-5*time.Second)), false, false},
		{"no start time", pod, running("docker://a", time.Time{}), false, false},
		{"not running", pod, v1.ContainerStatus{Name: "c", ContainerID: "docker://a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}, false, false},
		{"no status", &v1.Pod{}, running("docker://a", now.Add(-time.Hour)), false, false},
		{"no pod", nil, running("docker://a", now.Add(-time.Hour)), false, false},
	} {
		c := tc.c
		if got := WasReady(tc.pod, &c); got != tc.ready {
			t.Errorf("%s: WasReady = %v, want %v", tc.name, got, tc.ready)
		}
		if got := WasStarted(tc.pod, &c); got != tc.started {
			t.Errorf("%s: WasStarted = %v, want %v", tc.name, got, tc.started)
		}
	}
}

func TestKeepReadyWaitsForInitialDelay(t *testing.T) {
	now := time.Now()
	defer SetReadyStartForTest(now)()
	yes := true
	c := v1.ContainerStatus{Name: "c", ContainerID: "docker://a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Hour))}}}
	old := c
	old.Ready, old.Started = true, &yes
	pod := &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{old}}}
	notReady := old
	notReady.Ready = false

	for _, tc := range []struct {
		name           string
		pod            *v1.Pod
		probe          *v1.Probe
		ready, started bool
	}{
		{"no initial delay", pod, &v1.Probe{}, true, true},
		{"initial delay passed", pod, &v1.Probe{InitialDelaySeconds: 3500}, true, true},
		{"within the initial delay", pod, &v1.Probe{InitialDelaySeconds: 3700}, false, false},
		{"no probe", pod, nil, false, false},
		{"reported not ready", &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{notReady}}}, &v1.Probe{}, false, true},
	} {
		c := c
		if got := KeepReady(tc.pod, &c, tc.probe); got != tc.ready {
			t.Errorf("%s: KeepReady = %v, want %v", tc.name, got, tc.ready)
		}
		if got := KeepStarted(tc.pod, &c, tc.probe); got != tc.started {
			t.Errorf("%s: KeepStarted = %v, want %v", tc.name, got, tc.started)
		}
	}
}
