package readiness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// The EndpointSlice versions the watcher reads: discovery.k8s.io/v1 is
// served from kube-apiserver 1.21, v1beta1 from 1.17 to 1.24 (on by
// default: a beta API of those minors). A 1.20 API server serves v1beta1
// only (read in 1.20.15's pkg/controlplane/instance.go).
var (
	SliceV1      = discoveryv1.SchemeGroupVersion.String()
	SliceV1beta1 = discoveryv1beta1.SchemeGroupVersion.String()
)

// errNoSlices: the API server answered, and serves no EndpointSlices.
var errNoSlices = fmt.Errorf("the API server serves no EndpointSlices (%s from kube-apiserver 1.21, %s from 1.17 to 1.24)", SliceV1, SliceV1beta1)

// SliceVersion is the EndpointSlice version the API server serves:
// SliceV1 when it does, else SliceV1beta1.
func SliceVersion(d discovery.DiscoveryInterface) (string, error) {
	for _, gv := range []string{SliceV1, SliceV1beta1} {
		list, err := d.ServerResourcesForGroupVersion(gv)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("discovery of %s: %w", gv, err)
		}
		for _, r := range list.APIResources {
			if r.Name == "endpointslices" {
				return gv, nil
			}
		}
	}
	return "", errNoSlices
}

// sliceVersionWait is SliceVersion, asked again every second while
// discovery fails (an API server that just started may answer 503) until
// ctx ends; an API server that serves no EndpointSlices is an answer.
func sliceVersionWait(ctx context.Context, d discovery.DiscoveryInterface) (string, error) {
	for {
		v, err := SliceVersion(d)
		if err == nil || errors.Is(err, errNoSlices) {
			return v, err
		}
		if serr := ctxtime.Sleep(ctx, time.Second); serr != nil {
			return "", fmt.Errorf("%w (%v)", err, serr)
		}
	}
}

// Options say what a Watch follows.
type Options struct {
	// Namespace whose pods and EndpointSlices are watched.
	Namespace string
	// Services whose EndpointSlices give the samples' Serving (the label
	// kubernetes.io/service-name); none: no EndpointSlice is watched.
	Services []string
}

// Watch follows the pods' Ready conditions and the Services'
// EndpointSlices with informers (list, then watch: every change the API
// server stores is an event, resumed from the last resourceVersion when a
// watch ends) and, once begun, keeps a sample of both at every change.
type Watch struct {
	// SliceVersion is the EndpointSlice version read (SliceV1 or
	// SliceV1beta1; "" without Services).
	SliceVersion string

	services  map[string]bool
	stop      chan struct{}
	stopOnce  sync.Once
	mu        sync.Mutex
	ready     map[string]bool
	seen      map[string]*v1.Pod         // every pod's last state, deleted ones too
	slices    map[string]map[string]bool // slice -> pod -> endpoint ready
	recording bool
	samples   []Sample
}

// Start lists and watches the namespace's pods and, with o.Services, its
// EndpointSlices in the version the API server serves; it returns once
// both are listed (discovery and lists within a minute).
func Start(ctx context.Context, cs kubernetes.Interface, o Options) (*Watch, error) {
	w := &Watch{stop: make(chan struct{}), services: map[string]bool{}, ready: map[string]bool{}, seen: map[string]*v1.Pod{},
		slices: map[string]map[string]bool{}}
	for _, s := range o.Services {
		w.services[s] = true
	}
	pods := cs.CoreV1().Pods(o.Namespace)
	podInf, err := NewInformer(&v1.Pod{}, pods.List, pods.Watch)
	if err != nil {
		return nil, err
	}
	if _, err := podInf.AddEventHandler(w.handler(w.pod)); err != nil {
		return nil, err
	}
	informers := []cache.SharedIndexInformer{podInf}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if len(o.Services) > 0 {
		v, err := sliceVersionWait(sctx, cs.Discovery())
		if err != nil {
			return nil, err
		}
		w.SliceVersion = v
		// Only the informer of that version: one of a version the API
		// server does not serve would list it (404) again and again.
		var sliceInf cache.SharedIndexInformer
		if v == SliceV1beta1 {
			slices := cs.DiscoveryV1beta1().EndpointSlices(o.Namespace)
			sliceInf, err = NewInformer(&discoveryv1beta1.EndpointSlice{}, slices.List, slices.Watch)
		} else {
			slices := cs.DiscoveryV1().EndpointSlices(o.Namespace)
			sliceInf, err = NewInformer(&discoveryv1.EndpointSlice{}, slices.List, slices.Watch)
		}
		if err != nil {
			return nil, err
		}
		if _, err := sliceInf.AddEventHandler(w.handler(w.slice)); err != nil {
			return nil, err
		}
		informers = append(informers, sliceInf)
	}
	var synced []cache.InformerSynced
	for _, inf := range informers {
		go inf.Run(w.stop)
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(sctx.Done(), synced...) {
		w.End()
		return nil, fmt.Errorf("readiness watchers: pods and EndpointSlices not listed within a minute")
	}
	return w, nil
}

// handler applies every event to the state with apply (under the lock; a
// deletion whose last state was missed counts as a deletion) and samples.
func (w *Watch) handler(apply func(obj interface{}, deleted bool)) cache.ResourceEventHandlerFuncs {
	on := func(obj interface{}, deleted bool) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj, deleted = t.Obj, true
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		apply(obj, deleted)
		w.sampleLocked()
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { on(obj, false) },
		UpdateFunc: func(_, obj interface{}) { on(obj, false) },
		DeleteFunc: func(obj interface{}) { on(obj, true) },
	}
}

func (w *Watch) pod(obj interface{}, deleted bool) {
	p, ok := obj.(*v1.Pod)
	switch {
	case !ok:
	case deleted:
		delete(w.ready, p.Name)
		w.seen[p.Name] = p
	default:
		w.ready[p.Name] = PodReady(p)
		w.seen[p.Name] = p
	}
}

func (w *Watch) slice(obj interface{}, deleted bool) {
	var name, svc string
	var eps map[string]bool
	switch es := obj.(type) {
	case *discoveryv1.EndpointSlice:
		name, svc, eps = es.Name, es.Labels[discoveryv1.LabelServiceName], SliceEndpoints(es)
	case *discoveryv1beta1.EndpointSlice:
		name, svc, eps = es.Name, es.Labels[discoveryv1beta1.LabelServiceName], SliceEndpointsV1beta1(es)
	default:
		return
	}
	switch {
	case !w.services[svc]:
	case deleted:
		delete(w.slices, name)
	default:
		w.slices[name] = eps
	}
}

// SliceEndpoints: pod name -> its endpoint is ready. A nil ready
// condition means ready (the API's definition).
func SliceEndpoints(es *discoveryv1.EndpointSlice) map[string]bool {
	return podEndpoints(len(es.Endpoints), func(i int) (*v1.ObjectReference, *bool) {
		return es.Endpoints[i].TargetRef, es.Endpoints[i].Conditions.Ready
	})
}

// SliceEndpointsV1beta1 is SliceEndpoints of a v1beta1 slice (the same
// fields: targetRef, conditions.ready, nil meaning ready).
func SliceEndpointsV1beta1(es *discoveryv1beta1.EndpointSlice) map[string]bool {
	return podEndpoints(len(es.Endpoints), func(i int) (*v1.ObjectReference, *bool) {
		return es.Endpoints[i].TargetRef, es.Endpoints[i].Conditions.Ready
	})
}

// podEndpoints reads n endpoints of either API version.
func podEndpoints(n int, endpoint func(i int) (*v1.ObjectReference, *bool)) map[string]bool {
	out := map[string]bool{}
	for i := 0; i < n; i++ {
		ref, ready := endpoint(i)
		if ref == nil || ref.Kind != "Pod" {
			continue
		}
		out[ref.Name] = out[ref.Name] || ready == nil || *ready
	}
	return out
}

// stateLocked is the current sample: a pod is serving when any slice has
// a ready endpoint for it.
func (w *Watch) stateLocked() Sample {
	smp := Sample{T: time.Now(), Ready: map[string]bool{}, Serving: map[string]bool{}}
	for name, r := range w.ready {
		smp.Ready[name] = r
	}
	for _, eps := range w.slices {
		for name, r := range eps {
			smp.Serving[name] = smp.Serving[name] || r
		}
	}
	return smp
}

func (w *Watch) sampleLocked() {
	if w.recording {
		w.samples = append(w.samples, w.stateLocked())
	}
}

// Current is the state now.
func (w *Watch) Current() Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stateLocked()
}

// Pods are the last state seen of every pod since Start, deleted ones
// included (copies: the informers' objects are shared).
func (w *Watch) Pods() map[string]*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]*v1.Pod, len(w.seen))
	for name, p := range w.seen {
		out[name] = p.DeepCopy()
	}
	return out
}

// Begin starts the samples from the state now.
func (w *Watch) Begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recording = true
	w.samples = []Sample{w.stateLocked()}
}

// End stops the informers and returns the samples, closed by the state
// at the end; after the first call it only returns nil.
func (w *Watch) End() []Sample {
	first := false
	w.stopOnce.Do(func() {
		close(w.stop)
		first = true
	})
	if !first {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.recording {
		w.samples = append(w.samples, w.stateLocked())
	}
	w.recording = false
	return w.samples
}

// WaitState waits until want (given the current state) says nothing:
// every 100 ms, for timeout at most; the error then says why not.
func (w *Watch) WaitState(ctx context.Context, timeout time.Duration, want func(Sample) string) error {
	deadline := time.Now().Add(timeout)
	for {
		why := want(w.Current())
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %s", timeout, why)
		}
		if err := ctxtime.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}
