package fleet

// The pod ledger of a roll: every pod of the workloads' namespace by UID,
// through an informer, with when it appeared and when it began to go away.
// A drain's evictions and the pods created to replace them are counted
// from it; a list before and after would miss a pod evicted twice (moved
// onto a node drained later).

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podRecord is one pod (one UID) as the ledger saw it.
type podRecord struct {
	Name, UID string
	// Node is the last node the pod was bound to.
	Node string
	// App is its app label (the workload).
	App string
	// Created: the pod appeared after the ledger started, at Seen.
	Created bool
	Seen    time.Time
	// Deleted is when it was first seen terminating or gone (zero: it
	// stays).
	Deleted time.Time
	// Retired: the e2e deleted it itself (the fault roll's canary, at the
	// retry): not counted as evicted.
	Retired bool
}

type podLedger struct {
	mu     sync.Mutex
	synced bool
	pods   map[string]*podRecord
	stop   chan struct{}
	once   sync.Once
	now    func() time.Time
}

// startLedger lists and watches the namespace's pods; it returns once they
// are listed (a minute at most).
func startLedger(ctx context.Context, cs kubernetes.Interface, namespace string) (*podLedger, error) {
	l := &podLedger{pods: map[string]*podRecord{}, stop: make(chan struct{}), now: time.Now}
	pods := cs.CoreV1().Pods(namespace)
	inf, err := readiness.NewInformer(&v1.Pod{}, pods.List, pods.Watch)
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { l.observe(obj, false) },
		UpdateFunc: func(_, obj interface{}) { l.observe(obj, false) },
		DeleteFunc: func(obj interface{}) { l.observe(obj, true) },
	}); err != nil {
		return nil, err
	}
	go inf.Run(l.stop)
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(sctx.Done(), inf.HasSynced) {
		l.end()
		return nil, fmt.Errorf("pod ledger: pods of %s not listed within a minute", namespace)
	}
	l.mu.Lock()
	l.synced = true
	l.mu.Unlock()
	return l, nil
}

// observe records one event: pods listed before the ledger synced are the
// roll's starting set; a pod terminating or deleted is gone from then on.
func (l *podLedger) observe(obj interface{}, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = t.Obj, true
	}
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	r, known := l.pods[string(p.UID)]
	if !known {
		r = &podRecord{Name: p.Name, UID: string(p.UID), App: p.Labels["app"], Created: l.synced, Seen: now}
		l.pods[string(p.UID)] = r
	}
	if p.Spec.NodeName != "" {
		r.Node = p.Spec.NodeName
	}
	if (deleted || p.DeletionTimestamp != nil) && r.Deleted.IsZero() {
		r.Deleted = now
	}
}

// end stops the informer and returns the records.
func (l *podLedger) end() []podRecord {
	l.once.Do(func() { close(l.stop) })
	return l.records()
}

func (l *podLedger) records() []podRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]podRecord, 0, len(l.pods))
	for _, r := range l.pods {
		out = append(out, *r)
	}
	return out
}

// within says whether t falls in [from, to].
func within(t, from, to time.Time) bool {
	return !t.IsZero() && !t.Before(from) && !t.After(to)
}

// deletedFrom counts the pods of node ("": any) that began to go away in
// [from, to]: a drain's evictions, a controller's replacements.
func deletedFrom(records []podRecord, node string, from, to time.Time) int {
	n := 0
	for _, r := range records {
		if (node == "" || r.Node == node) && within(r.Deleted, from, to) && !r.Retired {
			n++
		}
	}
	return n
}

// createdIn counts the pods that appeared in [from, to] (rescheduled
// replacements, a Job's new pod).
func createdIn(records []podRecord, from, to time.Time) int {
	n := 0
	for _, r := range records {
		if r.Created && within(r.Seen, from, to) {
			n++
		}
	}
	return n
}

// deletedUIDs are the UIDs that began to go away at any time.
func deletedUIDs(records []podRecord) map[string]bool {
	out := map[string]bool{}
	for _, r := range records {
		if !r.Deleted.IsZero() {
			out[r.UID] = true
		}
	}
	return out
}

// retire marks app's records Retired.
func retire(records []podRecord, app string) {
	for i := range records {
		if records[i].App == app {
			records[i].Retired = true
		}
	}
}

// podsOfApp counts the records of one workload (its pods over the roll).
func podsOfApp(records []podRecord, app string) int {
	n := 0
	for _, r := range records {
		if r.App == app {
			n++
		}
	}
	return n
}
