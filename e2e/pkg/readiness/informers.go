package readiness

import (
	"fmt"
	"sync"

	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// NewInformerFactory is the e2e's informer factory for one namespace: its
// informers list, then watch from the list's resourceVersion, as every
// kube-apiserver 1.18 .. 1.37 serves. client-go turns WatchListClient on
// from v0.35 (the first request is then a watch with sendInitialEvents that
// waits for a bookmark ending the initial events, which API servers without
// the WatchList feature never send: TestWatchAgainstAPIServer120's 1.20
// API server never synced); NewInformerFactory turns it off, as it was in
// client-go v0.31, for every informer of the process.
func NewInformerFactory(cs kubernetes.Interface, namespace string) (informers.SharedInformerFactory, error) {
	if err := plainListWatch(); err != nil {
		return nil, err
	}
	return informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace)), nil
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
