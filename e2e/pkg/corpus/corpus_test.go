package corpus

import (
	"os"
	"path/filepath"
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
	}
	for _, tt := range tests {
		assert.Equal(t, count(tt.from, tt.to), tt.want, "1.%d -> 1.%d", tt.from, tt.to)
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
