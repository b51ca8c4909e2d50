package benchkit

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// Nodes is the Node resource.
var Nodes = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// MetaEvents are told of the harness's watch events: the object's
// metadata as delivered (a delete's last known state included).
type MetaEvents struct {
	Add, Update, Delete func(*metav1.PartialObjectMetadata)
}

// WatchMetadata runs a metadata-only informer on gvr (in namespace; ""
// for all or cluster-scoped), managedFields and annotations dropped, and
// returns once its initial list is in; cancel ctx to stop it.
func WatchMetadata(ctx context.Context, mc metadata.Interface, gvr schema.GroupVersionResource, namespace string, on MetaEvents) error {
	inf := metadatainformer.NewFilteredMetadataInformer(mc, gvr, namespace, 0, nil, nil).Informer()
	if err := inf.SetTransform(func(o any) (any, error) {
		if m, ok := o.(*metav1.PartialObjectMetadata); ok {
			m.ManagedFields, m.Annotations = nil, nil
		}
		return o, nil
	}); err != nil {
		return err
	}
	tell := func(fn func(*metav1.PartialObjectMetadata)) func(any) {
		return func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if m, ok := o.(*metav1.PartialObjectMetadata); ok {
				fn(m)
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    tell(on.Add),
		UpdateFunc: func(_, o any) { tell(on.Update)(o) },
		DeleteFunc: tell(on.Delete),
	}); err != nil {
		return err
	}
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("the harness's watch of %s did not sync", gvr.Resource)
	}
	return nil
}

// ObjState is what a Watch keeps of one object: its resourceVersion (an
// etcd revision, compared as a number) and its labels under the
// benchmark's prefixes.
type ObjState struct {
	RV     uint64
	Labels map[string]string
}

// waiter is told the moment an object's state satisfies ok.
type waiter struct {
	ok   func(ObjState) bool
	at   time.Time
	done chan struct{}
}

// Watch is a metadata-only informer on one resource of one API server. It
// counts writes (an update with a new resourceVersion is one write; so is
// a create or delete), keeps each object's ObjState and tells waiters when
// the event that satisfies them arrives: latencies are stamped in the
// event handler, not when a poller looks.
type Watch struct {
	// Resource is the resource watched ("nodes").
	Resource string
	keep     func(label string) bool
	cancel   context.CancelFunc

	mu      sync.Mutex
	objs    map[string]ObjState
	writes  map[string]int // "create", "update", "delete"
	last    time.Time      // of the last write
	waiters map[string][]*waiter
}

// StartWatch watches gvr (in namespace, "" for all or cluster-scoped) and
// returns once the initial list is in.
// keep chooses the labels kept in each object's ObjState.
func StartWatch(ctx context.Context, mc metadata.Interface, gvr schema.GroupVersionResource, namespace string, keep func(label string) bool) (*Watch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &Watch{Resource: gvr.Resource, keep: keep, cancel: cancel, objs: map[string]ObjState{}, writes: map[string]int{}, waiters: map[string][]*waiter{}}
	err := WatchMetadata(ctx, mc, gvr, namespace, MetaEvents{
		Add:    func(m *metav1.PartialObjectMetadata) { w.observe(m, "create") },
		Update: func(m *metav1.PartialObjectMetadata) { w.observe(m, "update") },
		Delete: func(m *metav1.PartialObjectMetadata) { w.observe(m, "delete") },
	})
	if err != nil {
		cancel()
		return nil, err
	}
	w.ResetWrites()
	return w, nil
}

func (w *Watch) Stop() { w.cancel() }

func (w *Watch) observe(m *metav1.PartialObjectMetadata, op string) {
	now := time.Now()
	key := m.Namespace + "/" + m.Name
	rv, _ := strconv.ParseUint(m.ResourceVersion, 10, 64)
	w.mu.Lock()
	defer w.mu.Unlock()
	if op != "update" || w.objs[key].RV != rv {
		w.writes[op]++
		w.last = now
	}
	if op == "delete" {
		delete(w.objs, key)
		return
	}
	st := ObjState{RV: rv, Labels: w.kept(m.Labels)}
	w.objs[key] = st
	w.tell(key, st, now)
}

// tell wakes the waiters of key that st satisfies; w.mu is held.
func (w *Watch) tell(key string, st ObjState, at time.Time) {
	left := w.waiters[key][:0]
	for _, wt := range w.waiters[key] {
		if wt.ok(st) {
			wt.at = at
			close(wt.done)
			continue
		}
		left = append(left, wt)
	}
	w.waiters[key] = left
}

// Await returns when the Watch saw key's state satisfy ok: the time of
// that event (now, if the state already does).
func (w *Watch) Await(ctx context.Context, key string, ok func(ObjState) bool, timeout time.Duration) (time.Time, error) {
	wt := &waiter{ok: ok, done: make(chan struct{})}
	w.mu.Lock()
	if st, found := w.objs[key]; found && ok(st) {
		w.mu.Unlock()
		return time.Now(), nil
	}
	w.waiters[key] = append(w.waiters[key], wt)
	w.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-wt.done:
		return wt.at, nil
	case <-t.C:
	case <-ctx.Done():
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-wt.done:
		return wt.at, nil
	default:
	}
	w.drop(key, wt)
	if ctx.Err() != nil {
		return time.Time{}, ctx.Err()
	}
	return time.Time{}, fmt.Errorf("%s %s: not as expected after %s (last seen: resourceVersion %d, labels %v)",
		w.Resource, key, timeout, w.objs[key].RV, w.objs[key].Labels)
}

// drop removes a waiter that gave up; w.mu is held.
func (w *Watch) drop(key string, wt *waiter) {
	left := w.waiters[key][:0]
	for _, x := range w.waiters[key] {
		if x != wt {
			left = append(left, x)
		}
	}
	w.waiters[key] = left
}

// ResetWrites zeroes the write counts.
func (w *Watch) ResetWrites() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.writes)
}

// WritesSeen are the writes since ResetWrites, by operation, and when the
// last write was seen.
func (w *Watch) WritesSeen() (map[string]int, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.writes), w.last
}

// Len is the number of objects.
func (w *Watch) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.objs)
}

// kept are the labels keep chooses.
func (w *Watch) kept(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	maps.DeleteFunc(out, func(k, _ string) bool { return !w.keep(k) })
	return out
}
