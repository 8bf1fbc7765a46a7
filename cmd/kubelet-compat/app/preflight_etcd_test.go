package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const etcdBridgeNote = "note: etcd: kubeadm v1.37 moves etcd registry.k8s.io/etcd:3.6.8-0 (kube-system/etcd) to 3.7, which needs the bridge etcd first"

// preflight names the etcd bridge when the step's kubeadm takes etcd from
// 3.6 to 3.7, and how the roll runs it.
func TestPreflightEtcdBridge(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, etcd string
		want                 []string
	}{
		{name: "1.36 -> 1.37 from etcd 3.6.8 (below 3.6.11)", from: "v1.36.2", to: "v1.37.0", etcd: "3.6.8-0", want: []string{
			etcdBridgeNote,
			"3.6.8 is below 3.6.11, which etcd 3.7 requires before it",
			"kubelet-compat etcd-bridge --target-etcd-image <kubeadm's etcd> --bridge-image registry.k8s.io/etcd:3.6.16-0 on each control-plane node before its kubeadm upgrade",
			"deploy/system-upgrade's roll runs it when the Plan sets KC_ETCD_BRIDGE_IMAGE, and refuses the step without it"}},
		{name: "a 3.6 that 3.7 accepts still needs it: its WAL may hold 3.5's entries", from: "v1.36.2", to: "v1.37.0", etcd: "3.6.16-0",
			want: []string{"note: etcd: kubeadm v1.37 moves etcd registry.k8s.io/etcd:3.6.16-0 (kube-system/etcd) to 3.7, which needs the bridge etcd first"}},
		{name: "etcd at 3.7 already", from: "v1.36.2", to: "v1.37.0", etcd: "3.7.0-0"},
		{name: "1.35 -> 1.36: within 3.6", from: "v1.35.3", to: "v1.36.2", etcd: "3.6.5-0"},
		{name: "a rollback 1.37 -> 1.36", from: "v1.37.0", to: "v1.36.2", etcd: "3.6.8-0"},
		{name: "no etcd pod", from: "v1.36.2", to: "v1.37.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			dir := filepath.Join(f.dir, "manifests-f")
			f.write(filepath.Join(dir, "web.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: app, image: nginx:1.27}]\n")
			if tc.etcd != "" {
				f.write(filepath.Join(dir, "etcd.yaml"), strings.Replace(etcdYAML, "3.4.13-0", tc.etcd, 1))
			}
			if code := f.run("preflight", "--from", tc.from, "--to", tc.to, "-f", dir); code != 0 {
				t.Fatalf("exit %d: %s", code, f.stderr.String())
			}
			out := f.stdout.String()
			for _, w := range tc.want {
				assert.Check(t, is.Contains(out, w))
			}
			if tc.want == nil {
				assert.Check(t, !strings.Contains(out, "note: etcd:"), out)
			}
			// One line: the roll's Job finds it with grep.
			n := 0
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "note: etcd:") {
					n++
				}
			}
			assert.Check(t, is.Equal(n, len(tc.want[:min(len(tc.want), 1)])))
		})
	}
}

// On the node, the etcd static pod's manifest says which etcd runs.
func TestPreflightEtcdBridgeNode(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.addStaticPods("v1.36.2", pod{file: "etcd.yaml", yaml: strings.Replace(etcdYAML, "3.4.13-0", "3.6.8-0", 1), uid: "etcd-uid", created: beforeStart, ready: true})
	if code := f.run("preflight", "--from", "v1.36.2", "--to", "v1.37.0", "--node"); code != 0 {
		t.Fatalf("exit %d: %s", code, f.stderr.String())
	}
	assert.Check(t, is.Contains(f.stdout.String(), "note: etcd: kubeadm v1.37 moves etcd registry.k8s.io/etcd:3.6.8-0 (kube-system/etcd-node-1) to 3.7"))
	// And in JSON.
	if code := f.run("preflight", "--from", "v1.36.2", "--to", "v1.37.0", "--node", "-o", "json"); code != 0 {
		t.Fatalf("exit %d: %s", code, f.stderr.String())
	}
	assert.Check(t, is.Contains(f.stdout.String(), `"etcd: kubeadm v1.37 moves etcd registry.k8s.io/etcd:3.6.8-0`))
}
