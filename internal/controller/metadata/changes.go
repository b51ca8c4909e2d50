package metadata

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// Cloud changes (the events Hub) turn into passes of exactly the
// CloudMetadata objects they concern: the controller keeps an index from
// each resource to the objects whose last discovery matched it, and a
// change of an indexed resource enqueues those objects. A change of a
// resource no object matched may mean it just gained a classifier tag: when
// the change carries the resource's tags (AWS) they are compared with every
// object's classifiers; when it does not (Azure), one read of the resource
// (cloud.ClassifiedReader) gets them first. Changes of a resource's run state,
// deletions of unknown resources and resources of clouds no object uses do
// nothing. The pass of an object whose matched resources changed reads
// only those (targeted.go); a newly classified resource needs a full pass
// (one discovery), which stakes the object's claim on it.

// changeEvents is what the Reconciler needs to take cloud changes: the
// hub subscription (kit.Subscriber), the index of every
// object's resources and classifiers, and the unknown resources to read.
type changeEvents struct {
	subscriber kit.Subscriber
	index      *resourceIndex
	probes     probeQueue
}

// UseEvents makes the controller take hub's changes (kit.Subscriber.UseEvents);
// its queue of unknown resources to read is as bounded as the hub's.
func (e *changeEvents) UseEvents(hub *cloudchange.Hub) {
	e.subscriber.UseEvents(hub)
	if hub != nil {
		e.probes.limit = hub.Capacity()
	}
}

// resourceIndex is the controller's change index (kit.ChangeIndex: the
// objects whose targets matched each resource, one count per target; the
// changes pending per object, flagged when its next pass must be full; and
// those no object could take while the index warmed: an object's pass had
// begun but not yet indexed with every reference resolved, a pass whose
// AzureMetadata or AWSMetadata is not in the cache yet indexing none, or
// no pass had begun, every start and leader change) and what metadata adds
// to it: per CloudMetadata, the resources each target's last discovery
// matched and the classifiers and clouds it applies. It is safe for
// concurrent use.
type resourceIndex struct {
	changes kit.ChangeIndex[types.NamespacedName]

	mu      sync.Mutex
	matched map[types.NamespacedName]map[string]map[string]cloud.Classified // object → target key → canonical ID → resource, without tags
	wants   map[types.NamespacedName]interest
}

// interest is what makes a resource an object's: a classifier, in a cloud
// the object applies, within the scopes one of its targets searches.
type interest struct {
	classifiers []cloud.Classifier
	clouds      []string
	searches    []search
}

// search is where one target of an object discovers: its cloud and scopes
// (the provider's default when empty).
type search struct {
	cloud  string
	scopes []string
}

func newResourceIndex() *resourceIndex {
	return &resourceIndex{changes: kit.ChangeIndex[types.NamespacedName]{Name: types.NamespacedName.String},
		matched: map[types.NamespacedName]map[string]map[string]cloud.Classified{}, wants: map[types.NamespacedName]interest{}}
}

// saw records the resources a target's discovery matched; after a partial
// discovery (complete false) the resources seen before are kept too.
func (x *resourceIndex) saw(cm types.NamespacedName, target string, found []cloud.Classified, complete bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ids := make(map[string]cloud.Classified, len(found))
	if !complete {
		maps.Copy(ids, x.matched[cm][target])
	}
	for _, r := range found {
		r.Tags = nil
		ids[cloud.CanonicalID(r.ID)] = r
	}
	x.setTarget(cm, target, ids)
}

// keep records the object's interest and forgets the targets it no longer
// applies.
func (x *resourceIndex) keep(cm types.NamespacedName, targets []string, want interest) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.wants[cm] = want
	for target := range x.matched[cm] {
		if !slices.Contains(targets, target) {
			x.setTarget(cm, target, nil)
		}
	}
}

// forget drops a deleted object.
func (x *resourceIndex) forget(cm types.NamespacedName) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for target := range x.matched[cm] {
		x.setTarget(cm, target, nil)
	}
	delete(x.wants, cm)
	x.changes.Forget(cm)
}

// setTarget replaces a target's resources (the caller holds x.mu).
func (x *resourceIndex) setTarget(cm types.NamespacedName, target string, ids map[string]cloud.Classified) {
	for id := range x.matched[cm][target] {
		x.changes.Remove(cm, id)
	}
	if x.matched[cm] == nil {
		x.matched[cm] = map[string]map[string]cloud.Classified{}
	}
	if len(ids) == 0 {
		delete(x.matched[cm], target)
		if len(x.matched[cm]) == 0 {
			delete(x.matched, cm)
		}
		return
	}
	x.matched[cm][target] = ids
	for id := range ids {
		x.changes.Add(cm, id)
	}
}

// owning returns the objects whose last discovery matched the change's
// resource, and remembers the change (and the tags it carried) for them;
// not for the object whose own write made it (Change.EchoOf): it knows the
// result, and a change left pending would make its next pass, whatever
// wakes it, read the resource again.
func (x *resourceIndex) owning(c cloudchange.Change) []types.NamespacedName {
	objs, _ := x.changes.Route(cloud.CanonicalID(c.Resource), c)
	return objs
}

// classified remembers c, a change after which a resource no object
// matched carries the classifiers of objects, for each of them (with the
// tags it carried), and makes their next pass full: that pass adds the
// resource to its discovery when the search has not indexed the change yet
// (fresh.go).
func (x *resourceIndex) classified(objects []types.NamespacedName, c cloudchange.Change) {
	id := cloud.CanonicalID(c.Resource)
	for _, cm := range objects {
		x.changes.Pending.AddChange(cm, id, c)
		x.changes.Pending.Flag(cm)
	}
}

// take returns and forgets the resources changed for cm, what their
// latest changes carried, and whether its next pass must be full.
func (x *resourceIndex) take(cm types.NamespacedName) ([]string, map[string]kit.Carried, bool) {
	return x.changes.Pending.TakeCarried(cm)
}

// restore puts back what take returned, for the retry of a pass that
// could not run.
func (x *resourceIndex) restore(cm types.NamespacedName, ids []string, full bool) {
	x.changes.Pending.Restore(cm, ids, full)
}

// needFull makes the next pass of each object full.
func (x *resourceIndex) needFull(cms ...types.NamespacedName) {
	for _, cm := range cms {
		x.changes.Pending.Flag(cm)
	}
}

// matchedBy returns those of ids (canonical) that a target's last
// discovery matched, as it found them (without their tags).
func (x *resourceIndex) matchedBy(cm types.NamespacedName, target string, ids []string) []cloud.Classified {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []cloud.Classified
	for _, id := range ids {
		if spelled, ok := x.matched[cm][target][id]; ok {
			out = append(out, spelled)
		}
	}
	return out
}

// classifying returns the objects that apply cloudName and have a
// classifier that t (named as nc says) carries.
func (x *resourceIndex) classifying(cloudName string, nc tags.NameCase, t tags.Set) []types.NamespacedName {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []types.NamespacedName
	for cm, w := range x.wants {
		if slices.Contains(w.clouds, cloudName) && cloud.Classifies(nc, t, w.classifiers) {
			out = append(out, cm)
		}
	}
	return out
}

// searching returns the objects with a target that searches a scope of
// cloudName that covers says holds the resource.
func (x *resourceIndex) searching(cloudName string, covers func(scopes []string) bool) []types.NamespacedName {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []types.NamespacedName
	for cm, w := range x.wants {
		if slices.ContainsFunc(w.searches, func(s search) bool { return s.cloud == cloudName && covers(s.scopes) }) {
			out = append(out, cm)
		}
	}
	return out
}

// searched reports whether some object's target searches a scope of
// cloudName that covers says holds the resource.
func (x *resourceIndex) searched(cloudName string, covers func(scopes []string) bool) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, w := range x.wants {
		for _, s := range w.searches {
			if s.cloud == cloudName && covers(s.scopes) {
				return true
			}
		}
	}
	return false
}

// Route implements cloudchange.Router: a change enqueues the objects that
// matched its resource, or, for an unknown resource, those whose
// classifiers its tags carry (read first when the change lacks them);
// never the object whose own write made it (Change.EchoOf).
func (r *Reconciler) Route(c cloudchange.Change) []string {
	if c.Kind == cloudchange.KindState {
		return nil // tags did not change
	}
	objects := r.index.owning(c) // never the echo's writer
	if len(objects) == 0 && c.Kind == cloudchange.KindWrite {
		if c.Tags == nil {
			if c.EchoOf != "" {
				return nil // the writer knows the resource: no read for its echo
			}
			keys := r.probe(c)
			if len(keys) == 0 {
				r.index.changes.Warm.Hold(c) // no search covers it yet: maybe none has begun
			}
			return keys
		}
		if p, err := r.providers.Get(c.Cloud); err == nil {
			objects = withoutEcho(r.index.classifying(c.Cloud, p.Rules().NameCase(), c.Tags), c)
			r.index.classified(objects, c) // a full pass stakes the claim on the new resource
		}
		if len(objects) == 0 {
			r.index.changes.Warm.Hold(c)
		}
	}
	keys := make([]string, len(objects))
	for i, o := range objects {
		keys[i] = o.String()
		r.subscriber.Enqueue(reconcile.Request{NamespacedName: o})
	}
	return keys
}

// withoutEcho leaves out of objects the one whose own write made c.
func withoutEcho(objects []types.NamespacedName, c cloudchange.Change) []types.NamespacedName {
	return slices.DeleteFunc(objects, func(o types.NamespacedName) bool { return o.String() == c.EchoOf })
}

// Overflow implements cloudchange.Router: changes were dropped (or the
// sources' health changed), so every object runs one pass.
func (r *Reconciler) Overflow() {
	r.states.Each(func(key types.NamespacedName, _ *state) {
		r.index.needFull(key)
		r.subscriber.Enqueue(reconcile.Request{NamespacedName: key})
	})
}

// A change of a resource no object matched, that does not carry the
// resource's tags (Azure), is a probe: the resource is read once, and the
// change is published again, with the tags, to this controller alone
// (routed as above). Another controller that reads the resource
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
