package preflight

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

func testNode() *v1.Node {
	n := &v1.Node{}
	n.Name = "node-1"
	n.Labels = map[string]string{"disk": "hdd", "zone": "a", "cores": "8"}
	n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute}, {Key: "soft", Effect: v1.TaintEffectNoSchedule}}
	n.Status.Capacity = v1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("8Gi"), "pods": resource.MustParse("110"),
		"ephemeral-storage": resource.MustParse("100Gi"), "hugepages-2Mi": resource.MustParse("1Gi"), "example.com/gpu": resource.MustParse("2")}
	n.Status.Allocatable = v1.ResourceList{"example.com/gpu": resource.MustParse("2")}
	return n
}

type podOpt func(*v1.Pod)

func mkPod(name string, age time.Duration, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{}
	p.Namespace, p.Name = "default", name
	p.UID = k8stypes.UID("uid-" + name)
	p.CreationTimestamp = metav1.NewTime(t0.Add(-age))
	p.Status.Phase = v1.PodRunning
	p.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func selector(m map[string]string) podOpt { return func(p *v1.Pod) { p.Spec.NodeSelector = m } }

func affinity(terms ...v1.NodeSelectorTerm) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
	}
}

func expr(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func requests(kv ...string) podOpt {
	return func(p *v1.Pod) {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		p.Spec.Containers[0].Resources.Requests = l
	}
}

func tolerate(key string, secs *int64) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs})
	}
}

func secs(s int64) *int64 { return &s }

func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }

func mirror() podOpt {
	return func(p *v1.Pod) {
		p.Annotations = map[string]string{"kubernetes.io/config.mirror": "static-uid", "kubernetes.io/config.source": "file"}
	}
}

func TestNodeAffinity(t *testing.T) {
	node := testNode()
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string // "" = admitted, else a substring of Why
	}{
		{"no constraints", mkPod("a", time.Hour), ""},
		{"selector matches", mkPod("a", time.Hour, selector(map[string]string{"disk": "hdd"})), ""},
		{"selector value differs", mkPod("a", time.Hour, selector(map[string]string{"disk": "ssd"})), "nodeSelector disk=ssd: the node's label is disk=hdd"},
		{"selector label missing", mkPod("a", time.Hour, selector(map[string]string{"gpu": "yes"})), "the node has no label gpu"},
		{"In matches", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "a", "b")}})), ""},
		{"In fails", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "b")}})), `zone In [b] (node: "a")`},
		{"NotIn on a missing label matches", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("x", v1.NodeSelectorOpNotIn, "y")}})), ""},
		{"DoesNotExist fails", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("disk", v1.NodeSelectorOpDoesNotExist)}})), "disk DoesNotExist"},
		{"Exists fails", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("gpu", v1.NodeSelectorOpExists)}})), "gpu Exists [] (node: absent)"},
		{"Gt matches", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("cores", v1.NodeSelectorOpGt, "4")}})), ""},
		{"Lt fails", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("cores", v1.NodeSelectorOpLt, "4")}})), "cores Lt [4]"},
		{"matchFields name In", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{expr("metadata.name", v1.NodeSelectorOpIn, "node-1")}})), ""},
		{"matchFields name NotIn", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{expr("metadata.name", v1.NodeSelectorOpNotIn, "node-1")}})), "field metadata.name NotIn [node-1]"},
		{"terms are ORed", mkPod("a", time.Hour, affinity(
			v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "b")}},
			v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "a")}})), ""},
		{"expressions are ANDed", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
			expr("zone", v1.NodeSelectorOpIn, "a"), expr("disk", v1.NodeSelectorOpIn, "ssd")}})), "term 0: label disk In [ssd]"},
		{"no terms", mkPod("a", time.Hour, affinity()), "has no nodeSelectorTerms"},
		{"empty term", mkPod("a", time.Hour, affinity(v1.NodeSelectorTerm{})), "empty term matches no node"},
		{"ended pods are not re-admitted", mkPod("a", time.Hour, selector(map[string]string{"disk": "ssd"}), phase(v1.PodSucceeded)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NodeAffinity(mustVersion(t, "v1.21.14"), node, []*v1.Pod{tc.pod})
			if tc.want == "" {
				assert.Equal(t, len(got), 0, "%+v", got)
				return
			}
			assert.Equal(t, len(got), 1)
			assert.Assert(t, strings.Contains(got[0].Why, tc.want), "why %q, want %q", got[0].Why, tc.want)
			assert.Equal(t, got[0].Unpatched, "rejected: NodeAffinity (pod Failed, containers killed)")
			assert.Equal(t, got[0].Patched, KeptAdmitted)
		})
	}
	assert.Equal(t, NodeAffinityReason(mustVersion(t, "v1.17.17")), "MatchNodeSelector")
	assert.Equal(t, NodeAffinityReason(mustVersion(t, "v1.18.19")), "NodeAffinity")
	assert.Equal(t, NodeAffinityReason(mustVersion(t, "v1.31.14")), "NodeAffinity")
}

func TestTaints(t *testing.T) {
	node := testNode()
	for _, tc := range []struct {
		name   string
		to     string
		window time.Duration
		pod    *v1.Pod
		want   []string // Unpatched of the findings after the summary
	}{
		{"untolerated NoExecute, 1.21: not the kubelet", "v1.21.14", 40 * time.Second, mkPod("a", time.Hour,
			tolerate(TaintNotReady, nil), tolerate(TaintUnreachable, nil)), []string{"evicted by the taint manager (not the swap)"}},
		{"untolerated NoExecute, 1.22: rejected", "v1.22.17", 40 * time.Second, mkPod("a", time.Hour,
			tolerate(TaintNotReady, nil), tolerate(TaintUnreachable, nil)), []string{"rejected: TaintToleration (pod Failed, containers killed)"}},
		{"tolerated NoExecute, defaults 300s", "v1.22.17", 40 * time.Second, mkPod("a", time.Hour,
			tolerate("dedicated", nil), tolerate(TaintNotReady, secs(300)), tolerate(TaintUnreachable, secs(300))), nil},
		{"short not-ready toleration", "v1.21.14", 40 * time.Second, mkPod("a", time.Hour,
			tolerate("dedicated", nil), tolerate(TaintNotReady, secs(10)), tolerate(TaintUnreachable, secs(300))), []string{"may be evicted (pod deleted)"}},
		{"no lifecycle toleration: both", "v1.21.14", 40 * time.Second, mkPod("a", time.Hour, tolerate("dedicated", nil)),
			[]string{"may be evicted (pod deleted)", "may be evicted (pod deleted)"}},
		{"unreachable 30s within a 60s window", "v1.21.14", 60 * time.Second, mkPod("a", time.Hour,
			tolerate("dedicated", nil), tolerate(TaintNotReady, nil), tolerate(TaintUnreachable, secs(10))), []string{"may be evicted (pod deleted)"}},
		{"unreachable 30s, a 60s window leaves 20s", "v1.21.14", 60 * time.Second, mkPod("a", time.Hour,
			tolerate("dedicated", nil), tolerate(TaintNotReady, nil), tolerate(TaintUnreachable, secs(30))), nil},
		{"a toleration of everything", "v1.22.17", time.Hour, mkPod("a", time.Hour, func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
		}), nil},
		{"mirror pods are skipped", "v1.22.17", 40 * time.Second, mkPod("a", time.Hour, mirror()), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Taints(mustVersion(t, tc.to), node, []*v1.Pod{tc.pod}, tc.window, DefaultNodeMonitorGracePeriod)
			assert.Assert(t, len(got) >= 1 && got[0].Pod == NodeRow, "%+v", got)
			var verdicts []string
			for _, f := range got[1:] {
				verdicts = append(verdicts, f.Unpatched)
			}
			assert.DeepEqual(t, verdicts, tc.want)
		})
	}
}

func TestAllocatable(t *testing.T) {
	capacity := testNode().Status.Capacity
	for _, tc := range []struct {
		name string
		cfg  KubeletConfig
		want map[v1.ResourceName]string
	}{
		{"defaults: 100Mi memory, 10% nodefs, 110 pods, hugepages off memory", KubeletConfig{},
			map[v1.ResourceName]string{"cpu": "4", "memory": "7068Mi", "pods": "110", "ephemeral-storage": "92160Mi", "hugepages-2Mi": "1Gi", "example.com/gpu": "2"}},
		{"reserved and eviction", KubeletConfig{KubeReserved: map[string]string{"cpu": "500m", "memory": "1Gi"}, SystemReserved: map[string]string{"cpu": "500m"},
			EvictionHard: map[string]string{"memory.available": "5%"}, MaxPods: 20},
			map[v1.ResourceName]string{"cpu": "3", "memory": "6012954215", "pods": "20", "ephemeral-storage": "100Gi", "hugepages-2Mi": "1Gi", "example.com/gpu": "2"}},
		{"pods per core", KubeletConfig{PodsPerCore: 2, EvictionHard: map[string]string{}},
			map[v1.ResourceName]string{"cpu": "4", "memory": "7Gi", "pods": "8", "ephemeral-storage": "100Gi", "hugepages-2Mi": "1Gi", "example.com/gpu": "2"}},
		{"over-reserved is zero", KubeletConfig{KubeReserved: map[string]string{"cpu": "5"}, EvictionHard: map[string]string{}},
			map[v1.ResourceName]string{"cpu": "0", "memory": "7Gi", "pods": "110", "ephemeral-storage": "100Gi", "hugepages-2Mi": "1Gi", "example.com/gpu": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Allocatable(capacity, testNode().Status.Allocatable, tc.cfg)
			assert.NilError(t, err)
			assert.Equal(t, len(got), len(tc.want), "%v", got)
			for n, w := range tc.want {
				g := got[n]
				assert.Assert(t, g.Cmp(resource.MustParse(w)) == 0, "%s = %s, want %s", n, g.String(), w)
			}
		})
	}
	_, err := Allocatable(capacity, nil, KubeletConfig{KubeReserved: map[string]string{"cpu": "lots"}})
	assert.ErrorContains(t, err, "reserved cpu=lots")
}

func TestResourceFit(t *testing.T) {
	alloc := v1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("2Gi"), "pods": resource.MustParse("3"),
		"hugepages-2Mi": resource.MustParse("64Mi"), "example.com/gpu": resource.MustParse("1"), "ephemeral-storage": resource.MustParse("10Gi")}
	critical := func(p *v1.Pod) { pr := int32(systemCriticalPriority); p.Spec.Priority = &pr }
	for _, tc := range []struct {
		name string
		pods []*v1.Pod
		want []string // "pod: unpatched", newest first
	}{
		{"everything fits", []*v1.Pod{mkPod("a", 3*time.Hour, requests("cpu", "1")), mkPod("b", 2*time.Hour, requests("cpu", "1"))}, nil},
		{"the newest pod does not fit cpu", []*v1.Pod{mkPod("new", time.Hour, requests("cpu", "1")), mkPod("old", 3*time.Hour, requests("cpu", "1500m"))},
			[]string{"default/new: rejected: OutOfcpu (pod Failed, containers killed)"}},
		{"memory", []*v1.Pod{mkPod("a", 3*time.Hour, requests("memory", "1536Mi")), mkPod("b", 2*time.Hour, requests("memory", "1Gi"))},
			[]string{"default/b: rejected: OutOfmemory (pod Failed, containers killed)"}},
		{"pods count, newest first", []*v1.Pod{mkPod("p1", 5*time.Hour), mkPod("p2", 4*time.Hour), mkPod("p3", 3*time.Hour), mkPod("p4", 2*time.Hour), mkPod("p5", time.Hour)},
			[]string{"default/p5: rejected: OutOfpods (pod Failed, containers killed)", "default/p4: rejected: OutOfpods (pod Failed, containers killed)"}},
		{"a rejected pod frees its share", []*v1.Pod{mkPod("a", 3*time.Hour, requests("cpu", "1500m")), mkPod("b", 2*time.Hour, requests("cpu", "1")), mkPod("c", time.Hour, requests("cpu", "500m"))},
			[]string{"default/b: rejected: OutOfcpu (pod Failed, containers killed)"}},
		{"hugepages and extended", []*v1.Pod{mkPod("a", 2*time.Hour, requests("hugepages-2Mi", "128Mi")), mkPod("b", time.Hour, requests("example.com/gpu", "2"))},
			[]string{"default/b: rejected: OutOfexample.com/gpu (pod Failed, containers killed)", "default/a: rejected: OutOfhugepages-2Mi (pod Failed, containers killed)"}},
		{"extended resources unknown to the node are not checked", []*v1.Pod{mkPod("a", time.Hour, requests("cluster.example/licence", "5"))}, nil},
		{"ended pods do not count", []*v1.Pod{mkPod("a", 3*time.Hour, requests("cpu", "2"), phase(v1.PodSucceeded)), mkPod("b", 2*time.Hour, requests("cpu", "2"))}, nil},
		{"a critical pod evicts others", []*v1.Pod{mkPod("a", 3*time.Hour, requests("cpu", "2")), mkPod("sys", 2*time.Hour, requests("cpu", "1"), critical)},
			[]string{"default/sys: admitted by evicting other pods (critical pod, OutOfcpu)"}},
		{"static pods come first, whatever their mirror's age", []*v1.Pod{mkPod("a", 3*time.Hour, requests("cpu", "1500m")), mkPod("etcd", time.Hour, requests("cpu", "1"), mirror())},
			[]string{"default/a: rejected: OutOfcpu (pod Failed, containers killed)"}},
		{"init containers: the largest, not the sum", []*v1.Pod{mkPod("a", time.Hour, requests("cpu", "1"), func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "i1", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"cpu": resource.MustParse("2")}}},
				{Name: "i2", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"cpu": resource.MustParse("2")}}}}
		})}, nil},
		{"overhead counts", []*v1.Pod{mkPod("a", time.Hour, requests("cpu", "1900m"), func(p *v1.Pod) { p.Spec.Overhead = v1.ResourceList{"cpu": resource.MustParse("200m")} })},
			[]string{"default/a: rejected: OutOfcpu (pod Failed, containers killed)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range ResourceFit(alloc, tc.pods) {
				got = append(got, f.Pod+": "+f.Unpatched)
				if strings.HasPrefix(f.Unpatched, "admitted") {
					assert.Equal(t, f.Patched, f.Unpatched)
				} else {
					assert.Equal(t, f.Patched, KeptAdmitted)
				}
			}
			assert.DeepEqual(t, got, tc.want)
		})
	}
}

func TestExecProbes(t *testing.T) {
	probe := func(p *v1.Pod) {
		p.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, TimeoutSeconds: 5}
		p.Spec.Containers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{}}}
	}
	pods := []*v1.Pod{mkPod("a", time.Hour, probe), mkPod("b", time.Hour)}
	for _, tc := range []struct {
		from, to string
		want     int
	}{{"v1.19.16", "v1.20.15", 2}, {"v1.18.19", "v1.21.14", 2}, {"v1.20.15", "v1.21.14", 0}, {"v1.18.19", "v1.19.16", 0}} {
		got := ExecProbes(mustVersion(t, tc.from), mustVersion(t, tc.to), pods)
		assert.Equal(t, len(got), tc.want, "%s -> %s: %+v", tc.from, tc.to, got)
		if tc.want > 0 {
			assert.Assert(t, strings.Contains(got[0].Why, "liveness exec probe timeoutSeconds 1"), got[0].Why)
			assert.Assert(t, strings.Contains(got[1].Why, "readiness exec probe timeoutSeconds 5"), got[1].Why)
		}
	}
}

func TestCPUManagerState(t *testing.T) {
	for _, tc := range []struct {
		name, state string
		cfg         KubeletConfig
		want        string // substring of the finding's Why; "" = none
	}{
		{"none and none", `{"policyName":"none","defaultCpuSet":"","checksum":1}`, KubeletConfig{}, ""},
		{"static to none", `{"policyName":"static","defaultCpuSet":"0-7","checksum":1}`, KubeletConfig{}, `policy "static", the target's cpuManagerPolicy is "none"`},
		{"none to static", `{"policyName":"none","defaultCpuSet":"","checksum":1}`, KubeletConfig{CPUManagerPolicy: "static"}, `differs from state checkpoint policy "none"`},
		{"static, reserved within", `{"policyName":"static","defaultCpuSet":"0-1,4-7","entries":{"u":{"c":"2-3"}}}`, KubeletConfig{CPUManagerPolicy: "static", ReservedSystemCPUs: "0,1"}, ""},
		{"static, reserved moved", `{"policyName":"static","defaultCpuSet":"0-1,4-7","entries":{"u":{"c":"2-3"}}}`, KubeletConfig{CPUManagerPolicy: "static", ReservedSystemCPUs: "2-3"}, "missing 2-3"},
		{"static, empty state", `{"policyName":"static","defaultCpuSet":""}`, KubeletConfig{CPUManagerPolicy: "static", ReservedSystemCPUs: "2"}, ""},
		{"garbage", `{`, KubeletConfig{}, "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, note := CPUManagerState("/var/lib/kubelet/cpu_manager_state", []byte(tc.state), tc.cfg)
			if tc.want == "" {
				assert.Equal(t, len(got), 0, "%+v", got)
				assert.Assert(t, note != "")
				return
			}
			assert.Equal(t, len(got), 1)
			assert.Assert(t, strings.Contains(got[0].Why, tc.want), got[0].Why)
			assert.Equal(t, got[0].Unpatched, noStart)
		})
	}
	set, err := ParseCPUSet("0-2,5,7-8")
	assert.NilError(t, err)
	assert.Equal(t, formatCPUs(set), "0-2,5,7-8")
	_, err = ParseCPUSet("3-1")
	assert.ErrorContains(t, err, "bad range")
}

const (
	checkpointV1 = `{"Data":{"PodDeviceEntries":[{"PodUID":"uid-gpu","ContainerName":"c","ResourceName":"example.com/gpu","DeviceIDs":["dev0"],"AllocResp":"Cg=="}],"RegisteredDevices":{"example.com/gpu":["dev0","dev1"]}},"Checksum":1}`
	checkpointV2 = `{"Data":{"PodDeviceEntries":[{"PodUID":"uid-gpu","ContainerName":"c","ResourceName":"example.com/gpu","DeviceIDs":{"-1":["dev0"]},"AllocResp":"Cg=="}],"RegisteredDevices":{"example.com/gpu":["dev0","dev1"]}},"Checksum":1}`
)

func TestDeviceCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name, data, to string
		findings       int
		note           string
	}{
		{"v1 to 1.19", checkpointV1, "v1.19.16", 0, "format v1, v1.19.16 restores it"},
		{"v1 to 1.20.13", checkpointV1, "v1.20.13", 1, ""},
		{"v1 to 1.20.15", checkpointV1, "v1.20.15", 0, "format v1, v1.20.15 restores it"},
		{"v1 to 1.21.7", checkpointV1, "v1.21.7", 1, ""},
		{"v1 to 1.21.14", checkpointV1, "v1.21.14", 0, "restores it"},
		{"v1 to 1.22", checkpointV1, "v1.22.17", 0, "restores it"},
		{"v2 to 1.21.0", checkpointV2, "v1.21.0", 0, "format v2"},
		{"empty", `{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":1}`, "v1.20.0", 0, "holds no device allocation"},
		{"garbage", `[`, "v1.20.0", 0, "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, note := DeviceCheckpoint("/cp", []byte(tc.data), mustVersion(t, tc.to), map[string]string{"uid-gpu": "default/gpu"})
			assert.Equal(t, len(got), tc.findings, "%+v", got)
			if tc.findings > 0 {
				assert.Equal(t, got[0].Pod, "default/gpu")
			}
			assert.Assert(t, strings.Contains(note, tc.note), note)
		})
	}
}

func TestShellWordsAndFlags(t *testing.T) {
	words, err := SplitShellWords(`--network-plugin=cni --pod-infra-container-image="registry.k8s.io/pause:3.2" --node-labels 'a=b c' --x\ y`)
	assert.NilError(t, err)
	assert.DeepEqual(t, words, []string{"--network-plugin=cni", "--pod-infra-container-image=registry.k8s.io/pause:3.2", "--node-labels", "a=b c", "--x y"})
	_, err = SplitShellWords(`--a="b`)
	assert.ErrorContains(t, err, "unterminated")

	v, ok := ParseEnvFile([]byte("# kubeadm\nKUBELET_KUBEADM_ARGS=\"--max-pods=20 --kube-reserved=cpu=1\"\n"), "KUBELET_KUBEADM_ARGS")
	assert.Assert(t, ok)
	assert.Equal(t, v, "--max-pods=20 --kube-reserved=cpu=1")

	flags, rest := ParseFlagArgs([]string{"--max-pods", "20", "--eviction-hard=memory.available<1Gi,nodefs.available<5%", "-v=2", "--fail-swap-on", "extra",
		"--feature-gates=A=true,B=false", "--cpu-manager-policy=static", "--reserved-cpus", "0-1", "--system-reserved=memory=1Gi"})
	assert.DeepEqual(t, rest, []string{"extra"})
	cfg, err := ParseKubeletConfig([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 50\nfeatureGates: {C: true}\nkubeReserved: {cpu: 200m}\n"))
	assert.NilError(t, err)
	assert.NilError(t, cfg.ApplyFlags(flags))
	assert.DeepEqual(t, cfg, KubeletConfig{KubeReserved: map[string]string{"cpu": "200m"}, SystemReserved: map[string]string{"memory": "1Gi"},
		EvictionHard: map[string]string{"memory.available": "1Gi", "nodefs.available": "5%"}, MaxPods: 20,
		CPUManagerPolicy: "static", ReservedSystemCPUs: "0-1", FeatureGates: map[string]bool{"A": true, "B": false, "C": true}})
	assert.ErrorContains(t, (&KubeletConfig{}).ApplyFlags([]FlagArg{{Name: "max-pods", Value: "x", HasValue: true}}), "--max-pods")
}

const helpText = `The kubelet is the primary "node agent" that runs on each node.

Flags:
      --config string      The Kubelet will load its initial configuration from this file.
      --feature-gates mapStringBool   A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:
                                      APIListChunking=true|false (BETA - default=true)
                                      ExecProbeTimeout=true|false (BETA - default=true)
                                      AllAlpha=true|false (ALPHA - default=false)
  -h, --help                          help for kubelet
      --max-pods int32                Number of Pods that can run on this Kubelet. (default 110)
  -v, --v Level                       number for the log level verbosity
      --version version[=true]        Print version information and quit
`

func TestPrintedVersion(t *testing.T) {
	// A real 1.21 kubelet warns about deprecated flags before the version.
	assert.Assert(t, PrintedVersion("Flag --network-plugin has been deprecated, will be removed along with dockershim.\nKubernetes v1.21.14+compat.1\n"))
	assert.Assert(t, !PrintedVersion("Usage:\n  kubelet [flags]\n"))
	// And a refused flag is a structured klog line.
	assert.Equal(t, firstError(`E1130 16:29:19.058809    2943 server.go:156] "Failed to parse kubelet flag" err="unknown flag: --bogus-flag"`+"\nUsage:\n"),
		`"Failed to parse kubelet flag" err="unknown flag: --bogus-flag"`)
}

func TestTargetFlags(t *testing.T) {
	h := ParseHelp(helpText)
	assert.DeepEqual(t, h.Flags, map[string]bool{"config": true, "feature-gates": true, "help": true, "max-pods": true, "v": true, "version": true})
	assert.Equal(t, h.Gates["ExecProbeTimeout"], "BETA - default=true")
	flags := []FlagArg{{Name: "config", Value: "/c", HasValue: true}, {Name: "network-plugin", Value: "cni", HasValue: true}}
	gates := map[string]bool{"ExecProbeTimeout": false, "DynamicKubeletConfig": true}
	for _, tc := range []struct {
		name  string
		dry   DryParse
		help  *Help
		whys  []string
		notes int
	}{
		{"refused", DryParse{Ran: true, Output: "F1130 10:00:00.000000    4242 server.go:160] unknown flag: --network-plugin\n"}, &h,
			[]string{"/k refuses the node's flags: unknown flag: --network-plugin (`/k <flags> --version`)",
				"--network-plugin is not listed by /k --help: removed (refused at start) or deprecated and hidden",
				`feature gate DynamicKubeletConfig=true is not listed by /k --help: GA (--help lists no GA gate; refused only when locked to the other value) or removed (refused: "unrecognized feature gate")`}, 0},
		{"parsed: hidden flags are deprecated, not refused", DryParse{Ran: true, OK: true, Output: "Kubernetes v1.21.14"}, &h,
			[]string{`feature gate DynamicKubeletConfig=true is not listed by /k --help: GA (--help lists no GA gate; refused only when locked to the other value) or removed (refused: "unrecognized feature gate")`}, 2},
		{"not run, no help", DryParse{Why: "kubelet binary /k does not exist"}, nil, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notes := TargetFlags("/k", flags, gates, tc.dry, tc.help)
			var whys []string
			for _, f := range got {
				whys = append(whys, f.Why)
			}
			assert.DeepEqual(t, whys, tc.whys)
			assert.Equal(t, len(notes), tc.notes, "%q", notes)
		})
	}
}

// The golden shows every check's wording on one node.
func TestKillersGolden(t *testing.T) {
	node := testNode()
	pods := []*v1.Pod{
		mkPod("db", 5*time.Hour, selector(map[string]string{"disk": "ssd"}), tolerate("dedicated", nil), requests("cpu", "2")),
		mkPod("web", 4*time.Hour, tolerate(TaintNotReady, secs(5)), tolerate(TaintUnreachable, secs(300)), tolerate("dedicated", nil), requests("cpu", "1"),
			func(p *v1.Pod) {
				p.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}}, TimeoutSeconds: 2}
			}),
		mkPod("batch", 3*time.Hour, tolerate(TaintNotReady, nil), tolerate(TaintUnreachable, nil), requests("cpu", "2")),
		mkPod("gpu", 2*time.Hour, tolerate("dedicated", nil), requests("example.com/gpu", "1")),
	}
	to := mustVersion(t, "v1.22.17")
	var all []Finding
	all = append(all, NodeAffinity(to, node, pods)...)
	all = append(all, Taints(to, node, pods, 60*time.Second, DefaultNodeMonitorGracePeriod)...)
	alloc, err := Allocatable(node.Status.Capacity, node.Status.Allocatable, KubeletConfig{KubeReserved: map[string]string{"cpu": "1"}})
	assert.NilError(t, err)
	all = append(all, ResourceFit(alloc, pods)...)
	pressured := node.DeepCopy()
	pressured.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue}}
	all = append(all, EvictionPressure(pressured, pods)...)
	all = append(all, ExecProbes(mustVersion(t, "v1.19.16"), to, pods)...)
	f, _ := CPUManagerState("/var/lib/kubelet/cpu_manager_state", []byte(`{"policyName":"static","defaultCpuSet":"0-3"}`), KubeletConfig{})
	all = append(all, f...)
	f, _ = DeviceCheckpoint("/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", []byte(checkpointV1), mustVersion(t, "v1.21.7"), PodsByUID(pods))
	all = append(all, f...)
	h := ParseHelp(helpText)
	f, _ = TargetFlags("/usr/bin/kubelet-1.22", []FlagArg{{Name: "network-plugin", Value: "cni", HasValue: true}}, map[string]bool{"DynamicKubeletConfig": true},
		DryParse{Ran: true, Output: "Error: unknown flag: --network-plugin"}, &h)
	all = append(all, f...)
	data, err := json.MarshalIndent(all, "", "  ")
	assert.NilError(t, err)
	golden.Assert(t, string(data)+"\n", "killers.json.golden")
}

func TestEvictionPressure(t *testing.T) {
	withConds := func(conds ...v1.NodeConditionType) *v1.Node {
		n := testNode()
		for _, c := range conds {
			n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: c, Status: v1.ConditionTrue})
		}
		n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: v1.NodePIDPressure, Status: v1.ConditionFalse})
		return n
	}
	pods := []*v1.Pod{
		mkPod("besteffort", time.Hour),
		mkPod("burstable", time.Hour, requests("memory", "1Gi")),
		mkPod("tolerant", time.Hour, func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: "node.kubernetes.io/memory-pressure", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
		}),
		mkPod("mirror", time.Hour, mirror()),
	}
	for _, tc := range []struct {
		name  string
		node  *v1.Node
		wants []string
	}{
		{"no pressure", withConds(), nil},
		{"memory: BestEffort without the toleration", withConds(v1.NodeMemoryPressure), []string{"default/besteffort"}},
		{"disk: every non-critical pod", withConds(v1.NodeDiskPressure), []string{"default/besteffort", "default/burstable", "default/tolerant"}},
		{"memory and disk", withConds(v1.NodeMemoryPressure, v1.NodeDiskPressure), []string{"default/besteffort", "default/burstable", "default/tolerant"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range EvictionPressure(tc.node, pods) {
				got = append(got, f.Pod)
				assert.Equal(t, f.Patched, KeptAdmitted)
			}
			assert.DeepEqual(t, got, tc.wants)
		})
	}
}

// TestUntoleratedNoExecute is the kubelet's admission taint check (1.22
// on): only NoExecute taints, tolerationSeconds ignored.
func TestUntoleratedNoExecute(t *testing.T) {
	secs := int64(1)
	for _, tc := range []struct {
		name        string
		taints      []v1.Taint
		tolerations []v1.Toleration
		want        string // the key of the taint found, "" none
	}{
		{name: "no taints"},
		{name: "NoSchedule is the scheduler's", taints: []v1.Taint{{Key: "a", Effect: v1.TaintEffectNoSchedule}}},
		{name: "untolerated NoExecute", taints: []v1.Taint{{Key: "a", Effect: v1.TaintEffectNoSchedule}, {Key: "b", Effect: v1.TaintEffectNoExecute}}, want: "b"},
		{name: "tolerated for a second is tolerated", taints: []v1.Taint{{Key: "b", Effect: v1.TaintEffectNoExecute}},
			tolerations: []v1.Toleration{{Key: "b", Operator: v1.TolerationOpExists, TolerationSeconds: &secs}}},
		{name: "a toleration of another value does not tolerate", taints: []v1.Taint{{Key: "b", Value: "x", Effect: v1.TaintEffectNoExecute}},
			tolerations: []v1.Toleration{{Key: "b", Operator: v1.TolerationOpEqual, Value: "y"}}, want: "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode()
			n.Spec.Taints = tc.taints
			p := &v1.Pod{}
			p.Spec.Tolerations = tc.tolerations
			got, bad := UntoleratedNoExecute(p, n)
			assert.Equal(t, bad, tc.want != "")
			assert.Equal(t, got.Key, tc.want)
		})
	}
	assert.Assert(t, !KubeletChecksTaints(kubeletcompat.Version{Major: 1, Minor: 21, Patch: 14}))
	assert.Assert(t, KubeletChecksTaints(kubeletcompat.Version{Major: 1, Minor: 22}))
}

// TestDeclaredFeatures: a starting kubelet rejects a running pod that needs
// a node feature it does not declare; what it declares follows its gates.
func TestDeclaredFeatures(t *testing.T) {
	restartAll := func(p *v1.Pod) {
		p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	}
	noHostUsers := false
	userNSHostNet := func(p *v1.Pod) { p.Spec.HostNetwork, p.Spec.HostUsers = true, &noHostUsers }
	ended := func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }
	static := func(p *v1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.source": "file"} }
	for _, tc := range []struct {
		name     string
		to       string
		gates    map[string]bool
		pod      *v1.Pod
		want     int
		wantLost string // default: rejected by the admit handler
	}{
		{name: "1.37 -> 1.36 with default gates: 1.36 declares it too", to: "v1.36.5", pod: mkPod("ra", time.Hour, restartAll)},
		{name: "1.37 -> 1.36 with the feature's gate off", to: "v1.36.5", gates: map[string]bool{"RestartAllContainersOnContainerExits": false}, pod: mkPod("ra", time.Hour, restartAll), want: 1},
		{name: "1.37 -> 1.36 with the admit handler off", to: "v1.36.5", gates: map[string]bool{"RestartAllContainersOnContainerExits": false, "NodeDeclaredFeatures": false}, pod: mkPod("ra", time.Hour, restartAll)},
		{name: "1.36 -> 1.35: no admit handler by default", to: "v1.35.8", pod: mkPod("ra", time.Hour, restartAll)},
		{name: "1.36 -> 1.35 with the alpha handler on: the feature's gate is off", to: "v1.35.8", gates: map[string]bool{"NodeDeclaredFeatures": true}, pod: mkPod("ra", time.Hour, restartAll), want: 1},
		{name: "1.37: the handler is locked on", to: "v1.37.2", gates: map[string]bool{"NodeDeclaredFeatures": false, "RestartAllContainersOnContainerExits": false}, pod: mkPod("ra", time.Hour, restartAll), want: 1},
		{name: "user namespaces with host network: alpha, off by default", to: "v1.36.5", pod: mkPod("un", time.Hour, userNSHostNet), want: 1},
		{name: "user namespaces with host network: gate on", to: "v1.36.5", gates: map[string]bool{"UserNamespacesHostNetworkSupport": true}, pod: mkPod("un", time.Hour, userNSHostNet)},
		{name: "a kubelet before the feature infers nothing", to: "v1.35.8", gates: map[string]bool{"NodeDeclaredFeatures": true}, pod: mkPod("un", time.Hour, userNSHostNet)},
		{name: "an ended pod is not re-admitted", to: "v1.37.2", gates: map[string]bool{"RestartAllContainersOnContainerExits": false}, pod: mkPod("ra", time.Hour, restartAll, ended)},
		{name: "a pod that needs nothing", to: "v1.37.2", gates: map[string]bool{"RestartAllContainersOnContainerExits": false}, pod: mkPod("plain", time.Hour)},
		// A static pod's manifest is validated against the target's gates
		// before any admission handler runs.
		{name: "static pod, 1.37 -> 1.36 with the feature's gate off: manifest refused", to: "v1.36.5", gates: map[string]bool{"RestartAllContainersOnContainerExits": false}, pod: mkPod("ra", time.Hour, restartAll, static), want: 1, wantLost: "manifest refused"},
		{name: "static pod, 1.36 -> 1.35 defaults: manifest refused without the admit handler", to: "v1.35.8", pod: mkPod("ra", time.Hour, restartAll, static), want: 1, wantLost: "manifest refused"},
		{name: "static pod, 1.37 -> 1.36 defaults", to: "v1.36.5", pod: mkPod("ra", time.Hour, restartAll, static)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, err := kubeletcompat.ParseVersion(tc.to)
			assert.NilError(t, err)
			got := DeclaredFeatures(to, tc.gates, []*v1.Pod{tc.pod})
			assert.Equal(t, len(got), tc.want, "%+v", got)
			for _, f := range got {
				assert.Equal(t, f.Check, CheckDeclaredFeatures)
				assert.Equal(t, f.Patched, f.Unpatched)
				lost := tc.wantLost
				if lost == "" {
					lost = "PodFeatureUnsupported"
				}
				assert.Check(t, strings.Contains(f.Unpatched, lost), f.Unpatched)
			}
		})
	}
}
