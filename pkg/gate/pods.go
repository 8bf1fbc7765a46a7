package gate

import (
	"fmt"
	"sort"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// kills are the kubelet's recorded kills by container ID.
type kills map[string]kubeletcompat.KilledContainer

// reason says why the kubelet killed container id, or that no kill of it
// is recorded.
func (k kills) reason(id string) string {
	if kill, ok := k[id]; ok {
		return fmt.Sprintf("killed by the kubelet at %s: %s", stamp(kill.At), kill.Reason)
	}
	return "no kill of it recorded"
}

// views are what the pods are judged on: the picture, the runtime now, and
// the kills the record names.
type views struct {
	picture, now *snapshot.Snapshot
	kills        kills
}

// judgePod judges one pod of the picture: psb its ready sandbox then, ran
// its containers running then, by name.
func (v views) judgePod(psb snapshot.Sandbox, ran map[string]snapshot.Container) PodVerdict {
	now, k := v.now, v.kills
	pv := PodVerdict{Pod: psb.Pod, UID: psb.UID, Outcome: Kept}
	if len(ran) == 0 {
		pv.Evidence = append(pv.Evidence, "no container ran at the picture: nothing to lose")
		return pv
	}
	nsb, ok := now.ReadySandboxOf(psb.UID)
	switch {
	case !ok:
		return v.judgeStopped(pv, psb, ran)
	case nsb.ID != psb.ID:
		pv.Outcome = Recreated
		pv.Evidence = append(pv.Evidence, fmt.Sprintf("runs in sandbox %s, was %s", short(nsb.ID), short(psb.ID)))
		return pv
	}
	running := now.RunningIn(nsb.ID)
	gone, restarted := 0, 0
	for _, name := range sortedNames(ran) {
		was := ran[name]
		c, runs := running[name]
		_, killed := k[was.ID]
		switch {
		case runs && c.ID == was.ID && !killed:
			pv.Evidence = append(pv.Evidence, fmt.Sprintf("container %s %s runs on", name, short(was.ID)))
		case runs && c.ID == was.ID:
			restarted++
			pv.Evidence = append(pv.Evidence, fmt.Sprintf("container %s %s still listed running, but %s", name, short(was.ID), k.reason(was.ID)))
		case runs:
			restarted++
			pv.Evidence = append(pv.Evidence, fmt.Sprintf("container %s restarted: %s -> %s, %s", name, short(was.ID), short(c.ID), k.reason(was.ID)))
		default:
			gone++
			pv.Evidence = append(pv.Evidence, fmt.Sprintf("container %s %s runs no more (%s), %s", name, short(was.ID), state(now, was.ID), k.reason(was.ID)))
		}
	}
	switch {
	case restarted > 0:
		pv.Outcome = Restarted
	case gone > 0 && len(running) > 0:
		pv.Outcome = ContainerGone
	case gone > 0 && anyKilled(ran, k):
		pv.Outcome = ContainerGone
	case gone > 0:
		// Nothing runs in a sandbox still ready: the pod completes (its
		// sandbox stops next) or the kubelet starts a container again.
		pv.Outcome = Stopping
		pv.Waiting = "the pod's sandbox to stop (it completed) or a container to start (a restart): none of its containers runs"
	}
	return pv
}

// judgeStopped judges a pod of the picture whose UID has no ready sandbox
// now: recreated under another UID (one the picture did not run: a static
// pod in the midst of a change at the picture is two pods of it), killed
// by the kubelet, or gone.
func (v views) judgeStopped(pv PodVerdict, psb snapshot.Sandbox, ran map[string]snapshot.Container) PodVerdict {
	now, k := v.now, v.kills
	other, ok := now.ReadySandbox(psb.Pod)
	if _, inPicture := v.picture.ReadySandboxOf(other.UID); ok && !inPicture {
		pv.Outcome = Recreated
		pv.Evidence = append(pv.Evidence, fmt.Sprintf("runs under uid %s (sandbox %s), was uid %s (sandbox %s)", other.UID, short(other.ID), psb.UID, short(psb.ID)))
		return pv
	}
	pv.Outcome = Gone
	if anyKilled(ran, k) {
		pv.Outcome = Recreated
		for _, name := range sortedNames(ran) {
			if kill, ok := k[ran[name].ID]; ok && kill.Reason != kubeletcompat.ReasonPodKilled {
				pv.Outcome = ContainerGone
			}
		}
	}
	pv.Evidence = append(pv.Evidence, fmt.Sprintf("no ready sandbox of uid %s (was %s)", psb.UID, short(psb.ID)))
	for _, name := range sortedNames(ran) {
		was := ran[name]
		pv.Evidence = append(pv.Evidence, fmt.Sprintf("container %s %s: %s, %s", name, short(was.ID), state(now, was.ID), k.reason(was.ID)))
	}
	return pv
}

// judgeNewPods judges the pods created after the picture, running now or in
// the running kubelet's record: each only for a kill since the swap.
func judgeNewPods(picture, now *snapshot.Snapshot, s *syncs) []PodVerdict {
	old, oldNames := map[string]bool{}, map[string]bool{}
	for _, sb := range picture.Sandboxes {
		old[sb.UID] = true
		oldNames[sb.Pod] = true
	}
	byUID := map[string]*PodVerdict{}
	for _, sb := range now.ReadyPods() {
		if old[sb.UID] || oldNames[sb.Pod] {
			continue // a pod of the picture, or its recreation
		}
		byUID[sb.UID] = &PodVerdict{Pod: sb.Pod, UID: sb.UID, Outcome: New, Evidence: []string{"created after the picture: judged only for a kill"}}
	}
	if s.rec != nil {
		for _, p := range s.rec.Pods {
			if old[p.UID] {
				continue
			}
			for _, c := range p.Containers {
				for _, kill := range c.Kills {
					if kill.At.Before(s.since) {
						continue
					}
					pv := byUID[p.UID]
					if pv == nil {
						pv = &PodVerdict{Pod: p.Namespace + "/" + p.Name, UID: p.UID, Evidence: []string{"created after the picture, runs no more"}}
						byUID[p.UID] = pv
					}
					pv.Outcome = NewKilled
					pv.Evidence = append(pv.Evidence, fmt.Sprintf("container %s %s killed by the kubelet at %s: %s", c.Name, short(kill.ID), stamp(kill.At), kill.Reason))
				}
			}
		}
	}
	out := make([]PodVerdict, 0, len(byUID))
	for _, pv := range byUID {
		out = append(out, *pv)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pod != out[j].Pod {
			return out[i].Pod < out[j].Pod
		}
		return out[i].UID < out[j].UID
	})
	return out
}

func anyKilled(ran map[string]snapshot.Container, k kills) bool {
	for _, c := range ran {
		if _, ok := k[c.ID]; ok {
			return true
		}
	}
	return false
}

// state says what the runtime shows of container id now.
func state(now *snapshot.Snapshot, id string) string {
	c, ok := now.Container(id)
	switch {
	case !ok:
		return "no longer listed"
	case c.State == "EXITED":
		return fmt.Sprintf("exited, code %d", c.ExitCode)
	}
	return "state " + c.State
}

func sortedNames(m map[string]snapshot.Container) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func short(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
