package app

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
)

// mirrorStatus returns what the previous kubelet last reported for the
// static pod that runs under uid as ns/name: its mirror
// pod's Ready condition, and the Ready and Started of each container the
// mirror names by an ID under which the runtime runs that container in a
// sandbox of this pod now. The next kubelet gives the static pod this status
// (kubeletcompat.StaticPodStatus), as the API server gives an API pod the
// status its previous kubelet wrote; the prober keeps those very containers
// Ready only until their first probe result.
//
// The mirror is specIndex.mirror's (any pod creator can set the
// config.mirror annotation), and the runtime, not the mirror, says which
// containers run.
func mirrorStatus(idx *specIndex, st *nodeState, uid, ns, name string) (ready bool, containers []kubeletcompat.StaticPodContainer) {
	if idx == nil {
		return false, nil
	}
	mirror, ok := idx.mirror(uid, ns, name)
	if !ok {
		return false, nil
	}
	running := map[string]string{} // container ID -> name
	for _, c := range st.containers {
		if c.State != cri.ContainerRunning || c.PodUID != uid {
			continue
		}
		if sb := st.byID[c.SandboxID]; sb == nil || sb.UID != uid || !sb.IsStatic() {
			continue
		}
		running[c.ID] = c.Name
	}
	for _, cs := range mirror.Status.ContainerStatuses {
		sep := strings.Index(cs.ContainerID, "://")
		if sep < 0 || cs.State.Running == nil || running[cs.ContainerID[sep+3:]] != cs.Name {
			continue
		}
		containers = append(containers, kubeletcompat.StaticPodContainer{
			Name:        cs.Name,
			ContainerID: cs.ContainerID,
			Ready:       cs.Ready,
			Started:     cs.Started != nil && *cs.Started,
		})
	}
	if len(containers) == 0 {
		return false, nil // nothing the runtime still runs: no status
	}
	for _, c := range mirror.Status.Conditions {
		if c.Type == v1.PodReady {
			ready = c.Status == v1.ConditionTrue
		}
	}
	return ready, containers
}

// readySummary is how record lists a static pod's recorded status.
func readySummary(sp kubeletcompat.StaticPod) string {
	if len(sp.Containers) == 0 {
		return "  (no mirror pod status)"
	}
	n := 0
	for _, c := range sp.Containers {
		if c.Ready {
			n++
		}
	}
	return fmt.Sprintf("  %d/%d container(s) Ready", n, len(sp.Containers))
}
