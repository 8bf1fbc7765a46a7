package gate

import (
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// Judge judges the runtime's view now against the picture taken before the
// swap, with the kubelet's sync record rec (nil when there is none or it
// was refused): per pod of the picture by pod UID and container ID, then
// the pods created since. rec names why the kubelet killed a container
// whichever kubelet wrote it; it proves syncs only when it is the running
// kubelet's (opts.Kubelet).
func Judge(picture, now *snapshot.Snapshot, rec *kubeletcompat.SyncRecord, opts Options) Verdict {
	s := newSyncs(picture, now, rec, opts)
	v := Verdict{Step: opts.Step, Since: s.since, Now: now.Taken, SyncEvidence: s.evidence, Record: s.about, Waiting: s.waiting, Pods: []PodVerdict{}}
	views := views{picture: picture, now: now, kills: killsOf(rec)}
	for _, sb := range picture.ReadyPods() {
		ran := picture.RunningIn(sb.ID)
		pv := views.judgePod(sb, ran)
		if pv.Outcome == Kept && len(ran) > 0 {
			s.check(&pv, ran)
		}
		v.Pods = append(v.Pods, pv)
	}
	v.Pods = append(v.Pods, judgeNewPods(picture, now, s)...)
	v.Result = result(v)
	return v
}

// result is the overall result of the pods' verdicts: a loss first, then
// anything not yet known, then pods gone.
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
