package app

import (
	"os"
	"reflect"
	"testing"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	v1 "k8s.io/api/core/v1"
)

// TestRecordStaticPodStatus: record writes what the previous kubelet last
// reported in a static pod's mirror pod (its Ready condition, and each
// container the runtime runs under the ID the mirror names), so that the
// next kubelet starts the pod from it as it starts an API pod from the API
// server's status. A pod that only claims to be the mirror (another name),
// a container ID the runtime does not run, or no --kubeconfig record none.
func TestRecordStaticPodStatus(t *testing.T) {
	started := true
	mirror := func(name, containerID string) v1.Pod {
		p := v1.Pod{}
		p.Name, p.Namespace, p.UID = name, "kube-system", "mirror-uid"
		p.Annotations = map[string]string{cri.ConfigMirrorAnnotation: "etcd-uid"}
		p.Spec.NodeName = testNode
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "etcd", ContainerID: containerID, Ready: true, Started: &started,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
		return p
	}
	recorded := []kubeletcompat.StaticPodContainer{{Name: "etcd", ContainerID: "containerd://c-etcd-uid-etcd", Ready: true, Started: true}}
	for _, tc := range []struct {
		name       string
		api        []v1.Pod // nil: no --kubeconfig
		ready      bool
		containers []kubeletcompat.StaticPodContainer
	}{
		{"mirror pod", []v1.Pod{mirror("etcd-"+testNode, "containerd://c-etcd-uid-etcd")}, true, recorded},
		{"a pod of another name claims the static UID", []v1.Pod{mirror("evil", "containerd://c-etcd-uid-etcd")}, false, nil},
		{"mirror names a container the runtime does not run", []v1.Pod{mirror("etcd-"+testNode, "containerd://c-other")}, false, nil},
		{"no kubeconfig", nil, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods("v1.33.13", pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true})
			args := []string{"record", "--kubelet-binary", f.kubeletBinary("v1.33.13")}
			if tc.api != nil {
				args = append(args, "--kubeconfig", apiServer(t, f.dir, tc.api...))
			}
			if code := f.run(args...); code != 0 {
				t.Fatalf("record exit %d: %s", code, f.stderr.String())
			}
			got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
			if err != nil {
				t.Fatal(err)
			}
			if len(got.StaticPods) != 1 {
				t.Fatalf("static pods %+v, want etcd", got.StaticPods)
			}
			sp := got.StaticPods[0]
			if sp.Ready != tc.ready || !reflect.DeepEqual(sp.Containers, tc.containers) {
				t.Errorf("recorded ready %v, containers %+v; want %v, %+v", sp.Ready, sp.Containers, tc.ready, tc.containers)
			}
		})
	}
}
