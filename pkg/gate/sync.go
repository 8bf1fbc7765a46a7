package gate

import (
	"fmt"
	"strings"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// syncs decides whether the kubelet synced a pod since the swap: on the
// running kubelet's sync record, else on the fixed wait.
type syncs struct {
	opts  Options
	since time.Time
	now   time.Time
	// rec is the record when it is the running kubelet's, else nil.
	rec      *kubeletcompat.SyncRecord
	evidence SyncEvidence
	// about names the record's kubelet, or why no record counts.
	about string
	// waiting is what the whole node waits for, empty when nothing.
	waiting string
}

func newSyncs(picture, now *snapshot.Snapshot, rec *kubeletcompat.SyncRecord, opts Options) *syncs {
	s := &syncs{opts: opts, since: opts.Since, now: now.Taken}
	if s.since.IsZero() {
		s.since = picture.Taken
	}
	k := opts.Kubelet
	if opts.Step == StepKubelet {
		switch {
		case k.PID == 0:
			s.waiting = "the running kubelet is unknown"
		case !k.StartedAt.After(picture.Taken):
			s.waiting = fmt.Sprintf("the running kubelet (pid %d) started %s, before the picture (%s): it has not restarted yet", k.PID, stamp(k.StartedAt), stamp(picture.Taken))
		case k.StartedAt.After(s.since):
			s.since = k.StartedAt
		}
	}
	ok, about := recordCounts(rec, opts)
	s.about = about
	switch {
	case ok:
		s.rec, s.evidence = rec, ByRecord
	case opts.RequireRecord:
		s.evidence = ByNothing
	default:
		s.evidence = ByFixedWait
	}
	return s
}

// recordCounts says whether rec is the running kubelet's: same PID, and a
// start within the slack of the one /proc gives; about names the record's
// kubelet or says why it does not count.
func recordCounts(rec *kubeletcompat.SyncRecord, opts Options) (ok bool, about string) {
	k := opts.Kubelet
	if rec == nil {
		return false, "no sync record (the kubelet writes none, or it was refused)"
	}
	whose := fmt.Sprintf("kubelet %s pid %d started %s", rec.KubeletVersion, rec.KubeletPID, stamp(rec.KubeletStartedAt))
	slack := opts.StartSlack
	if slack == 0 {
		slack = DefaultStartSlack
	}
	switch {
	case k.PID == 0:
		return false, "the sync record is " + whose + "'s, and the running kubelet is unknown"
	case rec.KubeletPID != k.PID:
		return false, fmt.Sprintf("the sync record is %s's, not the running kubelet's (pid %d)", whose, k.PID)
	case absDuration(rec.KubeletStartedAt.Sub(k.StartedAt)) > slack:
		return false, fmt.Sprintf("the sync record is %s's, not the running kubelet's (pid %d started %s)", whose, k.PID, stamp(k.StartedAt))
	}
	return true, fmt.Sprintf("the sync record of the running %s, written %s", whose, stamp(rec.WrittenAt))
}

// check decides whether the kept pod pv was synced since the swap.
func (s *syncs) check(pv *PodVerdict, ran map[string]snapshot.Container) {
	if s.waiting != "" {
		return
	}
	switch s.evidence {
	case ByNothing:
		pv.Waiting = "a sync record of the running kubelet (required: no fixed wait)"
	case ByFixedWait:
		end := s.since.Add(s.opts.FixedWait)
		if s.now.Before(end) {
			pv.Waiting = fmt.Sprintf("the fixed wait, until %s (no sync record of the running kubelet)", stamp(end))
			return
		}
		pv.Synced = true
		pv.Evidence = append(pv.Evidence, fmt.Sprintf("assumed synced: the fixed wait of %s since %s is over (no sync record of the running kubelet)", s.opts.FixedWait, stamp(s.since)))
	case ByRecord:
		s.checkRecord(pv, ran)
	}
}

func (s *syncs) checkRecord(pv *PodVerdict, ran map[string]snapshot.Container) {
	pr, ok := s.rec.Pod(pv.UID)
	switch {
	case !ok:
		pv.Waiting = "a sync of the pod: the running kubelet's record has none"
		return
	case pr.LastSyncAt.Before(s.since):
		pv.Waiting = fmt.Sprintf("a sync of the pod after %s: the last was at %s", stamp(s.since), stamp(pr.LastSyncAt))
		return
	case pr.LastSyncError != "" && !backingOff(pr.LastSyncError):
		pv.Waiting = fmt.Sprintf("a sync of the pod without error: the last, at %s, failed: %s", stamp(pr.LastSyncAt), pr.LastSyncError)
		return
	}
	pv.Synced = true
	pv.Evidence = append(pv.Evidence, fmt.Sprintf("synced at %s (%d sync(s) by the running kubelet)", stamp(pr.LastSyncAt), pr.Syncs))
	if pr.LastSyncError != "" {
		pv.Evidence = append(pv.Evidence, "its last sync waits out a back-off: "+pr.LastSyncError)
	}
	for _, name := range sortedNames(ran) {
		c := ran[name]
		cr, ok := pr.Container(name)
		switch {
		case ok && cr.Kept != nil && cr.Kept.ID == c.ID:
			pv.Evidence = append(pv.Evidence, fmt.Sprintf("container %s %s kept by the compat file: %s", name, short(c.ID), cr.Kept.Reason))
		case ok && cr.ID != c.ID:
			pv.Evidence = append(pv.Evidence, fmt.Sprintf("container %s: the last sync saw %q running, the runtime runs %s", name, short(cr.ID), short(c.ID)))
		}
	}
}

// killsOf returns the kills rec records, by container ID.
func killsOf(rec *kubeletcompat.SyncRecord) kills {
	out := kills{}
	if rec == nil {
		return out
	}
	for _, p := range rec.Pods {
		for _, c := range p.Containers {
			for _, kill := range c.Kills {
				out[kill.ID] = kill
			}
		}
	}
	return out
}

// backingOff says whether a sync's error is the kubelet waiting out a
// back-off (CrashLoopBackOff, ImagePullBackOff): the sync decided what to
// do with every container and chose to wait, as it does on every sync of
// such a pod, so the error proves the sync as well as a success would.
func backingOff(syncErr string) bool {
	return strings.Contains(syncErr, "BackOff") || strings.Contains(syncErr, "back-off")
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
