package roll

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// lock takes the roll's lock on the node for as long as this run lives:
// two Jobs on one node never interleave. Another Job's lock is waited
// for, at most KC_LOCK_WAIT seconds.
func (r *run) lock(ctx context.Context) error {
	if err := r.files.MkdirAll(RollDir); err != nil {
		return dief("creating %s on the node failed (%v): not running without the roll's lock", RollDir, err)
	}
	ok, err := r.Host.TryLock(LockFile)
	if err != nil {
		return dief("taking %s on the node failed (%v): not running without the roll's lock", LockFile, err)
	}
	if ok {
		return nil
	}
	r.log("another upgrade Job holds %s on this node: waiting for it (at most %ds)", LockFile, r.cfg.LockWait)
	ok, err = r.Host.WaitLock(ctx, LockFile, time.Duration(r.cfg.LockWait)*time.Second)
	if aborted(ctx, err) {
		return ctx.Err()
	}
	if err != nil {
		return dief("taking %s on the node failed (%v): not running without the roll's lock", LockFile, err)
	}
	if !ok {
		return dief("another upgrade Job still holds %s after %ds: not interleaving with it", LockFile, r.cfg.LockWait)
	}
	return nil
}

// writeKubeletKubeconfig writes the kubeconfig the Job reads the
// kubelet's own server with: the server on the node (the Job's pod has
// the node's network), checked against the kubelet's serving certificate,
// the Job's service account token as credentials.
func (r *run) writeKubeletKubeconfig() error {
	ca := r.cfg.KubeletCA
	if ca == "" {
		ca = r.files.Path("/etc/kubernetes/pki/ca.crt")
		if isFile(r.files, "/var/lib/kubelet/pki/kubelet.crt") {
			ca = r.files.Path("/var/lib/kubelet/pki/kubelet.crt")
		}
	}
	name := r.cfg.KubeletServerName
	if name == "" {
		name = r.Host.Hostname()
	}
	if name == "" {
		name = r.cfg.Node
	}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubelet
  cluster:
    server: %s
    certificate-authority: %s
    tls-server-name: %s
users:
- name: job
  user:
    tokenFile: %s
contexts:
- name: kubelet
  context:
    cluster: kubelet
    user: job
current-context: kubelet
`, r.cfg.KubeletURL, ca, name, r.cfg.TokenFile)
	if err := os.WriteFile(r.kubeletKubeconfig, []byte(kubeconfig), 0o600); err != nil {
		return dief("writing the kubelet's kubeconfig: %v", err)
	}
	return nil
}

// selection is what kubernetes-select status says stage1 and stage2 serve.
type selection struct{ stage1, stage2 string }

// selectStatus reads kubernetes-select status.
func (r *run) selectStatus(ctx context.Context) error {
	res := r.onHost(ctx, "kubernetes-select", "status")
	if !res.OK() {
		if aborted(ctx, res.Err) {
			return ctx.Err()
		}
		return dief("kubernetes-select status failed")
	}
	r.sel = parseSelection(string(res.Stdout))
	return nil
}

func parseSelection(text string) selection {
	var s selection
	for _, line := range lines(text) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch {
		case f[0] == "stage1:" && s.stage1 == "":
			s.stage1 = f[1]
		case f[0] == "stage2:" && s.stage2 == "":
			s.stage2 = f[1]
		}
	}
	return s
}
