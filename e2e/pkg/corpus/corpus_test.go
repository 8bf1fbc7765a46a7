package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	}
	for _, tt := range tests {
		assert.Equal(t, count(tt.from, tt.to), tt.want, "1.%d -> 1.%d", tt.from, tt.to)
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
