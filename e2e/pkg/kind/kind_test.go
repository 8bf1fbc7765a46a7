package kind

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/upstream"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClusterConfig(t *testing.T) {
	golden.Assert(t, ClusterConfig("1.20.15", 2, 10*time.Second), "cluster.golden")
	golden.Assert(t, ClusterConfig("1.31.14", 2, 10*time.Second), "cluster-1.31.golden")
}

// TestCgroupV1PreflightArgs: kubeadm from 1.35 fails its SystemVerification
// check on cgroup v1 unless told to skip it.
func TestCgroupV1PreflightArgs(t *testing.T) {
	for _, tt := range []struct {
		version string
		want    []string
	}{
		{"1.34.12", nil},
		{"1.35.8", []string{"--ignore-preflight-errors=SystemVerification"}},
		{"1.37.2", []string{"--ignore-preflight-errors=SystemVerification"}},
	} {
		assert.DeepEqual(t, CgroupV1PreflightArgs(tt.version), tt.want)
	}
}

func TestCNIConfList(t *testing.T) {
	conf, err := CNIConfList("10.244.1.0/24")
	assert.NilError(t, err)
	var got struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type string `json:"type"`
			IPAM struct {
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	assert.NilError(t, json.Unmarshal([]byte(conf), &got))
	assert.Equal(t, got.Name, CNINetwork)
	assert.Equal(t, got.Plugins[0].Type, "bridge")
	assert.Equal(t, got.Plugins[0].IPAM.Ranges[0][0]["subnet"], "10.244.1.0/24")
}

func TestExpectations(t *testing.T) {
	cp := &Node{name: "c-control-plane", role: "control-plane"}
	w1 := &Node{name: "c-worker", role: "worker"}
	w2 := &Node{name: "c-worker2", role: "worker"}
	apiPod := func(ns, name, node string, mirror bool) v1.Pod {
		p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.PodSpec{NodeName: node}}
		if mirror {
			p.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"}
		}
		return p
	}
	api := []v1.Pod{
		apiPod(Namespace, "deploy-a", w2.name, false),
		apiPod("kube-system", "kube-proxy-x", w2.name, false),
		apiPod("kube-system", "kube-proxy-y", cp.name, false),
		apiPod("kube-system", "etcd-c-control-plane", cp.name, true),
	}
	r := &ClusterRun{StaticNode: w1, Statics: StaticPods(w1.name)}
	pods := func(es []report.Expectation) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Pod)
		}
		return out
	}
	tests := []struct {
		step Step
		n    *Node
		want []string
	}{
		{Step{From: "1.20.15", To: "1.21.14"}, cp, []string{"kube-system/etcd-c-control-plane", "kube-system/kube-apiserver-c-control-plane",
			"kube-system/kube-controller-manager-c-control-plane", "kube-system/kube-scheduler-c-control-plane"}},
		{Step{From: "1.19.16", To: "1.20.15"}, cp, nil},
		{Step{From: "1.20.15", To: "1.21.14"}, w2, nil},
		// The corpus: the five kinds without metadata.uid, and the probe's
		// terminationGracePeriodSeconds at 1.21.
		{Step{From: "1.20.15", To: "1.21.14"}, w1, []string{"kc-e2e/hostnet-001-c-worker", "kc-e2e/hostpath-004-c-worker", "kc-e2e/init-003-c-worker",
			"kc-e2e/multi-002-c-worker", "kc-e2e/probegrace-006-c-worker", "kc-e2e/web-000-c-worker"}},
		{Step{From: "1.18.19", To: "1.19.16"}, w1, []string{"kc-e2e/hostnet-001-c-worker", "kc-e2e/hostpath-004-c-worker", "kc-e2e/init-003-c-worker",
			"kc-e2e/multi-002-c-worker", "kc-e2e/seccomp-005-c-worker", "kc-e2e/web-000-c-worker"}},
		// 1.31 hashes {name, image}: every pod of every node, the API's
		// included; the statics also get a new UID.
		{Step{From: "1.30.14", To: "1.31.14"}, w2, []string{"kc-e2e/deploy-a", "kube-system/kube-proxy-x"}},
		{Step{From: "1.30.14", To: "1.31.14"}, cp, []string{"kube-system/etcd-c-control-plane", "kube-system/kube-apiserver-c-control-plane",
			"kube-system/kube-controller-manager-c-control-plane", "kube-system/kube-proxy-y", "kube-system/kube-scheduler-c-control-plane"}},
		// Both hash {name, image}; 1.32 derives another static pod UID.
		{Step{From: "1.31.14", To: "1.32.13"}, w2, nil},
		{Step{From: "1.28.15", To: "1.29.15"}, cp, nil},
		// Skip-level: a worker 1.28 -> 1.31 crosses the {name, image} hash.
		{Step{From: "1.28.15", To: "1.31.14"}, w2, []string{"kc-e2e/deploy-a", "kube-system/kube-proxy-x"}},
	}
	for _, tt := range tests {
		t.Run(tt.step.String()+" "+tt.n.name, func(t *testing.T) {
			assert.DeepEqual(t, pods(r.expectations(tt.n, tt.step, api)), tt.want)
		})
	}
}

func TestStaticName(t *testing.T) {
	assert.Equal(t, staticName("etcd-kc-e2e-patched-control-plane"), "etcd")
	assert.Equal(t, staticName("kube-apiserver-x"), "kube-apiserver")
	assert.Equal(t, staticName("kube-proxy-abcde"), "")
	assert.Equal(t, staticName("coredns-74ff55c5b-x"), "")
	assert.Equal(t, podBase("kube-system/etcd-x"), "etcd-x")
}

// TestTryInstructions: what make e2e-try prints for a held cluster, with
// the private engine's environment and the target's packages.
func TestTryInstructions(t *testing.T) {
	var b strings.Builder
	assert.NilError(t, WriteTryInstructions(&b, TryInfo{Cluster: TryCluster, From: "1.20.15", To: "1.21.14", Workers: 2,
		Env:      []string{"DOCKER_HOST=unix:///var/lib/kubelet-compat-e2e/docker/docker.sock"},
		Packages: []string{"_output/kind/debs/patched/kubernetes-1.21.14-node_1.21.14-1_amd64.deb", "_output/kind/debs/patched/kubernetes-1.21.14-kubeadm_1.21.14-1_amd64.deb"},
		ImageTar: "_output/kind/images/1.21.14.tar"}))
	golden.Assert(t, b.String(), "try.golden")
	b.Reset()
	assert.NilError(t, WriteTryInstructions(&b, TryInfo{Cluster: TryCluster, From: "1.36.5", To: "1.37.2", Workers: 1, ApplyArgs: "--ignore-preflight-errors=SystemVerification"}))
	assert.Check(t, strings.Contains(b.String(), "kubeadm upgrade apply v1.37.2 --yes --ignore-preflight-errors=SystemVerification\n"))
	assert.Check(t, !strings.Contains(b.String(), "private Docker engine"), "an engine that answers is not stopped")
}

// TestKubeadmStaticPodSetsSeccomp: the stand-in for kubeadm's control-plane
// pods instantiates what 1.38 changed (a pod-level seccompProfile, cpu
// requests), so a 1.37 -> 1.38 control expects all four recreated.
func TestKubeadmStaticPodSetsSeccomp(t *testing.T) {
	types := upstream.InstantiatedTypes(kubeadmStaticPod)
	assert.Check(t, types["SeccompProfile"] && types["resource.Quantity"], "%v", types)
	assert.Check(t, kubeadmStaticPod.UID == "")
}
