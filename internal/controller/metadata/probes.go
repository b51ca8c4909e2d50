package metadata

import (
	"context"
	"errors"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
)

// A change of a resource no object matched, that does not carry the
// resource's tags (Azure), is a probe: the resource is read once, and the
// change is published again, with the tags, to this controller alone
// (changes.go routes it then). Another controller that reads the resource
// for the same change (the node sync, for a VM or scale set) shares that
// read, whichever of the two asks first (cloud.WithReadAfter).

// probeKey is what the hub waits on while an unknown resource is read.
func probeKey(resource string) string { return "probe " + cloud.CanonicalID(resource) }

// probe queues an unknown resource's change for a read, when the cloud
// can read one resource and some object searches a scope holding it; it
// returns the key the hub waits on (none when there is nothing to read).
// When the queue is full (a burst of changes of unknown resources), the
// change is not read: the objects searching a scope that holds the
// resource run a full pass instead, whose discovery finds the resource if
// it is classified now, as the hub does when its own queue overflows.
func (r *Reconciler) probe(c cloudchange.Change) []string {
	p, err := r.providers.Get(c.Cloud)
	reader, ok := p.(cloud.ClassifiedReader)
	covers := func(scopes []string) bool { return reader.Covers(c.Resource, scopes) }
	if err != nil || !ok || !r.index.searched(c.Cloud, covers) {
		return nil
	}
	if r.probes.Push(c) {
		return []string{probeKey(c.Resource)}
	}
	probeOverflowsTotal.WithLabelValues().Inc()
	objects := withoutEcho(r.index.searching(c.Cloud, covers), c)
	keys := make([]string, len(objects))
	for i, o := range objects {
		r.index.needFull(o)
		keys[i] = o.String()
		r.subscriber.Enqueue(reconcile.Request{NamespacedName: o})
	}
	return keys
}

// runProbes reads the queued unknown resources until ctx ends.
func (r *Reconciler) runProbes(ctx context.Context) error {
	for {
		c, ok := r.probes.Pop(ctx)
		if !ok {
			return nil
		}
		r.readProbe(ctx, c)
	}
}

// readProbe reads an unknown resource once and publishes its change again
// with the tags, so the objects whose classifiers it now carries run a
// pass; the probe is done when they are.
func (r *Reconciler) readProbe(ctx context.Context, c cloudchange.Change) {
	finished := r.subscriber.PassStarted(probeKey(c.Resource))
	p, _ := r.providers.Get(c.Cloud)
	res, err := p.(cloud.ClassifiedReader).ReadClassified(cloud.WithReadAfter(ctx, c.Received), c.Resource)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		finished(nil)
	case err != nil:
		finished(err)
	default:
		c.Tags, c.ID = res.Tags, "" // a new change: no redelivery of the one read
		r.subscriber.Republish([]cloudchange.Change{c}, finished)
	}
}

// probeQueue holds the changes of unknown resources to read, at most
// limit (no bound when 0): Push never blocks, Pop waits for one. Its zero
// value is ready.
type probeQueue struct {
	limit int

	mu      sync.Mutex
	pending []cloudchange.Change
	signal  chan struct{}
}

// ready returns the channel that signals a push (the caller holds q.mu).
func (q *probeQueue) ready() chan struct{} {
	if q.signal == nil {
		q.signal = make(chan struct{}, 1)
	}
	return q.signal
}

// Push queues a change; it returns false, having queued nothing, when
// the queue holds limit changes already.
func (q *probeQueue) Push(c cloudchange.Change) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.limit > 0 && len(q.pending) >= q.limit {
		return false
	}
	q.pending = append(q.pending, c)
	probeQueueLength.WithLabelValues().Set(float64(len(q.pending)))
	select {
	case q.ready() <- struct{}{}:
	default:
	}
	return true
}

// Pop returns the oldest change, waiting for one until ctx ends.
func (q *probeQueue) Pop(ctx context.Context) (cloudchange.Change, bool) {
	for {
		q.mu.Lock()
		if len(q.pending) > 0 {
			c := q.pending[0]
			q.pending = q.pending[1:]
			probeQueueLength.WithLabelValues().Set(float64(len(q.pending)))
			q.mu.Unlock()
			return c, true
		}
		signal := q.ready()
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return cloudchange.Change{}, false
		case <-signal:
		}
	}
}
