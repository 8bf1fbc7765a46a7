package kubeletcompat

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// RestartGrace is how long before this kubelet process started a container
// must have started to count as one a previous kubelet ran (1.35's
// kubeletRestartGracePeriod).
const RestartGrace = 10 * time.Second

// readyStart is the kubelet start that WasReady and WasStarted compare with;
// tests move it.
var readyStart = processStart

// SetReadyStartForTest sets the kubelet start WasReady and WasStarted use
// and returns a function that restores it. For tests only.
func SetReadyStartForTest(t time.Time) (restore func()) {
	old := readyStart
	readyStart = t
	return func() { readyStart = old }
}

// reported returns apiPod's status entry for the container c describes, when
// it is the very container the runtime now runs (same name and container ID)
// and c shows it running since before this kubelet process started (less
// RestartGrace). c is the status the kubelet generated from the runtime;
// apiPod is the pod as the kubelet was given it (the API server's copy, with
// the status the previous kubelet last wrote).
func reported(apiPod *v1.Pod, c *v1.ContainerStatus) *v1.ContainerStatus {
	if apiPod == nil || c == nil || c.ContainerID == "" || c.State.Running == nil {
		return nil
	}
	started := c.State.Running.StartedAt.Time
	if started.IsZero() || !started.Before(readyStart.Add(-RestartGrace)) {
		return nil
	}
	for _, list := range [][]v1.ContainerStatus{apiPod.Status.ContainerStatuses, apiPod.Status.InitContainerStatuses} {
		for i := range list {
			old := &list[i]
			if old.Name == c.Name && old.ContainerID == c.ContainerID && old.State.Running != nil {
				return old
			}
		}
	}
	return nil
}

// WasReady reports whether the running container c was reported Ready
// before this kubelet started: the pod's status says the container with c's
// ID was running and Ready, and the runtime runs that container since before
// this kubelet started. The prober keeps such a container Ready only until
// its readiness probe gives a first result: pod status can be written by API
// users, so it is a hint that the first probe (or the container stopping or
// being replaced) ends, never a result.
func WasReady(apiPod *v1.Pod, c *v1.ContainerStatus) bool {
	old := reported(apiPod, c)
	return old != nil && old.Ready
}

// WasStarted is WasReady for Started: the container with c's ID was reported
// started (or Ready) and still runs since before this kubelet started, so its
// startup probe had passed.
func WasStarted(apiPod *v1.Pod, c *v1.ContainerStatus) bool {
	old := reported(apiPod, c)
	return old != nil && (old.Ready || old.Started != nil && *old.Started)
}

// KeepReady reports whether the prober keeps the running container c Ready
// until the first result of its readiness probe p: WasReady, and p is due,
// its initialDelaySeconds passed since c started. Before that the probe does
// not run, so a keep would rest on the old status alone; upstream (<= 1.34)
// reports such a container NotReady, and so does the prober.
func KeepReady(apiPod *v1.Pod, c *v1.ContainerStatus, p *v1.Probe) bool {
	return probeDue(p, c) && WasReady(apiPod, c)
}

// KeepStarted is KeepReady for Started: WasStarted, and the startup probe p
// is due. The prober keeps such a container started until the first result
// of p.
func KeepStarted(apiPod *v1.Pod, c *v1.ContainerStatus, p *v1.Probe) bool {
	return probeDue(p, c) && WasStarted(apiPod, c)
}

// probeDue reports whether the prober runs probe p on the running container
// c: p's initialDelaySeconds have passed since c started, in whole seconds
// as the prober's worker counts them.
func probeDue(p *v1.Probe, c *v1.ContainerStatus) bool {
	if p == nil || c == nil || c.State.Running == nil {
		return false
	}
	return int32(time.Since(c.State.Running.StartedAt.Time).Seconds()) >= p.InitialDelaySeconds
}
