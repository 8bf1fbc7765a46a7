package scenario

import (
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	"gotest.tools/v3/assert"
)

func TestMinKubeletMinor(t *testing.T) {
	assert.Equal(t, minKubeletMinor(nil), 0)
	assert.Equal(t, minKubeletMinor([]Step{{From: "1.37.2", To: "1.36.5"}}), 36)
	assert.Equal(t, minKubeletMinor([]Step{{From: "1.36.5", To: "1.37.2"}, {From: "1.37.2", To: "1.35.8"}}), 35)
}

// TestToFeatureGatesOnlyForTheTarget: -to-feature-gates reach the kubelet
// a step swaps in, not the baseline's, on top of -resize-gate's.
func TestToFeatureGatesOnlyForTheTarget(t *testing.T) {
	off := map[string]bool{"RestartAllContainersOnContainerExits": false}
	s := &Scenario{opts: Options{ToFeatureGates: off}}
	assert.Assert(t, s.kubeletGates(37) == nil)
	s.asTarget = true
	assert.DeepEqual(t, s.kubeletGates(36), off)
	s = &Scenario{opts: Options{ToFeatureGates: off, ResizeGate: true}, asTarget: true}
	assert.DeepEqual(t, s.kubeletGates(32), map[string]bool{"RestartAllContainersOnContainerExits": false, "InPlacePodVerticalScaling": true})
	s.asTarget = false
	assert.DeepEqual(t, s.kubeletGates(32), map[string]bool{"InPlacePodVerticalScaling": true})
}

func TestParsePreflightRefusals(t *testing.T) {
	out := `{"from":"v1.37.2","to":"v1.36.5","containers":[],"podKillers":[
	 {"pod":"kc-e2e/restartall-010-n","check":"declared-features","unpatched":"rejected: PodFeatureUnsupported (pod Failed, containers killed)"},
	 {"pod":"NODE","check":"flags"},
	 {"pod":"kc-e2e/a-n","check":"declared-features"}]}`
	got, err := parsePreflightRefusals(out)
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []string{"kc-e2e/a-n", "kc-e2e/restartall-010-n"})
	got, err = parsePreflightRefusals(`{"from":"v1.37.2","containers":[]}`)
	assert.NilError(t, err)
	assert.Equal(t, len(got), 0)
	_, err = parsePreflightRefusals("Error: unknown flag")
	assert.Assert(t, err != nil)
}

func TestParsePreflightRestarts(t *testing.T) {
	out := `{"from":"v1.37.2","to":"v1.38.0","containers":[
	 {"pod":"kc-e2e/web-000-n","container":"httpd","unpatched":"recreate pod","patched":"keep"},
	 {"pod":"kc-e2e/multi-002-n","container":"a","unpatched":"keep","patched":"keep"},
	 {"pod":"kc-e2e/multi-002-n","container":"b","unpatched":"restart","patched":"restart"},
	 {"pod":"kc-e2e/plain-010-n","container":"httpd","unpatched":"keep","patched":"keep"},
	 {"pod":"kc-e2e/seccomp-011-n","container":"httpd","unpatched":"may recreate pod","patched":"keep"}]}`
	unpatched, err := parsePreflightRestarts(out, false)
	assert.NilError(t, err)
	assert.DeepEqual(t, unpatched, []string{"kc-e2e/multi-002-n", "kc-e2e/seccomp-011-n", "kc-e2e/web-000-n"})
	patched, err := parsePreflightRestarts(out, true)
	assert.NilError(t, err)
	assert.DeepEqual(t, patched, []string{"kc-e2e/multi-002-n"})
	_, err = parsePreflightRestarts("Error: unknown flag", false)
	assert.Assert(t, err != nil)
}

func TestChangedPods(t *testing.T) {
	d := snapshot.Diff{Changes: []snapshot.Change{{Pod: "ns/b", Kind: snapshot.PodGone}, {Pod: "ns/c", Kind: snapshot.SandboxChanged},
		{Pod: "ns/c", Container: "x", Kind: "container-replaced"}, {Pod: "ns/a", Kind: snapshot.PodGone}}}
	assert.DeepEqual(t, changedPods(d), []string{"ns/a", "ns/b", "ns/c"})
}

func TestShellQuote(t *testing.T) {
	assert.Equal(t, shellQuote([]string{"--eviction-hard=memory.available<1Mi", "--x=it's"}), `'--eviction-hard=memory.available<1Mi' '--x=it'\''s'`)
}

func TestLostPods(t *testing.T) {
	d := snapshot.Diff{Changes: []snapshot.Change{{Pod: "ns/b", Kind: snapshot.PodGone}, {Pod: "ns/c", Kind: snapshot.SandboxChanged}, {Pod: "ns/a", Kind: snapshot.PodGone}}}
	assert.DeepEqual(t, lostPods(d), []string{"ns/a", "ns/b"})
	assert.Assert(t, lostPods(snapshot.Diff{}) == nil)
}
