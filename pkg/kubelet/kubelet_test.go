package kubelet

import (
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestSynced(t *testing.T) {
	web := PodRef{"kc-e2e", "web-000-node"}
	host := PodRef{"kc-e2e", "hostnet-001-node"}
	other := PodRef{"kc-e2e", "web-0"} // a prefix of web-000-node must not match
	log := strings.Join([]string{
		`I1129 21:40:00.000001   123 kubelet.go:1932] SyncLoop (ADD, "file"): "web-000-node_kc-e2e(abc)"`,
		`I1129 21:40:00.100000   123 kuberuntime_manager.go:678] computePodActions got {KillPod:false CreateSandbox:false} for pod "web-000-node_kc-e2e(abc)"`,
		`I1129 21:40:01.000000   456 kuberuntime_manager.go:705] "computePodActions got for pod" podActions={KillPod:false} pod="kc-e2e/hostnet-001-node"`,
	}, "\n")
	got, err := Synced(strings.NewReader(log), []PodRef{web, host, other})
	assert.NilError(t, err)
	assert.DeepEqual(t, got, map[PodRef]bool{web: true, host: true})
}

func TestArgs(t *testing.T) {
	tests := []struct {
		minor      int
		kubeconfig string
		want       []string
		notWant    []string
	}{
		{minor: 18, want: []string{"--container-runtime=remote", "--sync-frequency=10s", "--v=3"}, notWant: []string{"--kubeconfig="}},
		{minor: 21, kubeconfig: "/k", want: []string{"--kubeconfig=/k"}},
		{minor: 27, notWant: []string{"--container-runtime=remote"}},
	}
	for _, tt := range tests {
		args := strings.Join(Config{Minor: tt.minor, Kubeconfig: tt.kubeconfig, SyncFrequency: 10 * time.Second}.Args(), " ")
		for _, w := range tt.want {
			assert.Assert(t, strings.Contains(args, w), "1.%d: %s lacks %s", tt.minor, args, w)
		}
		for _, w := range tt.notWant {
			assert.Assert(t, !strings.Contains(args, w), "1.%d: %s has %s", tt.minor, args, w)
		}
	}
	extra := Config{Minor: 21, ExtraArgs: []string{"--max-pods=5"}}.Args()
	assert.Equal(t, extra[len(extra)-1], "--max-pods=5")
	assert.Equal(t, Minor("1.21.14"), 21)
	assert.Equal(t, Minor("v1.18.19"), 18)
}
