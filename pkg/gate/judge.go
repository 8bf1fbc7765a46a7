package gate

import (
	"fmt"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// Judge judges now against the picture. (Naive first version: upgrade.sh's
// gate, a fixed wait and new container IDs only.)
func Judge(picture, now *snapshot.Snapshot, rec *kubeletcompat.SyncRecord, opts Options) Verdict {
	since := opts.Since
	if since.IsZero() {
		since = picture.Taken
	}
	v := Verdict{Step: opts.Step, Since: since, Now: now.Taken, SyncEvidence: ByFixedWait}
	synced := !now.Taken.Before(since.Add(opts.FixedWait))
	for _, pod := range picture.Pods() {
		sb, _ := picture.ReadySandbox(pod)
		pv := PodVerdict{Pod: pod, UID: sb.UID, Outcome: Kept, Synced: synced}
		asb, ok := now.ReadySandbox(pod)
		had := map[string]bool{}
		for _, c := range picture.Running(pod) {
			had[c.ID] = true
		}
		switch {
		case !ok:
			pv.Outcome = Gone
		case asb.UID != sb.UID:
			pv.Outcome = Recreated
		default:
			for name, c := range now.Running(pod) {
				if len(had) > 0 && !had[c.ID] {
					pv.Outcome = Restarted
					pv.Evidence = append(pv.Evidence, fmt.Sprintf("runs container %s %s, created after the picture", name, c.ID))
				}
			}
		}
		if !synced && pv.Outcome == Kept {
			pv.Waiting = "the fixed wait"
		}
		v.Pods = append(v.Pods, pv)
	}
	v.Result = result(v)
	return v
}

// result is the overall result of the pods' verdicts.
func result(v Verdict) Result {
	gone, waiting := false, v.Waiting != ""
	for _, p := range v.Pods {
		switch {
		case p.Outcome.Lost():
			return Lost
		case p.Waiting != "":
			waiting = true
		case p.Outcome == Gone:
			gone = true
		}
	}
	switch {
	case waiting:
		return NotYet
	case gone:
		return GoneOnly
	}
	return Passed
}
