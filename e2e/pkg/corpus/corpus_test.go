package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/upstream"
	"gotest.tools/v3/assert"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestNewCoversEveryKind(t *testing.T) {
	c := New(Options{Pods: 10, NodeName: "node-a", HostPathRoot: "/tmp/hp", FirstHostPort: 19000})
	assert.Equal(t, len(c.Pods), 10)
	seen := map[string]bool{}
	for _, p := range c.Pods {
		seen[p.Kind] = true
		assert.Equal(t, p.RuntimeName, Namespace+"/"+p.Name+"-node-a")
	}
	for _, k := range kinds {
		assert.Assert(t, seen[k], "kind %s missing", k)
	}
	// web, hostnet, multi(2), init, hostpath, seccomp, probegrace, pinned, web, hostnet
	assert.Equal(t, c.Containers(), 11)
}

func TestUpstreamRestarts(t *testing.T) {
	c := New(Options{Pods: 8, NodeName: "n", FirstHostPort: 19000})
	count := func(from, to int) int { return len(c.UpstreamRestarts(from, to)) }
	tests := []struct {
		from, to, want int
	}{
		{18, 19, 6}, // 5 without uid + seccomp
		{19, 20, 0},
		{20, 21, 6}, // 5 without uid + probe grace
		{18, 21, 7}, // 5 without uid + seccomp + probe grace
		{21, 22, 0}, // no field of the pods' structs changed: upstream restarts nothing
		{22, 23, 5}, // 5 without uid (PodSpec, Probe, ProbeHandler); hashes as 1.22
		{28, 29, 0},
		{21, 23, 5},
		{29, 30, 5},
		{30, 31, 8}, // every pod: the {name, image} hash
		{28, 31, 8},
		{31, 32, 5}, // uids; both hash {name, image}
		{34, 35, 5},
		// Rollbacks: the older kubelet derives the UIDs and hashes as its
		// own minor does.
		{31, 30, 8}, // every pod: the JSON hash again, not {name, image}
		{21, 20, 6}, // 5 without uid + probe grace
		{19, 18, 6}, // 5 without uid + seccomp
		{20, 19, 0},
		{22, 21, 0},
		{29, 28, 0},
		{23, 21, 5},
		{32, 31, 5}, // uids; both hash {name, image}
		{37, 31, 5},
		{31, 28, 8},
	}
	for _, tt := range tests {
		assert.Equal(t, count(tt.from, tt.to), tt.want, "1.%d -> 1.%d", tt.from, tt.to)
	}
}

// TestPatchedRollbackRestarts: the patched older kubelet restarts only the
// pods setting a field it does not know, and only on a rollback.
func TestPatchedRollbackRestarts(t *testing.T) {
	c := New(Options{Pods: 8, NodeName: "n", FirstHostPort: 19000})
	pods := func(from, to int) string {
		var out []string
		for _, e := range c.PatchedRollbackRestarts(from, to) {
			out = append(out, e.Pod)
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		from, to int
		want     string
	}{
		{21, 20, "kc-e2e/probegrace-006-n"},
		{19, 18, "kc-e2e/seccomp-005-n"},
		{21, 18, "kc-e2e/probegrace-006-n kc-e2e/seccomp-005-n"},
		{31, 30, ""}, // the corpus sets nothing 1.30 lacks
		{20, 21, ""}, // an upgrade
	} {
		assert.Equal(t, pods(tt.from, tt.to), tt.want, "1.%d -> 1.%d", tt.from, tt.to)
	}
}

// TestUpstreamRestartReasons: the static pods without metadata.uid are
// recreated for their UID, the others for their containers' hashes.
func TestUpstreamRestartReasons(t *testing.T) {
	c := New(Options{Pods: 8, NodeName: "n", FirstHostPort: 19000})
	reasons := map[string]string{}
	for _, e := range c.UpstreamRestarts(30, 31) {
		reasons[e.Pod] = e.Reason
	}
	assert.Assert(t, strings.Contains(reasons["kc-e2e/web-000-n"], "without metadata.uid"), reasons["kc-e2e/web-000-n"])
	assert.Assert(t, strings.Contains(reasons["kc-e2e/pinned-007-n"], "{name, image}"), reasons["kc-e2e/pinned-007-n"])
	for _, e := range c.UpstreamRestarts(18, 19) {
		if e.Pod == "kc-e2e/seccomp-005-n" {
			assert.Assert(t, strings.Contains(e.Reason, "seccompProfile"), e.Reason)
		}
	}
	for _, e := range c.UpstreamRestarts(20, 21) {
		if e.Pod == "kc-e2e/probegrace-006-n" {
			assert.Assert(t, strings.Contains(e.Reason, "terminationGracePeriodSeconds"), e.Reason)
		}
	}
}

// TestUpstreamRestartReasonsOfRollbacks: a rollback names itself in the
// reasons, and a minor's fields are those the older kubelet lacks.
func TestUpstreamRestartReasonsOfRollbacks(t *testing.T) {
	c := New(Options{Pods: 8, NodeName: "n", FirstHostPort: 19000})
	reasons := func(from, to int) map[string]string {
		out := map[string]string{}
		for _, e := range c.UpstreamRestarts(from, to) {
			out[e.Pod] = e.Reason
		}
		return out
	}
	r := reasons(31, 30)
	assert.Assert(t, strings.Contains(r["kc-e2e/web-000-n"], "without metadata.uid: rollback below 1.31"), r["kc-e2e/web-000-n"])
	assert.Assert(t, strings.Contains(r["kc-e2e/pinned-007-n"], "rollback below 1.31: the hash is the container's JSON again"), r["kc-e2e/pinned-007-n"])
	r = reasons(21, 20)
	assert.Assert(t, strings.Contains(r["kc-e2e/web-000-n"], "rollback below 1.21"), r["kc-e2e/web-000-n"])
	assert.Assert(t, strings.Contains(r["kc-e2e/probegrace-006-n"], "fields 1.20 does not know: livenessProbe.terminationGracePeriodSeconds"), r["kc-e2e/probegrace-006-n"])
	_, pinned := r["kc-e2e/pinned-007-n"]
	assert.Assert(t, !pinned, "1.21 -> 1.20 restarts the pinned pod: %q", r["kc-e2e/pinned-007-n"])
	r = reasons(19, 18)
	assert.Assert(t, strings.Contains(r["kc-e2e/seccomp-005-n"], "fields 1.18 does not know: securityContext.seccompProfile"), r["kc-e2e/seccomp-005-n"])
}

func TestWriteRoundTrips(t *testing.T) {
	dir := t.TempDir()
	c := New(Options{Pods: 8, NodeName: "n", HostPathRoot: "/tmp/hp", FirstHostPort: 19000})
	assert.NilError(t, c.Write(dir))
	entries, err := os.ReadDir(dir)
	assert.NilError(t, err)
	assert.Equal(t, len(entries), 8)
	data, err := os.ReadFile(filepath.Join(dir, "seccomp-005.yaml"))
	assert.NilError(t, err)
	var p v1.Pod
	assert.NilError(t, yaml.UnmarshalStrict(data, &p))
	assert.Equal(t, p.Spec.Containers[0].SecurityContext.SeccompProfile.Type, v1.SeccompProfileTypeRuntimeDefault)
	assert.Assert(t, p.UID != "")
}

func TestAPICorpus(t *testing.T) {
	c := New(Options{Pods: 9, NodeName: "n", HostPathRoot: "/tmp/hp", FirstHostPort: 19000, API: true})
	assert.Equal(t, c.Pods[0].Kind, KindConfigMap)
	for _, p := range c.Pods {
		assert.Equal(t, p.Spec.Spec.NodeName, "n")
		assert.Equal(t, string(p.Spec.UID), "")
		assert.Equal(t, p.RuntimeName, Namespace+"/"+p.Name)
	}
	assert.Equal(t, len(c.UpstreamRestarts(20, 21)), 0)
}

// TestAPICorpusHasOneResizePod: the default API corpus (10 pods) holds one
// resize pod, last; its container has the resizePolicy and non-zero cpu and
// memory requests and limits the restart depends on.
func TestAPICorpusHasOneResizePod(t *testing.T) {
	c := New(Options{Pods: 10, NodeName: "n", FirstHostPort: 19000, API: true})
	last := c.Pods[9]
	assert.Equal(t, last.Kind, KindResize)
	ctr := last.Spec.Spec.Containers[0]
	assert.DeepEqual(t, ctr.ResizePolicy, []v1.ContainerResizePolicy{
		{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
		{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer},
	})
	for _, rl := range []v1.ResourceList{ctr.Resources.Requests, ctr.Resources.Limits} {
		assert.Assert(t, !rl.Cpu().IsZero() && !rl.Memory().IsZero(), "%v", rl)
	}
	static := New(Options{Pods: 20, NodeName: "n", FirstHostPort: 19000})
	for _, p := range static.Pods {
		assert.Assert(t, p.Kind != KindResize && p.Kind != KindConfigMap, p.Name)
	}
}

func TestResizeRestarts(t *testing.T) {
	tests := []struct {
		from, to int
		gate     bool
		want     bool
	}{
		{32, 33, true, true},
		{32, 33, false, false}, // the 1.32 API server dropped resizePolicy
		{27, 33, true, true},
		{31, 34, true, true},
		{32, 36, true, true},
		{32, 37, true, false}, // 1.37 initialises the actuated state first
		{36, 37, true, false},
		{33, 34, true, false}, // 1.33 wrote actuated_pods_state
		{33, 34, false, false},
		{26, 33, true, false}, // no gate, no resizePolicy before 1.27
		{31, 32, true, false}, // 1.32 reads no actuated state
		{20, 21, true, false},
	}
	for _, tt := range tests {
		assert.Equal(t, resizeRestarts(tt.from, tt.to, tt.gate), tt.want, "1.%d -> 1.%d gate %v", tt.from, tt.to, tt.gate)
	}
}

func TestUpstreamRestartsOfTheResizePod(t *testing.T) {
	gated := New(Options{Pods: 10, NodeName: "n", FirstHostPort: 19000, API: true, ResizeGate: true})
	exp := gated.UpstreamRestarts(32, 33)
	assert.Equal(t, len(exp), 1)
	assert.Equal(t, exp[0].Pod, Namespace+"/resize-009")
	assert.Equal(t, len(gated.UpstreamRestarts(32, 37)), 0)
	defaults := New(Options{Pods: 10, NodeName: "n", FirstHostPort: 19000, API: true})
	assert.Equal(t, len(defaults.UpstreamRestarts(32, 33)), 0)
}

func TestResizeFeatureGates(t *testing.T) {
	assert.Assert(t, ResizeFeatureGates(26) == nil)
	assert.DeepEqual(t, ResizeFeatureGates(27), map[string]bool{"InPlacePodVerticalScaling": true})
	assert.DeepEqual(t, ResizeFeatureGates(32), map[string]bool{"InPlacePodVerticalScaling": true})
	assert.Assert(t, ResizeFeatureGates(33) == nil)
}

func TestRestartAllPodOnlyWhereEveryKubeletAcceptsIt(t *testing.T) {
	for _, tc := range []struct {
		min  int
		api  bool
		want bool
	}{{0, false, false}, {31, false, false}, {35, false, false}, {36, false, true}, {37, false, true}, {37, true, false}} {
		c := New(Options{Pods: 10, NodeName: "n", FirstHostPort: 19000, MinKubeletMinor: tc.min, API: tc.api})
		var ra []Pod
		for _, p := range c.Pods {
			if p.Kind == KindRestartAll {
				ra = append(ra, p)
			}
		}
		if !tc.want {
			assert.Equal(t, len(ra), 0, "min %d api %t", tc.min, tc.api)
			continue
		}
		perPod := 0
		if tc.min >= PerPodUIDMinMinor {
			perPod = 2 // KindPodSeccomp, KindPlain
		}
		assert.Equal(t, len(c.Pods), 11+perPod)
		assert.Equal(t, len(ra), 1)
		p := ra[0]
		assert.Equal(t, p.RuntimeName, Namespace+"/restartall-010-n")
		assert.Assert(t, p.PinnedUID)
		ctr := p.Spec.Spec.Containers[0]
		// ValidatePodCreate (1.36, 1.37): restart rules need the
		// container's restartPolicy, and exitCodes on every rule.
		assert.Equal(t, *ctr.RestartPolicy, v1.ContainerRestartPolicyAlways)
		assert.Equal(t, len(ctr.RestartPolicyRules), 1)
		assert.Equal(t, ctr.RestartPolicyRules[0].Action, v1.ContainerRestartRuleActionRestartAllContainers)
		assert.Assert(t, ctr.RestartPolicyRules[0].ExitCodes != nil)
	}
}

func TestTargetRefuses(t *testing.T) {
	c := New(Options{Pods: 10, NodeName: "n", FirstHostPort: 19000, MinKubeletMinor: 36})
	off := map[string]bool{RestartAllGate: false}
	assert.Equal(t, len(c.TargetRefuses(36, nil)), 0)
	assert.Equal(t, len(c.TargetRefuses(37, nil)), 0)
	assert.Equal(t, len(c.TargetRefuses(36, map[string]bool{RestartAllGate: true})), 0)
	assert.Equal(t, len(c.TargetRefuses(36, map[string]bool{"Other": false})), 0)
	got := c.TargetRefuses(36, off)
	assert.Equal(t, len(got), 1)
	assert.Equal(t, got[0].Pod, Namespace+"/restartall-010-n")
	assert.Equal(t, len(c.TargetRefuses(37, off)), 1)
	// 1.35: the gate is alpha, off by default.
	assert.Equal(t, len(c.TargetRefuses(35, nil)), 1)
	// Neither the uid (explicit) nor the {name, image} hash moves on the
	// rollback 1.37 -> 1.36, and 1.36 knows every field it sets: only
	// the refusal loses it.
	for _, e := range append(c.UpstreamRestarts(37, 36), c.PatchedRollbackRestarts(37, 36)...) {
		assert.Assert(t, e.Pod != got[0].Pod, e.Reason)
	}
	assert.Equal(t, len(New(Options{Pods: 10, NodeName: "n", MinKubeletMinor: 36, API: true}).TargetRefuses(36, off)), 0)
}

// TestUIDPredictionsMatchMeasurements holds the generated type table
// (pkg/upstream) to what the unpatched controls measured: on every minor
// 1.19 .. 1.37 they recreated every static pod without metadata.uid of
// the corpus, or none (1.20, 1.22, 1.29); the per-pod prediction must say
// the same of each of those pods. A contradiction is a fact to report,
// not a table to bend.
func TestUIDPredictionsMatchMeasurements(t *testing.T) {
	c := New(Options{Pods: 8, NodeName: "n", HostPathRoot: "/tmp/hp", FirstHostPort: 19000})
	for m := upstream.First + 1; m <= upstream.Last; m++ {
		recreated, measured := upstream.MeasuredCorpusRecreated(m)
		assert.Assert(t, measured, "1.%d", m)
		for _, p := range c.Pods {
			if p.PinnedUID {
				continue
			}
			got := upstream.StaticPodUIDFor(p.Spec, m-1, m)
			assert.Check(t, (len(got.Changed) > 0) == recreated, "1.%d -> 1.%d, %s: measured recreated=%t, predicted %v (%s)", m-1, m, p.Name, recreated, got.Changed, got.Reason())
		}
	}
}

// TestPerPodUIDPods: the two pods that tell a per-pod UID change from a
// per-minor one come with plans from PerPodUIDMinMinor on, without
// metadata.uid, and instantiate SeccompProfile (podseccomp) or neither it
// nor a resource.Quantity (plain), the types 1.38 changed.
func TestPerPodUIDPods(t *testing.T) {
	for _, min := range []int{0, 36} {
		for _, p := range New(Options{Pods: 8, NodeName: "n", FirstHostPort: 19000, MinKubeletMinor: min}).Pods {
			assert.Check(t, p.Kind != KindPodSeccomp && p.Kind != KindPlain, "min %d: %s", min, p.Name)
		}
	}
	c := New(Options{Pods: 8, NodeName: "n", FirstHostPort: 19000, MinKubeletMinor: PerPodUIDMinMinor})
	kinds := map[string]Pod{}
	for _, p := range c.Pods {
		kinds[p.Kind] = p
	}
	seccomp, plain := kinds[KindPodSeccomp], kinds[KindPlain]
	assert.Equal(t, seccomp.RuntimeName, Namespace+"/podseccomp-009-n")
	assert.Equal(t, plain.RuntimeName, Namespace+"/plain-010-n")
	assert.Check(t, !seccomp.PinnedUID && !plain.PinnedUID)
	st, pt := upstream.InstantiatedTypes(seccomp.Spec), upstream.InstantiatedTypes(plain.Spec)
	assert.Check(t, st["SeccompProfile"] && !st["resource.Quantity"], "%v", st)
	assert.Check(t, !pt["SeccompProfile"] && !pt["resource.Quantity"], "%v", pt)
}
