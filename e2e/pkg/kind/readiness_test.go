package kind

import (
	"context"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
)

// readyTestPod is a pod of the namespace on node: a workload's (app
// label) or, with app "", a static pod's mirror pod; period is its
// readiness probe's (0: none).
func readyTestPod(name, node, app string, period int32) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{}}, Spec: v1.PodSpec{NodeName: node,
		Containers: []v1.Container{{Name: "c"}}}}
	if app == "" {
		p.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "hash"}
	} else {
		p.Labels["app"] = app
	}
	if period > 0 {
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: period}
	}
	return p
}

func TestGroupOf(t *testing.T) {
	for _, tc := range []struct {
		pod  *v1.Pod
		want readyGroup
	}{
		{pod: readyTestPod("web-5d4-x", "w", DeploymentName, 2), want: readyGroup{name: groupDeployment, endpoints: true}},
		{pod: readyTestPod("db-0", "w", StatefulSetName, 2), want: readyGroup{name: groupStatefulSet, endpoints: true}},
		{pod: readyTestPod("agent-x", "w", DaemonSetName, 2), want: readyGroup{name: groupDaemonSet}},
		{pod: readyTestPod("probes", "w", ProbePodName, 2), want: readyGroup{name: groupProbes}},
		{pod: readyTestPod("web-000-w", "w", "", 5), want: readyGroup{name: groupStatic}},
		{pod: readyTestPod("someone-elses", "w", "x", 0), want: readyGroup{name: groupOther}},
	} {
		t.Run(tc.pod.Name, func(t *testing.T) {
			assert.Equal(t, groupOf(tc.pod), tc.want)
		})
	}
	// A mirror pod is a static pod whatever its labels.
	mirror := readyTestPod("web-000-w", "w", DeploymentName, 5)
	mirror.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "hash"}
	assert.Equal(t, groupOf(mirror).name, groupStatic)
}

func TestProbePeriod(t *testing.T) {
	two := readyTestPod("multi", "w", "x", 5)
	two.Spec.Containers = append(two.Spec.Containers, v1.Container{Name: "d", ReadinessProbe: &v1.Probe{PeriodSeconds: 7}}, v1.Container{Name: "e"})
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want int32
	}{
		{name: "no readiness probe", pod: readyTestPod("p", "w", "x", 0), want: 0},
		{name: "period 2", pod: readyTestPod("p", "w", "x", 2), want: 2},
		{name: "the longest of the containers", pod: two, want: 7},
		{name: "unset: the API's default", pod: func() *v1.Pod {
			p := readyTestPod("p", "w", "x", 0)
			p.Spec.Containers[0].ReadinessProbe = &v1.Probe{}
			return p
		}(), want: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, probePeriod(tc.pod), tc.want)
		})
	}
}

// TestNodeReadiness: a node's swap counts the pods on that node only,
// whatever happens to the pods of another node meanwhile, grouped by
// workload in a fixed order; a pod deleted during the swap still counts
// for its node.
func TestNodeReadiness(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	pods := map[string]*v1.Pod{}
	for _, p := range []*v1.Pod{
		readyTestPod("web-a", "w1", DeploymentName, 2), readyTestPod("web-b", "w2", DeploymentName, 2),
		readyTestPod("db-0", "w1", StatefulSetName, 2),
		readyTestPod("agent-1", "w1", DaemonSetName, 2), readyTestPod("agent-2", "w2", DaemonSetName, 2), readyTestPod("agent-c", "cp", DaemonSetName, 2),
		readyTestPod("probes", "w2", ProbePodName, 2),
		readyTestPod("web-000-w1", "w1", "", 5), readyTestPod("init-003-w1", "w1", "", 0),
	} {
		pods[p.Name] = p
	}
	all := func(except ...string) map[string]bool {
		m := map[string]bool{}
		for name := range pods {
			m[name] = true
		}
		for _, e := range except {
			m[e] = false
		}
		return m
	}
	serving := func(except ...string) map[string]bool {
		m := map[string]bool{"web-a": true, "web-b": true, "db-0": true}
		for _, e := range except {
			m[e] = false
		}
		return m
	}
	gone := all()
	delete(gone, "init-003-w1") // deleted, as an unpatched kubelet recreates a static pod
	samples := []readiness.Sample{
		{T: at(0), Ready: all(), Serving: serving()},
		// w1's kubelet started at 1; at 3 web-a is NotReady, at 4 its
		// endpoint not ready; web-b and agent-2 (w2) flap too: not w1's
		{T: at(3), Ready: all("web-a", "web-b", "agent-2"), Serving: serving("web-b")},
		{T: at(4), Ready: all("web-a", "web-000-w1"), Serving: serving("web-a")},
		{T: at(6), Ready: gone, Serving: serving()},
		{T: at(8), Ready: all(), Serving: serving()},
	}
	groups := nodeReadiness(samples, pods, "w1", at(1))
	var names []string
	for _, g := range groups {
		names = append(names, g.Group)
		for _, p := range g.Pods {
			assert.Equal(t, pods[p.Pod].Spec.NodeName, "w1", "%s counted for w1's swap", p.Pod)
		}
	}
	assert.DeepEqual(t, names, []string{groupDeployment, groupStatefulSet, groupDaemonSet, groupStatic})
	web := groups[0]
	assert.Equal(t, web.Endpoints, true)
	assert.Equal(t, web.PeriodSeconds, int32(2))
	assert.DeepEqual(t, web.Pods, []report.PodReadiness{{Pod: "web-a", Transitions: 1, EndpointRemovals: 1, LongestGapSeconds: 3, LongestEndpointGapSeconds: 2,
		FirstNotReadySeconds: 2, ReadyAtEnd: true, EndpointReadyAtEnd: true}})
	assert.Equal(t, groups[1].Sum().EndpointRemovals, 0)
	assert.Equal(t, groups[2].Endpoints, false)
	assert.DeepEqual(t, groups[2].Sum(), report.PodReadiness{})
	static := groups[3]
	assert.Equal(t, static.PeriodSeconds, int32(5))
	// sorted: init-003-w1 (gone from 6 to 8), web-000-w1 (NotReady 4 to 6)
	assert.Equal(t, static.Pods[0].Pod, "init-003-w1")
	assert.Equal(t, static.Pods[0].Transitions, 1)
	assert.Equal(t, static.Pods[0].LongestGapSeconds, 2.0)
	assert.Equal(t, static.Pods[1].Transitions, 1)

	// w2's swap sees its own flaps, not w1's.
	w2 := nodeReadiness(samples, pods, "w2", at(1))
	var w2names []string
	transitions := 0
	for _, g := range w2 {
		w2names = append(w2names, g.Group)
		transitions += g.Sum().Transitions
	}
	assert.DeepEqual(t, w2names, []string{groupDeployment, groupDaemonSet, groupProbes})
	assert.Equal(t, transitions, 2)
	assert.Equal(t, w2[0].Sum().EndpointRemovals, 1)
	// A node without a pod of the namespace has no group.
	assert.Assert(t, is.Len(nodeReadiness(samples, pods, "elsewhere", at(1)), 0))
}

func TestNodeReadinessChecks(t *testing.T) {
	kept := report.PodReadiness{Pod: "web-a", FirstNotReadySeconds: -1, ReadyAtEnd: true, EndpointReadyAtEnd: true}
	dropped := report.PodReadiness{Pod: "web-a", Transitions: 1, EndpointRemovals: 1, LongestGapSeconds: 1.8, LongestEndpointGapSeconds: 1.9,
		FirstNotReadySeconds: 7, ReadyAtEnd: true, EndpointReadyAtEnd: true}
	notBack := kept
	notBack.ReadyAtEnd = false
	group := func(name string, endpoints bool, p report.PodReadiness) report.ReadyGroup {
		return report.ReadyGroup{Group: name, PeriodSeconds: 2, Endpoints: endpoints, Pods: []report.PodReadiness{p}}
	}
	for _, tc := range []struct {
		name    string
		variant string
		minor   int
		group   report.ReadyGroup
		passed  bool
		detail  string
	}{
		{name: "patched keeps Ready and the endpoint", variant: report.Patched, minor: 21, group: group(groupDeployment, true, kept), passed: true,
			detail: "0 Ready->NotReady, longest NotReady 0.0s; 0 endpoint removals"},
		{name: "patched drops Ready and the endpoint", variant: report.Patched, minor: 21, group: group(groupDeployment, true, dropped),
			detail: "FAIL: web-a: 1 Ready->NotReady, 1 endpoint removals"},
		{name: "patched drops Ready of a pod not behind a Service", variant: report.Patched, minor: 31, group: group(groupDaemonSet, false, dropped),
			detail: "1 Ready->NotReady, longest NotReady 1.8s; FAIL"},
		{name: "patched pod not Ready at the end", variant: report.Patched, minor: 21, group: group(groupProbes, false, notBack), detail: "FAIL: web-a: 0 Ready->NotReady"},
		{name: "patched static pods are asserted", variant: report.Patched, minor: 21, group: group(groupStatic, false, dropped),
			detail: "1 Ready->NotReady, longest NotReady 1.8s; FAIL"},
		{name: "patched static pods kept", variant: report.Patched, minor: 21, group: group(groupStatic, false, kept), passed: true,
			detail: "0 Ready->NotReady, longest NotReady 0.0s"},
		{name: "patched static pods are asserted from 1.35 too", variant: report.Patched, minor: 37, group: group(groupStatic, false, dropped),
			detail: "1 Ready->NotReady, longest NotReady 1.8s; FAIL"},
		{name: "the control's static pods are reported", variant: report.Unpatched, minor: 37, group: group(groupStatic, false, dropped), passed: true,
			detail: "reported (the control: upstream gives a static pod no status at a restart"},
		{name: "the control is reported", variant: report.Unpatched, minor: 21, group: group(groupDeployment, true, dropped), passed: true,
			detail: "1 endpoint removals, longest without a ready endpoint 1.9s; reported (the control"},
		{name: "the control without a gap says so", variant: report.Unpatched, minor: 21, group: group(groupDeployment, true, kept), passed: true,
			detail: "no gap seen here"},
		{name: "1.35 patched reported only", variant: report.Patched, minor: 35, group: group(groupDeployment, true, dropped), passed: true,
			detail: "reported, not asserted (upstream keeps Ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := nodeReadinessChecks("kc-e2e-patched w1 1.20.15 -> 1.21.14", tc.variant, tc.minor, []report.ReadyGroup{tc.group})
			assert.Equal(t, len(checks), 1)
			assert.Equal(t, checks[0].Passed, tc.passed, checks[0].Detail)
			assert.Assert(t, is.Contains(checks[0].Detail, tc.detail))
			assert.Assert(t, is.Contains(checks[0].Name, "kc-e2e-patched w1 1.20.15 -> 1.21.14: readiness "+tc.variant+" "+tc.group.Group+" (1 pods, probe period 2s)"))
		})
	}
}

func TestSettledOn(t *testing.T) {
	pods := map[string]*v1.Pod{}
	for _, p := range []*v1.Pod{readyTestPod("web-a", "w1", DeploymentName, 2), readyTestPod("agent-1", "w1", DaemonSetName, 2),
		readyTestPod("web-b", "w2", DeploymentName, 2), readyTestPod("gone", "w1", DaemonSetName, 2)} {
		pods[p.Name] = p
	}
	settled := settledOn(func() map[string]*v1.Pod { return pods }, "w1")
	for _, tc := range []struct {
		name string
		smp  readiness.Sample
		want string
	}{
		{name: "every pod Ready with its endpoint", want: "",
			smp: readiness.Sample{Ready: map[string]bool{"web-a": true, "agent-1": true, "web-b": false}, Serving: map[string]bool{"web-a": true}}},
		{name: "a pod not Ready, another's endpoint not ready", want: "agent-1 not Ready, web-a without a ready endpoint",
			smp: readiness.Sample{Ready: map[string]bool{"web-a": true, "agent-1": false}, Serving: map[string]bool{"web-a": false}}},
		{name: "no pod on the node", want: "no pod of kc-e2e on w1",
			smp: readiness.Sample{Ready: map[string]bool{"web-b": true}, Serving: map[string]bool{"web-b": true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, settled(tc.smp), tc.want)
		})
	}
}

// TestCreateWorkloadsWebService: the Service the readiness watchers follow
// selects the Deployment's pods and targets their port.
func TestCreateWorkloadsWebService(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewSimpleClientset(&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: Namespace}})
	c := &Cluster{Client: cs}
	assert.NilError(t, c.CreateWorkloads(ctx, "w2"))
	svc, err := cs.CoreV1().Services(Namespace).Get(ctx, WebService, metav1.GetOptions{})
	assert.NilError(t, err)
	d, err := cs.AppsV1().Deployments(Namespace).Get(ctx, DeploymentName, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Assert(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)))
	assert.Equal(t, svc.Spec.Ports[0].TargetPort.IntValue(), int(d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort))
	assert.Equal(t, groupOf(&v1.Pod{ObjectMeta: d.Spec.Template.ObjectMeta}).endpoints, true)
	// The StatefulSet's headless Service is the other one followed.
	sts, err := cs.CoreV1().Services(Namespace).Get(ctx, StatefulSetName, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, readyServices, []string{svc.Name, sts.Name})
}
