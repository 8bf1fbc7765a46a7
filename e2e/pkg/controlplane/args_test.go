package controlplane

import (
	"strings"
	"testing"

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
