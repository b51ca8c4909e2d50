package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// tracker watches every Node's metadata (a metadata-only informer: labels
// and resourceVersion, no status) to see when labels arrive and to count
// Node writes: every change of a Node's resourceVersion is one write.
type tracker struct {
	cancel context.CancelFunc

	mu          sync.Mutex
	labels      map[string]map[string]string // node → labels under labelPrefix
	rv          map[string]string
	expect      map[string]map[string]string // node → labels it must carry
	met         map[string]bool
	metCount    int
	metAt       time.Time
	writes      int
	lastWriteAt time.Time
	notify      chan struct{}
}

// startTracker starts the harness's watch of the Nodes.
func (b *bench) startTracker(ctx context.Context) (*tracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &tracker{cancel: cancel, labels: map[string]map[string]string{}, rv: map[string]string{}, notify: make(chan struct{})}
	err := benchkit.WatchMetadata(ctx, b.meta, benchkit.Nodes, "", benchkit.MetaEvents{
		Add:    func(m *metav1.PartialObjectMetadata) { t.update(m, false) },
		Update: func(m *metav1.PartialObjectMetadata) { t.update(m, true) },
		Delete: t.remove,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return t, nil
}

func (t *tracker) stop() { t.cancel() }

func (t *tracker) update(m *metav1.PartialObjectMetadata, isUpdate bool) {
	managed := map[string]string{}
	for k, v := range m.Labels {
		if strings.HasPrefix(k, labelPrefix) {
			managed[k] = v
		}
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if isUpdate && t.rv[m.Name] != m.ResourceVersion {
		t.writes++
		t.lastWriteAt = now
	}
	t.rv[m.Name] = m.ResourceVersion
	t.labels[m.Name] = managed
	t.check(m.Name, now)
	t.signal()
}

func (t *tracker) remove(m *metav1.PartialObjectMetadata) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.labels, m.Name)
	delete(t.rv, m.Name)
	if t.met[m.Name] {
		t.met[m.Name] = false
		t.metCount--
	}
	t.signal()
}

// check updates whether node carries its expected labels.
func (t *tracker) check(node string, now time.Time) {
	want, ok := t.expect[node]
	if !ok {
		return
	}
	have := t.labels[node]
	ok = have != nil
	for k, v := range want {
		if got, present := have[k]; !present || got != v {
			ok = false
			break
		}
	}
	if ok != t.met[node] {
		t.met[node] = ok
		if ok {
			t.metCount++
		} else {
			t.metCount--
		}
	}
	if t.metCount == len(t.expect) && t.metAt.IsZero() {
		t.metAt = now
	}
}

func (t *tracker) signal() {
	close(t.notify)
	t.notify = make(chan struct{})
}

// expectLabels sets the labels each node must carry; waitExpected then
// waits until all do.
func (t *tracker) expectLabels(expect map[string]map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expect, t.met, t.metCount, t.metAt = expect, map[string]bool{}, 0, time.Time{}
	now := time.Now()
	for n := range expect {
		t.check(n, now)
	}
}

// waitExpected waits until every expected node carries its labels and
// returns when the last one was seen doing so. It logs progress.
func (t *tracker) waitExpected(ctx context.Context, what string, timeout time.Duration) (time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	for {
		t.mu.Lock()
		at, met, total, ch := t.metAt, t.metCount, len(t.expect), t.notify
		t.mu.Unlock()
		if !at.IsZero() {
			return at, nil
		}
		select {
		case <-ch:
		case <-progress.C:
			benchkit.Logf("%s: %d of %d nodes carry their labels", what, met, total)
		case <-deadline.C:
			return time.Time{}, fmt.Errorf("%s: only %d of %d nodes carry their labels after %s", what, met, total, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// count is the number of Nodes.
func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.rv)
}

// resetWrites zeroes the Node write counter.
func (t *tracker) resetWrites() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writes = 0
}

// writesSeen is the number of Node writes since resetWrites.
func (t *tracker) writesSeen() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.writes
}

// lastWrite is when a Node was last written.
func (t *tracker) lastWrite() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastWriteAt
}
