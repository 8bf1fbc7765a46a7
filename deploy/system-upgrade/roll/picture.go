package roll

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// picture is the record once the node's pods are Ready (settle), and the
// picture a gate judges against, saved on the node (PictureFile by
// kubelet-compat picture, BeforeFile, ReadyBeforeFile): the kubelet's
// swap's and the runtime step's. kubelet-compat
// status lists the pods the runtime runs only while a file is in force: a
// first record gives settle the pods to judge; the record that counts is
// the one after it.
func (r *run) picture() []action {
	return []action{
		{"record", r.record},
		{"settle", r.settle},
		{"record again", r.record},
		{"picture", func(ctx context.Context) error {
			if res := r.onHostLogged(ctx, "kubelet-compat", "picture", "--node-name", r.cfg.Node, "-o", PictureFile); !res.OK() {
				return failRollf("kubelet-compat picture failed")
			}
			return nil
		}},
		{"picture: saved", r.savePicture},
	}
}

func (r *run) record(ctx context.Context) error {
	if res := r.onHostLogged(ctx, "kubelet-compat", "record", "--kubeconfig", r.cfg.NodeKubeconfig); !res.OK() {
		return failRollf("kubelet-compat record failed")
	}
	return nil
}

// nodeStatus reads kubelet-compat status -o json on the node.
func (r *run) nodeStatus(ctx context.Context) (nodeStatus, error) {
	res := r.onHost(ctx, "kubelet-compat", "status", "-o", "json", "--kubeconfig", r.cfg.NodeKubeconfig)
	r.Err.Write(res.Stderr)
	if !res.OK() {
		return nodeStatus{}, fmt.Errorf("kubelet-compat status failed")
	}
	s, err := parseNodeStatus(res.Stdout)
	if err != nil {
		return nodeStatus{}, fmt.Errorf("kubelet-compat status failed: its JSON: %v", err)
	}
	return s, nil
}

// settle waits, before the record, until every pod the runtime runs is
// Ready by the node's evidence (readiness), at most KC_GATE_TIMEOUT
// (kubeadm upgrade apply restarts the API server: controllers that lose
// their lease exit and back off); the gate judges the readiness of the
// pods Ready then alone.
func (r *run) settle(ctx context.Context) error {
	deadline := r.Host.Now().Add(time.Duration(r.cfg.GateTimeout) * time.Second)
	a, ok := r.probeSample(ctx)
	if !ok {
		return failRollf("the kubelet's %s/metrics/probes did not answer", r.cfg.KubeletURL)
	}
	r.pr.a, r.pr.aAt, r.pr.zero = a, r.Host.Now(), nil
	for {
		st, err := r.nodeStatus(ctx)
		if err != nil {
			return failRollf("kubelet-compat status failed")
		}
		now := st.pods()
		b, ok := r.probeSample(ctx)
		if !ok {
			return failRollf("the kubelet's %s/metrics/probes did not answer", r.cfg.KubeletURL)
		}
		judged := r.readiness(now, podsOf(now, r.pr.a, b), b)
		var unready []string
		r.ready = nil
		for _, v := range judged {
			if v.ok {
				r.ready = append(r.ready, v.pod)
			} else {
				unready = append(unready, v.unready())
			}
		}
		if len(unready) == 0 {
			return nil
		}
		if !r.Host.Now().Before(deadline) {
			r.log("pods of %s not Ready after %ds (the runtime, the kubelet's readiness probes); recording as they are, the gate will not judge their readiness:",
				r.cfg.Node, r.cfg.GateTimeout)
			r.logIndented(strings.Join(unready, "\n"))
			return nil
		}
		if err := r.sleep(ctx, r.cfg.Poll.D); err != nil {
			return err
		}
	}
}

// savePicture saves what the runtime runs (BeforeFile) and those of it
// Ready at the settle (ReadyBeforeFile), and logs the picture.
func (r *run) savePicture(ctx context.Context) error {
	st, err := r.nodeStatus(ctx)
	if err != nil {
		return failRollf("kubelet-compat status failed")
	}
	before := st.pods()
	if err := put(r.files, BeforeFile, []byte(formatRunningPods(before))); err != nil {
		return dief("writing %s: %v", BeforeFile, err)
	}
	runs := byUID(before)
	var ready []podLine
	probed := 0
	for _, p := range r.ready {
		if _, ok := runs[p.UID]; ok {
			ready = append(ready, p)
			probed += len(p.Containers)
		}
	}
	if err := put(r.files, ReadyBeforeFile, []byte(formatPodLines(ready))); err != nil {
		return dief("writing %s: %v", ReadyBeforeFile, err)
	}
	r.log("the picture: %d pod(s) the runtime runs, %d of them Ready (the runtime, the kubelet's readiness probes), %d container(s) of those with a readiness probe: saved in %s",
		len(before), len(ready), probed, RollDir)
	for _, p := range ready {
		what := "no readiness probe"
		if len(p.Containers) > 0 {
			what = "readiness-probed " + strings.Join(p.Containers, ",")
		}
		fmt.Fprintf(r.Out, "  %s (%s): %s\n", p.Name, p.UID, what)
	}
	return nil
}

// swap is the state swapping, then the swap itself.
func (r *run) swap() []action {
	return []action{
		r.saveAction("state: swapping", func(s *State) { s.Phase, s.SwappedAt = PhaseSwapping, r.stamp() }),
		r.swapKubelet(),
	}
}

// swapKubelet puts the target's kubelet in place of the running one
// (kubernetes-select switches stage2's links, then restarts the kubelet).
// The Job's own pod runs on the kubelet it replaces: the patched kubelet
// keeps it (the record listed it).
func (r *run) swapKubelet() action {
	return action{"swap", func(ctx context.Context) error {
		if res := r.onHostLogged(ctx, "kubernetes-select", "--restart-kubelet", "stage2", r.target); !res.OK() {
			return failRollf("kubernetes-select --restart-kubelet stage2 %s failed", r.target)
		}
		return nil
	}}
}
