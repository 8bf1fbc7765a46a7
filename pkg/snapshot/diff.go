package snapshot

import (
	"fmt"
	"sort"
)

// Change kinds, from the worst down.
const (
	PodGone           = "pod-gone"           // no ready sandbox after
	SandboxChanged    = "sandbox-changed"    // the pod runs in another sandbox (recreated)
	ContainerGone     = "container-gone"     // a running container is no longer running
	ContainerReplaced = "container-replaced" // another container runs under the same name
	AttemptChanged    = "attempt-changed"
	RestartCountDiff  = "restart-count-changed"
	StartedAtChanged  = "started-at-changed"
	InitRerun         = "init-rerun" // an exited (init) container ran again
)

// Change is one difference between two snapshots.
type Change struct {
	Pod       string `json:"pod"`
	Container string `json:"container,omitempty"`
	Kind      string `json:"kind"`
	Detail    string `json:"detail"`
}

// Diff is what changed for the pods that ran before.
type Diff struct {
	// Pods and Containers count what ran before (ready sandboxes, running
	// containers).
	Pods       int `json:"pods"`
	Containers int `json:"containers"`
	// Restarts counts containers running before that are not the same
	// container, same attempt, after: the number the e2e asserts on.
	Restarts int `json:"restarts"`
	// RecreatedPods counts pods whose sandbox changed.
	RecreatedPods int `json:"recreatedPods"`
	// UIDChanges counts pods whose sandbox runs under another pod UID
	// after (static pods: the new kubelet derived another UID; always
	// one of RecreatedPods).
	UIDChanges int      `json:"uidChanges"`
	Changes    []Change `json:"changes,omitempty"`
	// RestartedPods lists the pods with at least one restart.
	RestartedPods []string `json:"restartedPods,omitempty"`
}

// Compare diffs the pods that ran in before (ready sandboxes) against after.
func Compare(before, after *Snapshot) Diff {
	var d Diff
	restartedPods := map[string]bool{}
	for _, pod := range before.Pods() {
		d.Pods++
		bsb, _ := before.ReadySandbox(pod)
		brun := before.Running(pod)
		d.Containers += len(brun)
		asb, ok := after.ReadySandbox(pod)
		if !ok {
			d.Changes = append(d.Changes, Change{Pod: pod, Kind: PodGone, Detail: "no ready sandbox after the swap"})
			d.Restarts += len(brun)
			if len(brun) > 0 {
				restartedPods[pod] = true
			}
			continue
		}
		if asb.UID != bsb.UID {
			d.UIDChanges++
		}
		if asb.ID != bsb.ID {
			d.RecreatedPods++
			d.Changes = append(d.Changes, Change{Pod: pod, Kind: SandboxChanged,
				Detail: fmt.Sprintf("sandbox %s (uid %s) -> %s (uid %s)", short(bsb.ID), bsb.UID, short(asb.ID), asb.UID)})
		}
		arun := after.Running(pod)
		names := make([]string, 0, len(brun))
		for n := range brun {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			b := brun[name]
			a, ok := arun[name]
			restarted := true
			switch {
			case !ok:
				d.Changes = append(d.Changes, Change{Pod: pod, Container: name, Kind: ContainerGone, Detail: fmt.Sprintf("%s attempt %d no longer running", short(b.ID), b.Attempt)})
			case a.ID != b.ID:
				d.Changes = append(d.Changes, Change{Pod: pod, Container: name, Kind: ContainerReplaced, Detail: fmt.Sprintf("%s attempt %d -> %s attempt %d", short(b.ID), b.Attempt, short(a.ID), a.Attempt)})
			default:
				restarted = false
				if a.Attempt != b.Attempt {
					restarted = true
					d.Changes = append(d.Changes, Change{Pod: pod, Container: name, Kind: AttemptChanged, Detail: fmt.Sprintf("attempt %d -> %d", b.Attempt, a.Attempt)})
				}
				if a.RestartCount != b.RestartCount {
					restarted = true
					d.Changes = append(d.Changes, Change{Pod: pod, Container: name, Kind: RestartCountDiff, Detail: fmt.Sprintf("restart count %s -> %s", b.RestartCount, a.RestartCount)})
				}
				if !a.StartedAt.Equal(b.StartedAt) {
					restarted = true
					d.Changes = append(d.Changes, Change{Pod: pod, Container: name, Kind: StartedAtChanged, Detail: fmt.Sprintf("started %s -> %s", b.StartedAt.Format("15:04:05.000"), a.StartedAt.Format("15:04:05.000"))})
				}
			}
			if restarted {
				d.Restarts++
				restartedPods[pod] = true
			}
		}
		// Exited containers of the same sandbox (init containers) must not
		// have run again.
		if asb.ID == bsb.ID {
			exitedBefore := map[string]uint32{}
			for _, c := range before.Containers {
				if c.SandboxID == bsb.ID && c.State == "EXITED" {
					if _, running := brun[c.Name]; !running && c.Attempt >= exitedBefore[c.Name] {
						exitedBefore[c.Name] = c.Attempt
					}
				}
			}
			for _, c := range after.Containers {
				if last, ok := exitedBefore[c.Name]; ok && c.SandboxID == asb.ID && c.Attempt > last {
					d.Changes = append(d.Changes, Change{Pod: pod, Container: c.Name, Kind: InitRerun, Detail: fmt.Sprintf("attempt %d -> %d", last, c.Attempt)})
					restartedPods[pod] = true
				}
			}
		}
	}
	for p := range restartedPods {
		d.RestartedPods = append(d.RestartedPods, p)
	}
	sort.Strings(d.RestartedPods)
	return d
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
