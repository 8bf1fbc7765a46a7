package shim

import (
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

// TestNotUpstream: a row whose tree holds a shim that changes what the
// binaries do is named, with the module and why, in one line; a stub
// (nothing built imports it) and a shim that forwards to the code's new
// home (vbom.ml/util: github.com/fvbommel/sortorder v1.0.1 is its
// natsort.go but for a comment) are upstream's code.
func TestNotUpstream(t *testing.T) {
	for _, tc := range []struct {
		name string
		row  matrix.Row
		want []string // substrings of the error; none: upstream's
	}{
		{name: "no stub", row: matrix.Row{Kubernetes: "1.21.14"}},
		{name: "stubs only", row: matrix.Row{Kubernetes: "1.31.14", Stubs: []string{"k8s.io/sample-apiserver", "k8s.io/endpointslice"}}},
		{name: "a forwarding shim", row: matrix.Row{Kubernetes: "1.18.19", Stubs: []string{"vbom.ml/util"}}},
		{name: "a pre-release with stubs only", row: matrix.Row{Kubernetes: "1.38.0-rc.1", Stubs: []string{"k8s.io/sample-cli-plugin", "k8s.io/sample-controller"}}},
		{name: "the iptables shim", row: matrix.Row{Kubernetes: "1.38.0-beta.0", Stubs: []string{"k8s.io/sample-cli-plugin", "k8s.io/sample-controller", "sigs.k8s.io/iptables-wrappers"}},
			want: []string{"kubernetes 1.38.0-beta.0", "sigs.k8s.io/iptables-wrappers", "KUBE-IPTABLES-HINT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := NotUpstream(tc.row)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("NotUpstream = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("NotUpstream = nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("NotUpstream = %q, want %q in it", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("NotUpstream = %q: want one line", err)
			}
		})
	}
}

// TestEveryShimSaysWhetherItIsUpstreams: a shim added later must say
// whether the binaries built with it are upstream's.
func TestEveryShimSaysWhetherItIsUpstreams(t *testing.T) {
	for path, s := range shims {
		if s.forwardsTo == "" && s.changes == "" {
			t.Errorf("shim %s: neither forwardsTo (upstream's code under its new path) nor changes (what the binaries do otherwise)", path)
		}
		if s.forwardsTo != "" && s.changes != "" {
			t.Errorf("shim %s: both forwardsTo and changes", path)
		}
	}
}
