package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCPUQuota(t *testing.T) {
	for in, want := range map[string]int64{"20000 100000": 200, "max 100000": -1, "10000 100000\n": 100} {
		q, err := parseCPUMax(in, "d")
		if err != nil || q.milli() != want {
			t.Errorf("%q: got %+v (%dm), %v; want %dm", in, q, q.milli(), err, want)
		}
	}
	if _, err := parseCPUMax("garbage", "d"); err == nil {
		t.Error("garbage must fail")
	}
	if s := (cpuQuota{}).String(); s != "unknown" {
		t.Errorf("zero quota: %q", s)
	}
}

func TestFindDirAndReadV1Quota(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "kubepods", "burstable", "pod1234", "abcdef")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"cpu.cfs_quota_us": "20000\n", "cpu.cfs_period_us": "100000\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := findDir(filepath.Join(root, "kubepods"), "abcdef")
	if err != nil || got != dir {
		t.Fatalf("findDir: %q %v", got, err)
	}
	q, err := readV1Quota(got)
	if err != nil || q.milli() != 200 || !strings.HasPrefix(q.String(), "200m") {
		t.Fatalf("readV1Quota: %+v %v", q, err)
	}
	if got, _ := findDir(filepath.Join(root, "kubepods"), "missing"); got != "" {
		t.Fatalf("missing: %q", got)
	}
}

func TestAPIResizeState(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}}}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Resources: &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}},
			Conditions: []v1.PodCondition{{Type: "PodResizeInProgress", Status: v1.ConditionTrue}}}}
	want := "API: spec cpu limit 200m, status cpu limit 100m, condition PodResizeInProgress=True ()"
	if got := apiResizeState(pod); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestPendingResizeRefused(t *testing.T) {
	r := &pendingResize{pod: "resize-009", from: "1.32.13", to: "1.33.13", api: "1.33.13", when: ResizeWhileOldKubelet, refused: `Pod "resize-009" is invalid: spec: Forbidden: Pod running on node without support for resize`}
	c := r.check(nil, nil, "patched", nil)
	if !c.Passed || !strings.Contains(c.Detail, "without support for resize") || !strings.Contains(c.Name, "while kubelet 1.32.13 ran") {
		t.Fatalf("%+v", c)
	}
	r.when = ResizeBetweenKubelets
	if w := r.whenText(); w != "between kubelet 1.32.13 and 1.33.13 (no kubelet ran)" {
		t.Fatal(w)
	}
}
