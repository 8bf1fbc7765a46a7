package app

import (
	"fmt"
	"io"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/gate"
)

// writeGateText prints the verdict: what it was judged on, then each pod
// with its evidence.
func writeGateText(w io.Writer, r *gateReport) error {
	v := r.Verdict
	fmt.Fprintf(w, "gate %s step on node %s: %s\n", v.Step, r.Node, v.Result)
	fmt.Fprintf(w, "picture %s taken %s, kubelet pid %d started %s\n", r.Picture, stamp(r.PictureTaken), r.PictureKubelet.PID, stamp(r.PictureKubelet.StartedAt))
	fmt.Fprintf(w, "running kubelet pid %d started %s; syncs count from %s; judged at %s\n", r.Kubelet.PID, stamp(r.Kubelet.StartedAt), stamp(v.Since), stamp(v.Now))
	fmt.Fprintf(w, "sync evidence: %s: %s\n", v.SyncEvidence, v.Record)
	if r.RecordProblem != "" {
		fmt.Fprintf(w, "record %s: %s\n", r.RecordPath, r.RecordProblem)
	}
	if v.Waiting != "" {
		fmt.Fprintf(w, "waiting for: %s\n", v.Waiting)
	}
	if len(v.Pods) == 0 {
		fmt.Fprintln(w, "no pod ran at the picture or runs now")
	}
	for _, p := range v.Pods {
		fmt.Fprintf(w, "%s uid %s: %s%s\n", p.Pod, p.UID, p.Outcome, podState(p))
		for _, e := range p.Evidence {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	return nil
}

// podState says whether a pod was synced or what it waits for.
func podState(p gate.PodVerdict) string {
	switch {
	case p.Waiting != "":
		return ", waiting for " + p.Waiting
	case p.Synced:
		return ", synced"
	}
	return ""
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "(unknown)"
	}
	return t.UTC().Format(time.RFC3339)
}
