package controlplane

import (
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestAPIServerArgsPerMinor: --insecure-port=0 only before 1.24 (the flag
// is gone from 1.24's cmd/kube-apiserver/app/options), --feature-gates
// only when asked for.
func TestAPIServerArgsPerMinor(t *testing.T) {
	cp := &ControlPlane{opts: Options{Dir: "/cp"}, PKI: PKI{Dir: "/cp/pki"}}
	assert.Assert(t, is.Contains(cp.apiServerArgs(20, nil), "--insecure-port=0"))
	assert.Assert(t, is.Contains(cp.apiServerArgs(23, nil), "--insecure-port=0"))
	for _, m := range []int{24, 32, 33} {
		args := strings.Join(cp.apiServerArgs(m, nil), " ")
		assert.Assert(t, !strings.Contains(args, "--insecure-port"), "1.%d: %s", m, args)
		assert.Assert(t, !strings.Contains(args, "--feature-gates"), "1.%d: %s", m, args)
	}
	args := cp.apiServerArgs(32, map[string]bool{"InPlacePodVerticalScaling": true, "A": false})
	assert.Assert(t, is.Contains(args, "--feature-gates=A=false,InPlacePodVerticalScaling=true"))
}

// TestControllerManagerArgs: only the controllers asked for, no leader
// election, 127.0.0.1 only, and --port=0 only where --help lists the
// insecure port (before 1.24).
func TestControllerManagerArgs(t *testing.T) {
	cp := &ControlPlane{opts: Options{Dir: "/cp", Controllers: "endpointslice"}, PKI: PKI{Dir: "/cp/pki"}}
	for _, tc := range []struct {
		flags map[string]bool
		port  bool
	}{
		{flags: map[string]bool{"port": true, "secure-port": true}, port: true},
		{flags: map[string]bool{"secure-port": true}},
	} {
		args := cp.controllerManagerArgs(kubelet.Help{Flags: tc.flags})
		assert.Assert(t, is.Contains(args, "--controllers=endpointslice"))
		assert.Assert(t, is.Contains(args, "--leader-elect=false"))
		assert.Assert(t, is.Contains(args, "--kubeconfig=/cp/pki/admin.kubeconfig"))
		assert.Assert(t, is.Contains(args, "--bind-address=127.0.0.1"))
		assert.Equal(t, strings.Contains(strings.Join(args, " "), "--port=0"), tc.port)
	}
}
