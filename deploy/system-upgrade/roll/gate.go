package roll

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// gateParams say what a gate judges: the kubelet's swap (the target's
// kubelet, its probe counters since it started: it restarted) or the
// runtime step's (the running kubelet on the new containerd, its counters
// since the picture before the runtime swap: it did not restart).
type gateParams struct {
	// kubelet is the version the node must run; on says on what (the
	// runtime step's containerd) in the verdict.
	kubelet, on string
	// step is kubelet-compat gate's --step; since its --since.
	step, since string
	// swappedAt is when the swap the gate judges began.
	swappedAt func(State) string
	// probeBase: the readiness counters count from ProbesBaseFile, not
	// from zero; probeSince names what they count from.
	probeBase  bool
	probeSince string
	// rejectBase is the kubelet's admission rejections at the picture
	// ("": counted since the kubelet started).
	rejectBase string
}

func (r *run) kubeletGate() gateParams {
	return gateParams{kubelet: r.target, step: "kubelet", probeSince: "since the kubelet started",
		swappedAt: func(s State) string { return s.SwappedAt }}
}

// gateKubelet is the kubelet step's gate and its verdict: passed, or a
// failed step that rolls the node back.
func (r *run) gateKubelet() []action {
	return []action{
		{"gate", func(ctx context.Context) error {
			r.gp = r.kubeletGate()
			ok, err := r.gate(ctx)
			if err != nil {
				return err
			}
			if !ok {
				return &stepFailed{why: "the health gate failed", gate: true}
			}
			return nil
		}},
		{"state: passed", func(context.Context) error {
			if err := r.save(func(s *State) { s.Phase, s.PassedAt = PhasePassed, r.stamp() }); err != nil {
				return dief("%v", err)
			}
			r.log("node %s upgraded to %s", r.cfg.Node, r.target)
			return nil
		}},
	}
}

// gate is the health gate, against the picture saved before the swap: the
// node Ready from the gate's kubelet (the API's word, which can only hold
// the gate back), then, within KC_GATE_TIMEOUT of the gate's start, on the
// node's evidence: the kubelet's own account of every pod of the picture
// (judgeNode), the kubelet running is the gate's (kubelet-compat status),
// every pod Ready at the picture Ready again (the runtime, the kubelet's
// readiness probes), no pod of the picture rejected or gone unexplained
// (judgeGone). It ends at the first look where all of it holds; false
// when it did not pass, with why in the log.
func (r *run) gate(ctx context.Context) (bool, error) {
	gp := r.gp
	started := r.Host.Now()
	deadline := started.Add(time.Duration(r.cfg.GateTimeout) * time.Second)
	for {
		status, v := r.nodeReady(ctx)
		if status == "True" && (v == "v"+gp.kubelet || strings.HasPrefix(v, "v"+gp.kubelet+"+")) {
			break
		}
		if !r.Host.Now().Before(deadline) {
			r.log("gate: node %s not Ready with kubelet v%s after %ds", r.cfg.Node, gp.kubelet, r.cfg.GateTimeout)
			return false, ctx.Err()
		}
		if err := r.sleep(ctx, r.cfg.Poll.D); err != nil {
			return false, err
		}
	}
	readyAt := r.Host.Now()
	// The window's first sample; the counters since the kubelet's start
	// need none.
	a, _ := r.probeSample(ctx)
	r.pr = probeMemory{a: a, aAt: readyAt}
	if gp.probeBase {
		data, _ := r.files.ReadFile(ProbesBaseFile)
		r.pr.zero = parseProbeSample(string(data))
	}
	r.log("gate: node %s Ready with kubelet v%s (%ds)", r.cfg.Node, gp.kubelet, seconds(readyAt.Sub(started)))
	if r.cfg.GateSettle > 0 {
		r.log("gate: waiting the floor KC_GATE_SETTLE %ds before the first look", r.cfg.GateSettle)
		if err := r.sleep(ctx, time.Duration(r.cfg.GateSettle)*time.Second); err != nil {
			return false, err
		}
	}
	if ok, err := r.judgeNode(ctx, deadline); !ok || err != nil {
		return false, err
	}
	readyData, _ := r.files.ReadFile(ReadyBeforeFile)
	readyBefore := parsePodLines(string(readyData))
	for {
		unready := r.lookAgain(ctx, readyBefore)
		if len(unready) == 0 {
			break
		}
		if !r.Host.Now().Before(deadline) {
			r.log("gate: pods Ready before the swap not Ready again after %ds (the runtime, the kubelet's readiness probes):", r.cfg.GateTimeout)
			r.logIndented(strings.Join(unready, "\n"))
			return false, ctx.Err()
		}
		if err := r.sleep(ctx, r.cfg.Poll.D); err != nil {
			return false, err
		}
	}
	if changed := r.judgeGone(ctx); len(changed) > 0 {
		r.log("gate: pods of %s rejected or gone across the swap (the runtime, the kubelet):", r.cfg.Node)
		r.logIndented(strings.Join(changed, "\n"))
		return false, ctx.Err()
	}
	beforeData, _ := r.files.ReadFile(BeforeFile)
	had := byUID(parseRunningPods(string(beforeData)))
	var created []string
	for _, p := range r.after {
		if _, ok := had[p.UID]; !ok {
			created = append(created, p.Name+" ("+p.UID+")")
		}
	}
	if len(created) > 0 {
		r.log("gate: pods created after the picture, logged and not judged:")
		r.logIndented(strings.Join(created, "\n"))
	}
	if len(r.pr.last) > 0 {
		r.log("gate: the readiness probes of the pods Ready at the picture, %s (its prober):", gp.probeSince)
		r.logIndented(strings.Join(probeEvidence(r.pr.zero, r.pr.last, r.after, readyBefore), "\n"))
	}
	r.log("gate: passed: node %s runs kubelet v%s%s; %d pod(s) Ready at the picture are Ready again under their UIDs; no container restarted, no pod recreated or rejected (gate: %ds)",
		r.cfg.Node, gp.kubelet, gp.on, len(readyBefore), seconds(r.Host.Now().Sub(started)))
	return true, ctx.Err()
}

// lookAgain is one look at the node: the kubelet that runs, the pods the
// runtime runs (r.after), the readiness of those Ready at the picture;
// why the gate cannot pass yet, or nothing.
func (r *run) lookAgain(ctx context.Context, readyBefore []podLine) []string {
	r.after = nil
	st, err := r.nodeStatus(ctx)
	if err != nil {
		return []string{"(kubelet-compat status failed: what the runtime runs is not known)"}
	}
	want := "v" + r.gp.kubelet
	if v := st.KubeletVersion; v != want && !strings.HasPrefix(v, want+"+") && !strings.HasPrefix(v, want+"-") {
		if v == "" {
			v = "of no version"
		}
		return []string{fmt.Sprintf("(the node runs kubelet %s (kubelet-compat status), not %s)", v, want)}
	}
	r.after = st.pods()
	b, ok := r.probeSample(ctx)
	if !ok {
		return []string{fmt.Sprintf("(the kubelet's %s/metrics/probes did not answer: readiness not established)", r.cfg.KubeletURL)}
	}
	r.pr.last = b
	var unready []string
	for _, v := range r.readiness(r.after, readyBefore, b) {
		if !v.ok {
			unready = append(unready, v.unready())
		}
	}
	return unready
}

// judgeNode is the node's verdict on the kubelet's own account:
// kubelet-compat gate against the picture (every pod of it synced by the
// kubelet since the gate's since; no container of them restarted, killed
// or gone; no pod recreated), waiting at most until the gate's deadline,
// its evidence per pod in the log.
func (r *run) judgeNode(ctx context.Context, deadline time.Time) (bool, error) {
	left := seconds(deadline.Sub(r.Host.Now()))
	if left <= 0 {
		left = 1
	}
	argv := []string{"kubelet-compat", "gate", "--picture", PictureFile, "--step", r.gp.step}
	if r.gp.since != "" {
		argv = append(argv, "--since", r.gp.since)
	}
	argv = append(argv, "--node-name", r.cfg.Node, "--timeout", fmt.Sprintf("%ds", left),
		"--poll", r.cfg.Poll.Text+"s", "--fixed-wait", r.cfg.GateSyncWait+"s")
	if r.gp.step == "kubelet" {
		// The target is this image's patched kubelet, which writes the
		// sync record: no fixed wait in its place.
		argv = append(argv, "--require-record")
	}
	res := r.onHost(ctx, argv...)
	if aborted(ctx, res.Err) {
		return false, ctx.Err()
	}
	switch res.Code {
	case 0, 4:
		r.log("gate: every pod of the picture synced by the kubelet, no container of them restarted or lost (kubelet-compat gate):")
		r.logIndented(string(res.Stdout))
		return true, nil
	case 2:
		r.log("gate: pods of %s restarted, recreated or lost across the swap (kubelet-compat gate):", r.cfg.Node)
	case 3:
		r.log("gate: the kubelet has not synced every pod of the picture since the swap within %ds (kubelet-compat gate):", r.cfg.GateTimeout)
	default:
		r.log("gate: kubelet-compat gate failed (exit %d): %s", res.Code, cliReason(res.Stderr))
	}
	r.logIndented(string(res.Stdout))
	return false, nil
}

// seconds is d in whole seconds.
func seconds(d time.Duration) int { return int(d / time.Second) }
