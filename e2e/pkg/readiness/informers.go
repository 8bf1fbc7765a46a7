package readiness

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
)

// NewInformer is the e2e's informer of one resource: list, then watch
// from the list's resourceVersion, as every kube-apiserver 1.18 .. 1.37
// serves. client-go turns WatchListClient on from v0.35 (the first request
// is then a watch with sendInitialEvents that waits for a bookmark ending
// the initial events, which API servers without the WatchList feature
// never send: TestWatchAgainstAPIServer120's 1.20 API server never
// synced); NewInformer turns it off, as it was in client-go v0.31, for
// every informer of the process. list and watch are the typed client's
// (cs.CoreV1().Pods(ns).List, .Watch); obj is the resource's type. Not
// client-go's informer factory: it compiles every API group's informers
// and listers, an eighth of make test's cold build, for three resources.
func NewInformer[L runtime.Object](obj runtime.Object,
	list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) (cache.SharedIndexInformer, error) {
	if err := plainListWatch(); err != nil {
		return nil, err
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, o)
		},
		WatchFuncWithContext: watchFn,
	}
	return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{}), nil
}

var (
	watchListOnce sync.Once
	watchListErr  error
)

// plainListWatch sets client-go's WatchListClient feature off (Set takes
// precedence over KUBE_FEATURE_WatchListClient).
func plainListWatch() error {
	watchListOnce.Do(func() {
		g, ok := clientfeatures.FeatureGates().(interface {
			Set(clientfeatures.Feature, bool) error
		})
		if !ok {
			watchListErr = fmt.Errorf("client-go's feature gates (%T) cannot be set: %s stays as they say", clientfeatures.FeatureGates(), clientfeatures.WatchListClient)
			return
		}
		watchListErr = g.Set(clientfeatures.WatchListClient, false)
	})
	return watchListErr
}
