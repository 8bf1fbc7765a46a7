package readiness

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	v1 "k8s.io/api/core/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiserver120 answers what the watcher asks with what a kube-apiserver
// 1.20 serves: core/v1 pods and discovery.k8s.io/v1beta1 EndpointSlices,
// listed and watched (JSON, one stream per watch, fed by events); every
// other path is 404, as discovery.k8s.io/v1 is there. It records the
// requests.
type apiserver120 struct {
	t        *testing.T
	mu       sync.Mutex
	requests []string
	events   map[string]chan []byte // collection path -> watch events
	lists    map[string]runtime.Object
}

func (a *apiserver120) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests = append(a.requests, r.URL.Path+"?"+r.URL.RawQuery)
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	write := func(obj interface{}) {
		b, err := json.Marshal(obj)
		if err != nil {
			a.t.Error(err)
		}
		w.Write(b)
	}
	switch {
	case r.URL.Path == "/apis/discovery.k8s.io/v1beta1":
		write(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: SliceV1beta1,
			APIResources: []metav1.APIResource{{Name: "endpointslices", Namespaced: true, Kind: "EndpointSlice", Verbs: []string{"get", "list", "watch"}}}})
	case a.lists[r.URL.Path] != nil && r.URL.Query().Get("watch") != "true":
		write(a.lists[r.URL.Path])
	case a.events[r.URL.Path] != nil:
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case ev := <-a.events[r.URL.Path]:
				w.Write(append(ev, '\n'))
				w.(http.Flusher).Flush()
			}
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		write(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: 404,
			Message: "the server could not find the requested resource"})
	}
}

func (a *apiserver120) send(t *testing.T, path, typ string, obj runtime.Object) {
	b, err := json.Marshal(map[string]interface{}{"type": typ, "object": obj})
	assert.NilError(t, err)
	select {
	case a.events[path] <- b:
	case <-time.After(10 * time.Second):
		t.Fatalf("nobody watches %s", path)
	}
}

// TestWatchAgainstAPIServer120: the real client-go informers, through
// HTTP, against the API of kube-apiserver 1.20 (the kind provider's 1.19
// -> 1.20 step meets one during every node's swap): the slices are read as
// v1beta1, a pod going NotReady and its endpoint going not ready arrive as
// samples, and nothing but what 1.20 serves is asked for.
func TestWatchAgainstAPIServer120(t *testing.T) {
	yes, no := true, false
	podObj := func(ready bool, rv string) *v1.Pod {
		p := pod("a", "n1", ready)
		p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		p.ResourceVersion = rv
		return p
	}
	sliceObj := func(ready *bool, rv string) *discoveryv1beta1.EndpointSlice {
		es := sliceClients[1].object("s1", "svc", "a", ready).(*discoveryv1beta1.EndpointSlice)
		es.TypeMeta = metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: SliceV1beta1}
		es.ResourceVersion = rv
		es.AddressType = discoveryv1beta1.AddressTypeIPv4
		return es
	}
	podsPath, slicesPath := "/api/v1/namespaces/"+ns+"/pods", "/apis/discovery.k8s.io/v1beta1/namespaces/"+ns+"/endpointslices"
	a := &apiserver120{t: t, events: map[string]chan []byte{podsPath: make(chan []byte), slicesPath: make(chan []byte)},
		lists: map[string]runtime.Object{
			podsPath: &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "10"},
				Items: []v1.Pod{*podObj(true, "5")}},
			slicesPath: &discoveryv1beta1.EndpointSliceList{TypeMeta: metav1.TypeMeta{Kind: "EndpointSliceList", APIVersion: SliceV1beta1},
				ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []discoveryv1beta1.EndpointSlice{*sliceObj(&yes, "6")}},
		}}
	srv := httptest.NewServer(a)
	defer srv.Close()
	defer srv.CloseClientConnections()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	assert.NilError(t, err)
	ctx := context.Background()
	w, err := Start(ctx, cs, Options{Namespace: ns, Services: []string{"svc"}})
	assert.NilError(t, err)
	defer w.End()
	assert.Equal(t, w.SliceVersion, SliceV1beta1)
	assert.NilError(t, w.WaitState(ctx, 10*time.Second, func(s Sample) string {
		if !s.Ready["a"] || !s.Serving["a"] {
			return "not listed yet"
		}
		return ""
	}))
	w.Begin()
	a.send(t, podsPath, "MODIFIED", podObj(false, "11"))
	a.send(t, slicesPath, "MODIFIED", sliceObj(&no, "12"))
	a.send(t, podsPath, "MODIFIED", podObj(true, "13"))
	// The two informers run apart: wait for the pod's last event too.
	assert.NilError(t, w.WaitState(ctx, 10*time.Second, func(s Sample) string {
		if p := w.Pods()["a"]; !s.Ready["a"] || s.Serving["a"] || p.ResourceVersion != "13" {
			return "events not seen yet"
		}
		return ""
	}))
	samples := w.End()
	assert.Equal(t, Windows(samples)["a"].Drops, 1)
	assert.Equal(t, WindowsOf(samples, ServingOf)["a"].Drops, 1)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, req := range a.requests {
		path, query, _ := strings.Cut(req, "?")
		switch path {
		case "/apis/discovery.k8s.io/v1", "/apis/discovery.k8s.io/v1beta1":
			// discovery: v1 is 404 on 1.20
		case podsPath, slicesPath:
			// list and watch with what 1.20 knows (no sendInitialEvents:
			// client-go's WatchListClient is off)
			assert.Assert(t, !strings.Contains(query, "sendInitialEvents"), req)
		default:
			t.Errorf("asked %s, which the watcher should not need", req)
		}
	}
}
