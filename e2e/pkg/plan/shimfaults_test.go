package plan

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestParseShimFaults(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []ShimFault
		err  string
	}{
		{in: "all", want: []ShimFault{FrozenShimGroup, PidsError}},
		{in: "pids-error", want: []ShimFault{PidsError}},
		{in: " pids-error , frozen-shim-group", want: []ShimFault{PidsError, FrozenShimGroup}},
		{in: "split", err: `unknown shim fault "split" (frozen-shim-group, pids-error, or all)`},
		{in: "", err: `unknown shim fault ""`},
	} {
		got, err := ParseShimFaults(tc.in)
		if tc.err != "" {
			assert.Check(t, is.ErrorContains(err, tc.err), tc.in)
			continue
		}
		assert.NilError(t, err, tc.in)
		assert.DeepEqual(t, got, tc.want)
	}
}

func TestParseShimFaultRuntimes(t *testing.T) {
	got, err := ParseShimFaultRuntimes(DefaultShimFaultRuntimes)
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []Runtime{{"containerd", "1.7.35"}, {"containerd", "1.7.36+compat.1"}})
	_, err = ParseShimFaultRuntimes("containerd@1.6.20")
	assert.Check(t, is.ErrorContains(err, "runtime containerd@1.6.20: a shim fault costs a pod only on containerd 1.7 and later"))
	_, err = ParseShimFaultRuntimes("containerd@1.7.36+compat..1")
	assert.Check(t, is.ErrorContains(err, "version must be MAJOR.MINOR.PATCH"))
}

// TestShimFaultRuns: which containerd must keep the pod under which fault
// (docs/runtime.md): ours under both, 1.7 as released under neither, 2.x
// as released only where upstream carries the fix.
func TestShimFaultRuns(t *testing.T) {
	rts, err := ParseShimFaultRuntimes("containerd@1.7.35,containerd@1.7.36+compat.1,containerd@2.2.10,containerd@2.4.2")
	assert.NilError(t, err)
	var got []string
	for _, r := range ShimFaultRuns(ShimFaults, rts) {
		verdict := "loses"
		if r.Keeps {
			verdict = "keeps"
		}
		got = append(got, r.String()+": "+verdict)
	}
	assert.DeepEqual(t, got, []string{
		"frozen-shim-group on containerd@1.7.35: loses",
		"frozen-shim-group on containerd@1.7.36+compat.1: keeps",
		"frozen-shim-group on containerd@2.2.10: loses",
		"frozen-shim-group on containerd@2.4.2: loses",
		"pids-error on containerd@1.7.35: loses",
		"pids-error on containerd@1.7.36+compat.1: keeps",
		"pids-error on containerd@2.2.10: loses",
		"pids-error on containerd@2.4.2: keeps",
	})
}

func TestRestartSteps(t *testing.T) {
	rts, err := ParseShimFaultRuntimes(DefaultShimFaultRuntimes)
	assert.NilError(t, err)
	steps := RestartSteps(rts)
	assert.Equal(t, len(steps), 2)
	assert.Equal(t, steps[1].String(), "containerd@1.7.36+compat.1 -> containerd@1.7.36+compat.1")
	assert.NilError(t, CheckRuntimeKubelet(DefaultRuntimeKubelet, steps))
}
