package readiness

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

const ns = "kc-e2e"

// served is what discovery lists for the EndpointSlice group versions
// given.
func served(gvs ...string) []*metav1.APIResourceList {
	var out []*metav1.APIResourceList
	for _, gv := range gvs {
		out = append(out, &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "endpointslices", Namespaced: true, Kind: "EndpointSlice"}}})
	}
	return out
}

// TestSliceVersion: v1 where the API server serves it (1.21 on), v1beta1
// where it serves only that (1.17 .. 1.20: the kind provider's 1.18 ->
// 1.19 -> 1.20 steps watch such servers).
func TestSliceVersion(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resources []*metav1.APIResourceList
		failGet   bool
		want      string
		err       string
	}{
		{name: "1.21 .. 1.24: v1 and v1beta1", resources: served(SliceV1, SliceV1beta1), want: SliceV1},
		{name: "1.25 on: v1 only", resources: served(SliceV1), want: SliceV1},
		{name: "1.17 .. 1.20: v1beta1 only", resources: served(SliceV1beta1), want: SliceV1beta1},
		{name: "neither", err: "serves no EndpointSlices"},
		{name: "the group version without endpointslices", resources: []*metav1.APIResourceList{{GroupVersion: SliceV1}}, err: "serves no EndpointSlices"},
		{name: "discovery fails", resources: served(SliceV1), failGet: true, err: "discovery of discovery.k8s.io/v1: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewSimpleClientset()
			cs.Resources = tc.resources
			if tc.failGet {
				cs.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, errors.New("boom") })
			}
			got, err := SliceVersion(cs.Discovery())
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, got, tc.want)
		})
	}
}

func TestSliceEndpoints(t *testing.T) {
	yes, no := true, false
	ref := func(kind, name string) *v1.ObjectReference { return &v1.ObjectReference{Kind: kind, Name: name} }
	// nil means ready (the API's definition); an endpoint without a pod is
	// not one of ours; a pod ready in any endpoint is serving.
	want := map[string]bool{"a": true, "b": false, "c": true, "d": true}
	t.Run("v1", func(t *testing.T) {
		ep := func(r *v1.ObjectReference, ready *bool) discoveryv1.Endpoint {
			return discoveryv1.Endpoint{TargetRef: r, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
		}
		es := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{ep(ref("Pod", "a"), &yes), ep(ref("Pod", "b"), &no), ep(ref("Pod", "c"), nil),
			ep(ref("Pod", "d"), &no), ep(ref("Pod", "d"), &yes), ep(nil, &yes), ep(ref("Node", "n"), &yes)}}
		assert.DeepEqual(t, SliceEndpoints(es), want)
	})
	t.Run("v1beta1", func(t *testing.T) {
		ep := func(r *v1.ObjectReference, ready *bool) discoveryv1beta1.Endpoint {
			return discoveryv1beta1.Endpoint{TargetRef: r, Conditions: discoveryv1beta1.EndpointConditions{Ready: ready}}
		}
		es := &discoveryv1beta1.EndpointSlice{Endpoints: []discoveryv1beta1.Endpoint{ep(ref("Pod", "a"), &yes), ep(ref("Pod", "b"), &no), ep(ref("Pod", "c"), nil),
			ep(ref("Pod", "d"), &no), ep(ref("Pod", "d"), &yes), ep(nil, &yes), ep(ref("Node", "n"), &yes)}}
		assert.DeepEqual(t, SliceEndpointsV1beta1(es), want)
	})
}

func pod(name, node string, ready bool) *v1.Pod {
	st := v1.ConditionFalse
	if ready {
		st = v1.ConditionTrue
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.PodSpec{NodeName: node},
		Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: st}}}}
}

// sliceClient makes and updates the EndpointSlices of one version on the
// fake API server: a slice named name of Service svc with one endpoint
// for pod.
type sliceClient struct {
	version string
	object  func(name, svc, pod string, ready *bool) runtime.Object
	update  func(ctx context.Context, cs *fake.Clientset, obj runtime.Object) error
}

var sliceClients = []sliceClient{
	{
		version: SliceV1,
		object: func(name, svc, pod string, ready *bool) runtime.Object {
			return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
				Endpoints: []discoveryv1.Endpoint{{TargetRef: &v1.ObjectReference{Kind: "Pod", Name: pod}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}}}
		},
		update: func(ctx context.Context, cs *fake.Clientset, obj runtime.Object) error {
			_, err := cs.DiscoveryV1().EndpointSlices(ns).Update(ctx, obj.(*discoveryv1.EndpointSlice), metav1.UpdateOptions{})
			return err
		},
	},
	{
		version: SliceV1beta1,
		object: func(name, svc, pod string, ready *bool) runtime.Object {
			return &discoveryv1beta1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1beta1.LabelServiceName: svc}},
				Endpoints: []discoveryv1beta1.Endpoint{{TargetRef: &v1.ObjectReference{Kind: "Pod", Name: pod}, Conditions: discoveryv1beta1.EndpointConditions{Ready: ready}}}}
		},
		update: func(ctx context.Context, cs *fake.Clientset, obj runtime.Object) error {
			_, err := cs.DiscoveryV1beta1().EndpointSlices(ns).Update(ctx, obj.(*discoveryv1beta1.EndpointSlice), metav1.UpdateOptions{})
			return err
		},
	},
}

// TestWatch: against an API server serving v1 EndpointSlices and one
// serving v1beta1 only (kube-apiserver 1.20), the informers' events
// become samples once begun: a pod going NotReady and back, its endpoint
// going not ready, a pod deleted (its last state kept for Pods), the
// slices of another Service ignored.
func TestWatch(t *testing.T) {
	yes, no := true, false
	for _, sc := range sliceClients {
		t.Run(sc.version, func(t *testing.T) {
			ctx := context.Background()
			cs := fake.NewSimpleClientset(pod("a", "n1", true), pod("b", "n2", true),
				sc.object("s1", "svc", "a", &yes), sc.object("other", "other", "x", &yes))
			cs.Resources = served(sc.version)
			w, err := Start(ctx, cs, Options{Namespace: ns, Services: []string{"svc"}})
			assert.NilError(t, err)
			defer w.End()
			assert.Equal(t, w.SliceVersion, sc.version)
			assert.NilError(t, w.WaitState(ctx, 10*time.Second, func(s Sample) string {
				if !s.Ready["a"] || !s.Serving["a"] || !s.Ready["b"] {
					return "not listed yet"
				}
				return ""
			}))
			w.Begin()
			pods := cs.CoreV1().Pods(ns)
			_, err = pods.UpdateStatus(ctx, pod("a", "n1", false), metav1.UpdateOptions{})
			assert.NilError(t, err)
			assert.NilError(t, sc.update(ctx, cs, sc.object("s1", "svc", "a", &no)))
			_, err = pods.UpdateStatus(ctx, pod("a", "n1", true), metav1.UpdateOptions{})
			assert.NilError(t, err)
			assert.NilError(t, pods.Delete(ctx, "b", metav1.DeleteOptions{}))
			assert.NilError(t, w.WaitState(ctx, 10*time.Second, func(s Sample) string {
				if _, b := s.Ready["b"]; !s.Ready["a"] || s.Serving["a"] || b {
					return "updates not seen yet"
				}
				return ""
			}))
			samples := w.End()
			// 3 pod events, 1 slice event, the first and the last state
			assert.Equal(t, len(samples), 6)
			r := Windows(samples)
			e := WindowsOf(samples, ServingOf)
			assert.Equal(t, r["a"].Drops, 1)
			assert.Equal(t, r["a"].ReadyAtEnd, true)
			assert.Equal(t, e["a"].Drops, 1)
			assert.Equal(t, e["a"].ReadyAtEnd, false)
			assert.Equal(t, r["b"].Drops, 1)
			assert.Equal(t, r["b"].ReadyAtEnd, false)
			// the other Service's slice was never read
			_, other := e["x"]
			assert.Assert(t, !other, "an endpoint of another Service")
			seen := w.Pods()
			assert.Equal(t, len(seen), 2)
			assert.Equal(t, seen["b"].Spec.NodeName, "n2")
			assert.Assert(t, w.End() == nil, "a second End returns nothing")
		})
	}
}

// TestWatchWithoutServices: no EndpointSlice is read, so discovery is not
// asked (an API server without EndpointSlices is fine).
func TestWatchWithoutServices(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewSimpleClientset(pod("a", "n1", true))
	w, err := Start(ctx, cs, Options{Namespace: ns})
	assert.NilError(t, err)
	defer w.End()
	assert.Equal(t, w.SliceVersion, "")
	assert.NilError(t, w.WaitState(ctx, 10*time.Second, func(s Sample) string {
		if !s.Ready["a"] {
			return "not listed yet"
		}
		return ""
	}))
	assert.Equal(t, len(w.Current().Serving), 0)
}

// TestStartRefusesWithoutSlices: Services to follow on an API server
// serving no EndpointSlices is an error, not an empty watch.
func TestStartRefusesWithoutSlices(t *testing.T) {
	_, err := Start(context.Background(), fake.NewSimpleClientset(), Options{Namespace: ns, Services: []string{"svc"}})
	assert.ErrorContains(t, err, "serves no EndpointSlices")
}

func TestWaitStateSaysWhyNot(t *testing.T) {
	cs := fake.NewSimpleClientset()
	w, err := Start(context.Background(), cs, Options{Namespace: ns})
	assert.NilError(t, err)
	defer w.End()
	err = w.WaitState(context.Background(), 200*time.Millisecond, func(Sample) string { return "a not Ready" })
	assert.Error(t, err, "after 200ms: a not Ready")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, w.WaitState(ctx, time.Minute, func(Sample) string { return "never" }), context.Canceled)
}

// TestSliceVersionOverHTTP: the real discovery client against an API
// server answering as kube-apiserver 1.20 does (no discovery.k8s.io/v1:
// 404, whether its body is a Status or plain text) and as 1.21 does.
func TestSliceVersionOverHTTP(t *testing.T) {
	list := func(gv string) string {
		return `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"` + gv + `","resources":[{"name":"endpointslices","singularName":"","namespaced":true,"kind":"EndpointSlice","verbs":["get","list","watch"]}]}`
	}
	status404 := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`
	for _, tc := range []struct {
		name   string
		served map[string]string // path -> body; others 404
		plain  bool              // a 404's body is plain text
		want   string
	}{
		{name: "1.20: v1beta1 only, 404 as a Status", served: map[string]string{"/apis/discovery.k8s.io/v1beta1": list(SliceV1beta1)}, want: SliceV1beta1},
		{name: "1.20: v1beta1 only, 404 in plain text", served: map[string]string{"/apis/discovery.k8s.io/v1beta1": list(SliceV1beta1)}, plain: true, want: SliceV1beta1},
		{name: "1.21: both", served: map[string]string{"/apis/discovery.k8s.io/v1": list(SliceV1), "/apis/discovery.k8s.io/v1beta1": list(SliceV1beta1)}, want: SliceV1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, ok := tc.served[r.URL.Path]
				switch {
				case ok:
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(body))
				case tc.plain:
					http.NotFound(w, r)
				default:
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusNotFound)
					w.Write([]byte(status404))
				}
			}))
			defer srv.Close()
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
			assert.NilError(t, err)
			got, err := SliceVersion(cs.Discovery())
			assert.NilError(t, err)
			assert.Equal(t, got, tc.want)
		})
	}
}

// TestStartRetriesDiscovery: discovery that fails (a kube-apiserver just
// restarted) is asked again until it answers, within Start's minute or
// the caller's context.
func TestStartRetriesDiscovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int // the first discovery calls that fail
		timeout  time.Duration
		err      string
	}{
		{name: "answers at the third call", failures: 2, timeout: time.Minute},
		{name: "never answers", failures: 1 << 30, timeout: 1500 * time.Millisecond, err: "discovery of discovery.k8s.io/v1: 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewSimpleClientset()
			cs.Resources = served(SliceV1)
			calls := 0
			cs.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= tc.failures {
					return true, nil, errors.New("503")
				}
				return false, nil, nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			w, err := Start(ctx, cs, Options{Namespace: ns, Services: []string{"svc"}})
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			defer w.End()
			assert.Equal(t, w.SliceVersion, SliceV1)
			assert.Equal(t, calls, 3)
		})
	}
}
