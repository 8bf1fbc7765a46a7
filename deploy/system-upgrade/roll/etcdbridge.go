package roll

import (
	"context"
	"path"
	"regexp"
	"strings"
)

var manifestEtcdImage = regexp.MustCompile(`^[[:space:]]*image:[[:space:]]*([^[:space:]]*etcd:[^[:space:]]*)`)

// etcdBridge runs kubelet-compat etcd-bridge on a control-plane node whose
// manifest runs a 3.6 etcd, before kubeadm moves it, when the target's
// kubeadm wants a 3.7 (README.md, "etcd 3.6 -> 3.7: the bridge"). The
// image kubeadm wants comes from kubeadm config images list of stage1's
// kubeadm, the target's by now. The state notes etcd_bridge=begun, then
// done once etcd-bridge ended 0: a re-run after a kill runs it again while
// begun (it goes on from its own state on the node), not once done.
func (r *run) etcdBridge(ctx context.Context) error {
	manifest := ManifestsDir + "/etcd.yaml"
	if r.naive || r.cfg.Role != "control-plane" || !isFile(r.files, manifest) || r.etcdMinor(manifest) != "3.6" {
		return nil
	}
	switch r.st.EtcdBridge {
	case "done":
		r.log("etcd: bridged by a Job before this one (the roll's state): not again")
		return nil
	case "begun":
		r.log("a Job before this one died in kubelet-compat etcd-bridge: it goes on from its own state")
	}
	running := ""
	if data, err := r.files.ReadFile(manifest); err == nil {
		for _, line := range lines(string(data)) {
			if m := manifestEtcdImage.FindStringSubmatch(line); m != nil {
				running = m[1]
				break
			}
		}
	}
	res := r.onHost(ctx, "kubeadm", "config", "images", "list", "--kubernetes-version", "v"+r.target)
	want := ""
	for _, line := range lines(string(res.Stdout)) {
		if strings.HasPrefix(path.Base(line), "etcd:") {
			want = line
			break
		}
	}
	if want == "" {
		return failRollf("kubeadm config images list --kubernetes-version v%s named no etcd image (%s)", r.target, lastLine(string(res.Stderr)))
	}
	if tag := want[strings.LastIndex(want, ":")+1:]; strings.HasPrefix(tag, "3.6.") || strings.HasPrefix(tag, "v3.6.") {
		r.log("etcd: kubeadm v%s wants %s, the node runs %s: within 3.6, no bridge", r.target, want, running)
		return nil
	}
	r.log("etcd: kubeadm v%s wants %s, the node runs %s: kubelet-compat etcd-bridge first", r.target, want, running)
	argv := []string{"kubelet-compat", "etcd-bridge", "--target-etcd-image", want}
	if r.cfg.EtcdBridgeImage != "" {
		argv = append(argv, "--bridge-image", r.cfg.EtcdBridgeImage)
	}
	if err := r.save(func(s *State) { s.EtcdBridge = "begun" }); err != nil {
		return dief("%v", err)
	}
	if res := r.onHostLogged(ctx, argv...); !res.OK() {
		why := "etcd " + running + " -> " + want
		if r.cfg.EtcdBridgeImage == "" {
			why += "; KC_ETCD_BRIDGE_IMAGE is not set"
		}
		return failRollf("kubelet-compat etcd-bridge failed (%s)", why)
	}
	if err := r.save(func(s *State) { s.EtcdBridge = "done" }); err != nil {
		return dief("%v", err)
	}
	return nil
}
