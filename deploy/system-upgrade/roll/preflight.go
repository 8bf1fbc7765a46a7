package roll

import (
	"context"
	"regexp"
	"strconv"
	"strings"
)

var (
	unpatchedLine   = regexp.MustCompile(`^unpatched: [0-9]+ of [0-9]+ containers restart`)
	patchedRestart  = regexp.MustCompile(`; patched: ([0-9]+) restart`)
	unknownSpecs    = regexp.MustCompile(`, ([0-9]+) unknown`)
	patchedKillers  = regexp.MustCompile(`; patched: ([0-9]+)`)
	fromNoteLine    = regexp.MustCompile(`^note: runtime: --from: (.*): is the running kubelet on another runtime endpoint\?$`)
	podKillersStart = "pod killers: unpatched: "
)

// preflightLosses reads kubelet-compat preflight's table: how many
// containers and pods the patched kubelet still loses (its "patched: N
// restart" and "pod killers: ...; patched: N" lines), the containers whose
// spec it could not find (", N unknown") and, when the target has no patch
// series ("patched: n/a"), 1.
func preflightLosses(table string) int {
	n := 0
	atoi := func(s string) int { v, _ := strconv.Atoi(s); return v }
	for _, line := range lines(table) {
		if unpatchedLine.MatchString(line) {
			if m := patchedRestart.FindStringSubmatch(line); m != nil {
				n += atoi(m[1])
			} else if strings.Contains(line, "; patched: n/a") {
				n++
			}
			if m := unknownSpecs.FindStringSubmatch(line); m != nil {
				n += atoi(m[1])
			}
		}
		if strings.HasPrefix(line, podKillersStart) {
			if m := patchedKillers.FindStringSubmatch(line); m != nil {
				n += atoi(m[1])
			}
		}
	}
	return n
}

// preflightFromNote is preflight's note that the runtime it judged does
// not serve the running kubelet ("" when none).
func preflightFromNote(table string) string {
	for _, line := range lines(table) {
		if m := fromNoteLine.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}

// preflightEtcdNote says whether preflight noted that the step's kubeadm
// moves etcd from 3.6 to 3.7.
func preflightEtcdNote(table string) bool {
	for _, line := range lines(table) {
		if strings.HasPrefix(line, "note: etcd: ") {
			return true
		}
	}
	return false
}

// preflight runs kubelet-compat preflight of the kubelet's step on the
// node: on the runtime the node runs (its probe), or on the one on names
// (containerd@VERSION: the runtime the kubelet would run on after the
// runtime step). Its table is returned; a refusal is its last line on
// standard error, or "it failed (above)".
func (r *run) preflight(ctx context.Context, on string) (table string, refusal string) {
	targetKubelet := "/usr/local/kubernetes/" + r.target + "/stage2/usr/bin/kubelet"
	args := []string{"kubelet-compat", "preflight", "--node", "--from", "v" + r.previous, "--to", "v" + r.target, "--kubeconfig", r.cfg.NodeKubeconfig}
	if fi, err := r.files.Stat(targetKubelet); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		args = append(args, "--target-kubelet", targetKubelet)
	}
	if on != "" {
		args = append(args, "--runtime", on)
	}
	res := r.onHost(ctx, args...)
	r.Err.Write(res.Stderr)
	if res.OK() {
		return string(res.Stdout), ""
	}
	why := cliReason(res.Stderr)
	if why == "" {
		why = "it failed (above)"
	}
	return string(res.Stdout), why
}

// judgePreflight reads preflight's table into the Job's log: what the
// patched kubelet would still lose, unless the Plan allows it, and on a
// control-plane node etcd's 3.6 -> 3.7 without the bridge's image. Why
// not, or "".
func (r *run) judgePreflight(table string) string {
	r.Out.Write([]byte(table))
	if n := preflightLosses(table); n > 0 {
		if !r.cfg.AllowLoss {
			return "preflight: the patched kubelet would still lose " + strconv.Itoa(n) +
				" container(s) or pod(s) (above); the Plan does not allow it (KC_ALLOW_LOSS)"
		}
		r.log("preflight: the patched kubelet loses %d container(s) or pod(s); the Plan allows it (KC_ALLOW_LOSS=true)", n)
	}
	if r.cfg.Role == "control-plane" && r.cfg.EtcdBridgeImage == "" && preflightEtcdNote(table) {
		return "preflight: this step's kubeadm moves etcd from 3.6 to 3.7, which needs the bridge etcd first (above), and the Plan names no bridge image (KC_ETCD_BRIDGE_IMAGE)"
	}
	return ""
}
