package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// objState is what a watch keeps of one object: its resourceVersion (an
// etcd revision, compared as a number) and its labels under the
// benchmark's prefixes.
type objState struct {
	rv     uint64
	labels map[string]string
}

// waiter is told the moment an object's state satisfies ok.
type waiter struct {
	ok   func(objState) bool
	at   time.Time
	done chan struct{}
}

// watch is a metadata-only informer on one resource of one API server. It
// counts writes (an update with a new resourceVersion is one write; so is
// a create or delete), keeps each object's objState and tells waiters when
// the event that satisfies them arrives: latencies are stamped in the
// event handler, not when a poller looks.
type watch struct {
	resource string
	cancel   context.CancelFunc

	mu      sync.Mutex
	objs    map[string]objState
	writes  map[string]int // "create", "update", "delete"
	waiters map[string][]*waiter
}

// startWatch watches gvr (in namespace, "" for all or cluster-scoped) and
// returns once the initial list is in.
func startWatch(ctx context.Context, mc metadata.Interface, gvr schema.GroupVersionResource, namespace string) (*watch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &watch{resource: gvr.Resource, cancel: cancel, objs: map[string]objState{}, writes: map[string]int{}, waiters: map[string][]*waiter{}}
	err := benchkit.WatchMetadata(ctx, mc, gvr, namespace, benchkit.MetaEvents{
		Add:    func(m *metav1.PartialObjectMetadata) { w.observe(m, "create") },
		Update: func(m *metav1.PartialObjectMetadata) { w.observe(m, "update") },
		Delete: func(m *metav1.PartialObjectMetadata) { w.observe(m, "delete") },
	})
	if err != nil {
		cancel()
		return nil, err
	}
	w.resetWrites()
	return w, nil
}

func (w *watch) stop() { w.cancel() }

// inScope are the labels under the benchmark's prefixes.
func inScope(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if p, _, ok := strings.Cut(k, "/"); ok && (p == rackPrefix || p == securityPrefix) {
			out[k] = v
		}
	}
	return out
}

func (w *watch) observe(m *metav1.PartialObjectMetadata, op string) {
	now := time.Now()
	key := m.Namespace + "/" + m.Name
	rv, _ := strconv.ParseUint(m.ResourceVersion, 10, 64)
	w.mu.Lock()
	defer w.mu.Unlock()
	if op != "update" || w.objs[key].rv != rv {
		w.writes[op]++
	}
	if op == "delete" {
		delete(w.objs, key)
		return
	}
	st := objState{rv: rv, labels: inScope(m.Labels)}
	w.objs[key] = st
	w.tell(key, st, now)
}

// tell wakes the waiters of key that st satisfies; w.mu is held.
func (w *watch) tell(key string, st objState, at time.Time) {
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

// await returns when the watch saw key's state satisfy ok: the time of
// that event (now, if the state already does).
func (w *watch) await(ctx context.Context, key string, ok func(objState) bool, timeout time.Duration) (time.Time, error) {
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
		w.resource, key, timeout, w.objs[key].rv, w.objs[key].labels)
}

// drop removes a waiter that gave up; w.mu is held.
func (w *watch) drop(key string, wt *waiter) {
	left := w.waiters[key][:0]
	for _, x := range w.waiters[key] {
		if x != wt {
			left = append(left, x)
		}
	}
	w.waiters[key] = left
}

// resetWrites zeroes the write counts.
func (w *watch) resetWrites() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.writes)
}

// writesSeen are the writes since resetWrites, by operation.
func (w *watch) writesSeen() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.writes)
}

// total sums writes by operation.
func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
