package roll

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// notRejections are the kubelet's warnings that a pod being deleted also
// gets (and FailedMount, which a new kubelet reports for a running pod's
// ConfigMap volume before its cache has it): not a rejection.
var notRejections = map[string]bool{"Unhealthy": true, "BackOff": true, "FailedPreStopHook": true, "FailedKillPod": true, "FailedMount": true}

// judgeGone says why each pod of the picture that the runtime no longer
// runs under its UID (nor under its name: that is judgeNode's
// "recreated") fails the gate, in this order:
//  1. unless the kubelet's own count of admission rejections says none,
//     its Warning events about the pod since the swap (a rejection's);
//  2. the runtime: every container exited with code 0, it completed;
//  3. the kubelet's count: any rejection (or no answer) fails it;
//  4. deleted through the API: its containers' end is the deletion's;
//  5. else a pod Ready at the picture fails; one that was not is not judged.
//
// The Job pods of this roll and of its Plan are not judged.
func (r *run) judgeGone(ctx context.Context) []string {
	beforeData, _ := r.files.ReadFile(BeforeFile)
	runs, names := map[string]bool{}, map[string]bool{}
	for _, p := range r.after {
		runs[p.UID], names[p.Name] = true, true
	}
	var gone []runningPod
	for _, p := range parseRunningPods(string(beforeData)) {
		if !runs[p.UID] && !names[p.Name] {
			gone = append(gone, p)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	jobPods := map[string]bool{}
	for _, uid := range r.st.JobPodUIDs() {
		jobPods[uid] = true
	}
	since := r.gp.swappedAt(r.st)
	rejections := r.kubeletRejections(ctx)
	// The runtime step's gate: the kubelet did not restart, its count is
	// since the picture's.
	if base, err := strconv.Atoi(r.gp.rejectBase); err == nil {
		if n, err := strconv.Atoi(strings.Fields(rejections + " x")[0]); err == nil {
			if n-base == 0 {
				rejections = "0"
			} else {
				rejections = fmt.Sprintf("%d (of %s since the kubelet started)", n-base, rejections)
			}
		}
	}
	readyData, _ := r.files.ReadFile(ReadyBeforeFile)
	wasReady := map[string]bool{}
	for _, p := range parsePodLines(string(readyData)) {
		wasReady[p.UID] = true
	}
	var why []string
	for _, p := range gone {
		why = append(why, r.judgeGonePod(ctx, p, jobPods, since, rejections, wasReady[p.UID])...)
	}
	return why
}

// judgeGonePod judges one gone pod: why it fails the gate (none: it
// passes, or is not judged).
func (r *run) judgeGonePod(ctx context.Context, p runningPod, jobPods map[string]bool, since, rejections string, wasReady bool) []string {
	if jobPods[p.UID] {
		r.log("gate: %s (%s) is a Job pod of this roll: not judged", p.Name, p.UID)
		return nil
	}
	// SUC names its Jobs apply-<plan>-on-<node>-with-<hash>.
	if r.cfg.PlanName != "" && strings.HasPrefix(p.Name, r.cfg.Namespace+"/apply-"+r.cfg.PlanName+"-on-") {
		r.log("gate: %s (%s) is a Job pod of Plan %s: not judged", p.Name, p.UID, r.cfg.PlanName)
		return nil
	}
	ns, _, _ := strings.Cut(p.Name, "/")
	// The kubelet's own count of rejections since it started, when it has
	// one, rules them out: a gone pod's warnings are then its deletion's,
	// or events anyone allowed to create them in its namespace wrote.
	var events []kubeletEvent
	if rejections != "0" && !strings.HasPrefix(rejections, "0 ") {
		var ok bool
		if events, ok = r.kubeletEvents(ctx, ns, p.UID); !ok {
			return []string{"pod " + p.Name + ": gone from the runtime, and the API server did not list the kubelet's events about it: a rejection is not ruled out"}
		}
	}
	for _, e := range events {
		if e.Type == "Warning" && !notRejections[e.Reason] && (e.LastTimestamp == "" || e.LastTimestamp >= since) {
			at := ""
			if e.LastTimestamp != "" {
				at = ", " + e.LastTimestamp
			}
			return []string{fmt.Sprintf("pod %s: the kubelet reported %s (%s%s): rejected", p.Name, e.Reason, e.Type, at)}
		}
	}
	end := r.runtimeEnd(ctx, p)
	if len(end) == 0 {
		r.log("gate: %s (%s) completed: every container exited with code 0 (the runtime)", p.Name, p.UID)
		return nil
	}
	switch {
	case rejections == "" || rejections == "0" || strings.HasPrefix(rejections, "0 "):
	case rejections == "?":
		return []string{fmt.Sprintf("%s; the kubelet's %s/metrics did not answer: a rejection is not ruled out", end[0], r.cfg.KubeletURL)}
	default:
		return []string{fmt.Sprintf("%s; the kubelet rejected %s pod(s) since the swap (kubelet_admission_rejections_total)", end[0], rejections)}
	}
	uid, deletion, ok := r.apiPod(ctx, p.Name)
	if !ok {
		return []string{end[0] + "; the API server did not say whether it was deleted"}
	}
	how := ""
	switch {
	case uid == "":
		how = "gone from it"
	case uid != p.UID:
		how = "its name is pod " + uid + "'s now"
	case deletion != "":
		how = "deleted at " + deletion
	}
	if how != "" {
		r.log("gate: %s (%s) was deleted through the API (%s): its containers' end is the deletion's, not judged", p.Name, p.UID, how)
		return nil
	}
	if wasReady {
		return end
	}
	r.log("gate: %s (%s), not Ready at the picture, ended (%s): not judged", p.Name, p.UID, end[0])
	return nil
}

var exitCodeLine = regexp.MustCompile(`"exitCode":\s*([^,\s]*)`)

// runtimeEnd says why the runtime does not show every container of the
// pod exited with code 0 (crictl on the node); nothing when it does.
func (r *run) runtimeEnd(ctx context.Context, p runningPod) []string {
	res := r.onHost(ctx, "crictl", "ps", "-a", "-q", "--label", "io.kubernetes.pod.uid="+p.UID)
	if !res.OK() {
		return []string{fmt.Sprintf("pod %s: crictl on the node failed (%s): how its containers ended is not known", p.Name, firstLine(string(res.Stderr)))}
	}
	ids := lines(string(res.Stdout))
	if len(ids) == 0 {
		return []string{"pod " + p.Name + ": gone from the runtime without a trace (no container of it left): not assumed complete"}
	}
	var why []string
	for _, id := range ids {
		code := ""
		if m := exitCodeLine.FindStringSubmatch(string(r.onHost(ctx, "crictl", "inspect", id).Stdout)); m != nil {
			code = strings.Map(func(c rune) rune {
				if c == '-' || (c >= '0' && c <= '9') {
					return c
				}
				return -1
			}, m[1])
		}
		if code != "0" {
			if code == "" {
				code = "unknown"
			}
			why = append(why, fmt.Sprintf("pod %s: container %s ended with exit code %s (the runtime)", p.Name, id, code))
		}
	}
	return why
}

var rejectionReason = regexp.MustCompile(`reason="([^"]*)"`)

// kubeletRejections is the kubelet's admission rejections since it
// started, from its own /metrics (kubelet_admission_rejections_total):
// "N (REASON n, ...)"; "" when the kubelet has no such counter; "?" when
// it does not answer.
func (r *run) kubeletRejections(ctx context.Context) string {
	res := r.kubeletGet(ctx, "/metrics")
	if !res.OK() {
		return "?"
	}
	found, n := false, 0.0
	var reasons []string
	for _, line := range lines(string(res.Stdout)) {
		if strings.HasPrefix(line, "# HELP kubelet_admission_rejections_total ") || strings.HasPrefix(line, "# TYPE kubelet_admission_rejections_total ") {
			found = true
		}
		if strings.HasPrefix(line, "kubelet_admission_rejections_total{") {
			found = true
			f := strings.Fields(line)
			v := number(f[len(f)-1])
			n += v
			if m := rejectionReason.FindStringSubmatch(line); v > 0 && m != nil {
				reasons = append(reasons, m[1]+" "+formatNumber(v))
			}
		}
	}
	if !found {
		return ""
	}
	if len(reasons) == 0 {
		return formatNumber(n)
	}
	return formatNumber(n) + " (" + strings.Join(reasons, ", ") + ")"
}
