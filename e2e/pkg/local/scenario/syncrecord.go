package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// recordWait bounds how long the check waits for the kubelet to write the
// syncs it made before the check (it writes at most once a second).
const recordWait = 5 * time.Second

// recordedKubelet is the kubelet the sync record must name.
type recordedKubelet struct {
	PID     int
	Patched bool
}

// syncRecordCheck reads the sync record in the kubelet's root dir and holds
// it against what the runtime showed around the swap (syncRecordVerdict).
func (s *Scenario) syncRecordCheck(step, variant string, k recordedKubelet, before, after *snapshot.Snapshot, keptLogLines int) report.Check {
	path := filepath.Join(s.kubeletDir(), kubeletcompat.RecordFileName)
	var rec *kubeletcompat.SyncRecord
	var err error
	deadline := time.Now().Add(recordWait)
	for {
		rec, err = kubeletcompat.ReadSyncRecord(path, os.Getuid())
		// The patched kubelet writes within a second of its syncs: wait
		// for a record of this kubelet covering the picture's pods.
		if !k.Patched || time.Now().After(deadline) || (err == nil && rec.KubeletPID == k.PID && recordCovers(rec, before, after)) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	c := syncRecordVerdict(rec, err, k, before, after, keptLogLines)
	c.Name = fmt.Sprintf("%s %s: %s", step, variant, c.Name)
	return c
}

// keptEventsCheck holds the kubelet's ContainersKept events (API mode)
// against its sync record: one event on each pod whose containers the
// record lists as kept, on no other pod, and none from the unpatched
// kubelet.
func (s *Scenario) keptEventsCheck(ctx context.Context, step, variant string, k recordedKubelet, since time.Time) report.Check {
	c := report.Check{Name: fmt.Sprintf("%s %s: a ContainersKept event on each pod the kubelet's record keeps containers of", step, variant)}
	var rec *kubeletcompat.SyncRecord
	if k.Patched {
		var err error
		if rec, err = kubeletcompat.ReadSyncRecord(filepath.Join(s.kubeletDir(), kubeletcompat.RecordFileName), os.Getuid()); err != nil {
			c.Detail = fmt.Sprintf("reading the record: %v", err)
			return c
		}
	}
	cs, err := s.cp.Client()
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The kubelet's recorder sends its events asynchronously: wait a
	// little for those the record calls for.
	deadline := time.Now().Add(recordWait)
	for {
		events, err := cs.CoreV1().Events(corpus.Namespace).List(cctx, metav1.ListOptions{FieldSelector: "reason=ContainersKept"})
		if err != nil {
			c.Detail = fmt.Sprintf("listing events: %v", err)
			return c
		}
		var got []string
		for _, e := range events.Items {
			if e.Source.Component == "kubelet" && !eventTime(e).Before(since) {
				got = append(got, string(e.InvolvedObject.UID))
			}
		}
		c = keptEventsVerdict(c.Name, rec, got)
		if c.Passed || time.Now().After(deadline) {
			return c
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// eventTime is when an event last happened, in whichever field its
// sender set.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// keptEventsVerdict compares the pods with a ContainersKept event (their
// UIDs, got) with the pods the record lists kept containers of (none
// without a record).
func keptEventsVerdict(name string, rec *kubeletcompat.SyncRecord, got []string) report.Check {
	want := map[string]bool{}
	if rec != nil {
		for _, p := range rec.Pods {
			for _, cr := range p.Containers {
				if cr.Kept != nil {
					want[p.UID] = true
				}
			}
		}
	}
	seen := map[string]int{}
	for _, uid := range got {
		seen[uid]++
	}
	var problems []string
	for uid := range want {
		if seen[uid] == 0 {
			problems = append(problems, "no event on pod "+uid)
		}
	}
	for uid, n := range seen {
		switch {
		case !want[uid]:
			problems = append(problems, "an event on pod "+uid+", which the record keeps nothing of")
		case n > 1:
			problems = append(problems, fmt.Sprintf("%d events on pod %s (once per pod)", n, uid))
		}
	}
	sort.Strings(problems)
	c := report.Check{Name: name, Passed: len(problems) == 0}
	c.Detail = fmt.Sprintf("%d pod(s) with kept containers in the record, %d ContainersKept event(s) from the kubelet", len(want), len(got))
	if len(problems) > 0 {
		c.Detail += "; " + strings.Join(problems, "; ")
	}
	return c
}

// recordCovers says whether rec has a sync of every pod that runs under
// the same UID before and after.
func recordCovers(rec *kubeletcompat.SyncRecord, before, after *snapshot.Snapshot) bool {
	for _, pod := range samePods(before, after) {
		if p, ok := rec.Pod(pod.UID); !ok || p.Syncs == 0 {
			return false
		}
	}
	return true
}

// samePods are the sandboxes of the pods that run under the same UID
// before and after, by pod name.
func samePods(before, after *snapshot.Snapshot) []snapshot.Sandbox {
	var out []snapshot.Sandbox
	for _, name := range before.Pods() {
		b, _ := before.ReadySandbox(name)
		if a, ok := after.ReadySandbox(name); ok && a.UID == b.UID {
			out = append(out, b)
		}
	}
	return out
}

// syncRecordVerdict is the check of the kubelet's sync record after a
// swap. The patched kubelet's record must name it (PID), account for a
// sync of every pod that runs under the same UID before and after, show
// each container that kept its ID under that ID, name as killed as many of
// the picture's containers as the runtime shows restarted in those pods, and
// list as kept exactly as many containers as the kubelet logged keeping.
// The unpatched kubelet writes none.
func syncRecordVerdict(rec *kubeletcompat.SyncRecord, readErr error, k recordedKubelet, before, after *snapshot.Snapshot, keptLogLines int) report.Check {
	c := report.Check{Name: "the kubelet's sync record accounts for every pod"}
	if !k.Patched {
		c.Name = "the unpatched kubelet writes no sync record"
		switch {
		case os.IsNotExist(readErr):
			c.Passed, c.Detail = true, "no record"
		case readErr != nil:
			c.Detail = fmt.Sprintf("reading the record: %v", readErr)
		default:
			c.Passed = rec.KubeletPID != k.PID
			c.Detail = fmt.Sprintf("a record of kubelet pid %d (%s), the unpatched kubelet is pid %d", rec.KubeletPID, rec.KubeletVersion, k.PID)
		}
		return c
	}
	if readErr != nil {
		c.Detail = fmt.Sprintf("reading the record: %v", readErr)
		return c
	}
	if rec.KubeletPID != k.PID {
		c.Detail = fmt.Sprintf("the record names kubelet pid %d (%s), the kubelet is pid %d", rec.KubeletPID, rec.KubeletVersion, k.PID)
		return c
	}
	var problems []string
	synced, killed, restarts, kept, errs := 0, 0, 0, 0, 0
	for _, p := range rec.Pods {
		for _, cr := range p.Containers {
			if cr.Kept != nil {
				kept++
			}
		}
	}
	for _, sb := range samePods(before, after) {
		p, ok := rec.Pod(sb.UID)
		if !ok || p.Syncs == 0 {
			problems = append(problems, fmt.Sprintf("%s (%s): no sync recorded", sb.Pod, sb.UID))
			continue
		}
		synced++
		if p.LastSyncError != "" {
			errs++
		}
		brun, arun := before.Running(sb.Pod), after.Running(sb.Pod)
		for name, bc := range brun {
			cr, _ := p.Container(name)
			for _, kill := range cr.Kills {
				if kill.ID == bc.ID {
					killed++
				}
			}
			ac, ok := arun[name]
			if !ok || ac.ID != bc.ID {
				restarts++
			}
			if ok && ac.ID == bc.ID && cr.ID != bc.ID {
				problems = append(problems, fmt.Sprintf("%s/%s: runs as %.12s, the record's last sync saw %q", sb.Pod, name, bc.ID, shortID(cr.ID)))
			}
		}
	}
	if killed != restarts {
		problems = append(problems, fmt.Sprintf("the record kills %d container(s) of the picture, the runtime shows %d restarted in those pods", killed, restarts))
	}
	if kept != keptLogLines {
		problems = append(problems, fmt.Sprintf("the record keeps %d container(s), the kubelet logged keeping %d", kept, keptLogLines))
	}
	sort.Strings(problems)
	c.Passed = len(problems) == 0
	c.Detail = fmt.Sprintf("record of kubelet %s pid %d (compat file %s): %d pod(s) synced under the same UID, %d with a sync error, %d container(s) kept (log: %d), %d of the picture killed (runtime: %d restarted in those pods)",
		rec.KubeletVersion, rec.KubeletPID, rec.CompatFile, synced, errs, kept, keptLogLines, killed, restarts)
	if len(problems) > 0 {
		c.Detail += "; " + strings.Join(problems, "; ")
	}
	return c
}
