package kit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// What a controller keeps and does per object across its passes: the
// object's state between passes (States), one pass at a time and the cloud
// changes each pass serves (Subscriber), and what a pass writes back to the
// object: its status, only when it changed (PatchStatus, StampSyncTime,
// ConditionStatus), and the record of a mass deletion it holds
// (HeldDeletions).

// States is what a controller remembers about each object between passes,
// keyed by K (a name or namespaced name). A state lives as long as its
// object: an object recreated under the same name (a new UID) starts a new
// state, and Forget drops it when the object is deleted. Each state comes
// with a Notifier, so problems are reported once per object.
//
// It is safe for concurrent use; the states it returns are the caller's to
// guard.
type States[K comparable, S any] struct {
	mu       sync.Mutex
	entries  map[K]*entry[S]
	recorder notify.Emitter
	action   string
	build    func(*notify.Notifier) S
}

type entry[S any] struct {
	uid   types.UID
	notes *notify.Notifier
	state S
}

// NewStates returns an empty set of states whose notifiers emit through
// recorder with action; build makes a new object's state around its
// notifier. When recorder reports the events the API server refuses (as
// notify.Recorder does), every notifier is told, so the refused problem is
// reported again.
func NewStates[K comparable, S any](recorder notify.Emitter, action string, build func(*notify.Notifier) S) *States[K, S] {
	s := &States[K, S]{entries: map[K]*entry[S]{}, recorder: recorder, action: action, build: build}
	if rec, ok := recorder.(interface {
		OnRefused(func(uid, reason, note string))
	}); ok {
		rec.OnRefused(s.refused)
	}
	return s
}

// For returns the state of the object key names, new when the name is new
// or now names another object (uid).
func (s *States[K, S]) For(key K, uid types.UID) S {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || e.uid != uid {
		notes := notify.NewNotifier(s.recorder, s.action)
		e = &entry[S]{uid: uid, notes: notes, state: s.build(notes)}
		s.entries[key] = e
	}
	return e.state
}

// Get returns the state of key, if there is one.
func (s *States[K, S]) Get(key K) (S, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		var zero S
		return zero, false
	}
	return e.state, true
}

// Forget drops the state of a deleted object.
func (s *States[K, S]) Forget(key K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
}

// Each calls f for every state, on a snapshot taken under the lock (f may
// call the other methods).
func (s *States[K, S]) Each(f func(K, S)) {
	s.mu.Lock()
	keys := make([]K, 0, len(s.entries))
	states := make([]S, 0, len(s.entries))
	for k, e := range s.entries {
		keys, states = append(keys, k), append(states, e.state)
	}
	s.mu.Unlock()
	for i := range keys {
		f(keys[i], states[i])
	}
}

// Len is how many objects have a state.
func (s *States[K, S]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// refused tells every notifier of an event the API server refused.
func (s *States[K, S]) refused(uid, reason, note string) {
	s.mu.Lock()
	notes := make([]*notify.Notifier, 0, len(s.entries))
	for _, e := range s.entries {
		notes = append(notes, e.notes)
	}
	s.mu.Unlock()
	for _, n := range notes {
		n.Refused(uid, reason, note)
	}
}

// Subscriber is what a controller holds (as a named field) to take changes
// from a cloudchange.Hub: its subscription, the enqueueing of the objects a
// change concerns, and the polling interval the sources' health allows.
// Its zero value is events off: the controller polls only.
type Subscriber struct {
	hub  *cloudchange.Hub
	sub  *cloudchange.Subscription
	wake Wake
}

// UseEvents makes the controller take hub's changes, and poll at the hub's
// interval while its sources are up. Call it before the controller's
// SetupWithManager.
func (s *Subscriber) UseEvents(hub *cloudchange.Hub) { s.hub = hub }

// Subscribe registers the router of the controller name with the hub
// (nothing when events are off); SetupWithManager calls it.
func (s *Subscriber) Subscribe(name string, r cloudchange.Router) {
	if s.hub != nil {
		s.sub = s.hub.Subscribe(name, r)
	}
}

// EventsOn reports whether the controller takes changes.
func (s *Subscriber) EventsOn() bool { return s.hub != nil }

// PassStarted tells the hub a pass of the object key starts and returns
// the function to call with its error when it ends (cloudchange.Subscription.Started).
func (s *Subscriber) PassStarted(key string) func(error) { return s.sub.Started(key) }

// Serve runs pass, a pass of the object key, and tells the hub when it
// started and how it ended: the changes routed to key before it started
// are done with it, failed when the pass returned an error or kept them
// for its retry (KeepForRetry). The pass's context names the object as the
// writer of its cloud writes (cloud.WithWriter), so their echoes skip it.
func (s *Subscriber) Serve(ctx context.Context, key string, pass func(context.Context) (reconcile.Result, error)) (reconcile.Result, error) {
	finished := s.sub.Started(key)
	if s.sub != nil {
		ctx = cloud.WithWriter(ctx, cloud.Writer{Controller: s.sub.Name(), Object: key})
	}
	kept := &keptForRetry{}
	res, err := pass(context.WithValue(ctx, keptForRetryKey{}, kept))
	switch {
	case err != nil:
		finished(err)
	case kept.why != "":
		finished(fmt.Errorf("%w: %s", cloudchange.ErrKeptForRetry, kept.why))
	default:
		finished(nil)
	}
	return res, err
}

// keptForRetry is where KeepForRetry notes, for Serve, why a pass kept its
// changes.
type keptForRetry struct{ why string }

type keptForRetryKey struct{}

// KeepForRetry tells Serve, from within a pass (its context), that the
// pass ends without an error but did not finish the cloud changes routed
// to it: it was throttled, or some of them failed, and it keeps them for a
// retry of its own (a requeue). The hub then takes the pass as failed for
// those changes (cloudchange.ErrKeptForRetry): their deliveries are not
// acknowledged, so an SQS message stays on its queue and is received
// again, as after a pass that returned an error. Outside Serve it does
// nothing.
func KeepForRetry(ctx context.Context, why string) {
	if kept, ok := ctx.Value(keptForRetryKey{}).(*keptForRetry); ok && why != "" {
		kept.why = why
	}
}

// Enqueue asks for passes of the objects (from cloudchange.Router.Route: it never
// blocks).
func (s *Subscriber) Enqueue(reqs ...reconcile.Request) { s.wake.Add(reqs...) }

// EnqueueSource is the raw source that feeds Enqueue's requests to the
// controller's workqueue.
func (s *Subscriber) EnqueueSource() source.Source { return s.wake.Source() }

// Republish publishes changes to the hub again (a change completed by a
// read), for this controller only: the others had the change itself.
func (s *Subscriber) Republish(changes []cloudchange.Change, done func(error)) {
	s.sub.Republish(changes, done)
}

// Saw tells the hub what a full pass read of a resource (fresh and
// complete): a change between full passes that no event announced makes
// the cloud's events silent (cloudchange.Subscription.Saw). Nothing when
// events are off.
func (s *Subscriber) Saw(cloudName, resource string, t tags.Set, at time.Time) {
	s.sub.Saw(cloudName, resource, t, at)
}

// Interval is the polling interval of an object configured to poll every
// configured, and the sources' health (nil: events off).
func (s *Subscriber) Interval(configured time.Duration) (time.Duration, *cloudchange.Health) {
	if s.hub == nil {
		return configured, nil
	}
	every, health := s.hub.Interval(configured)
	return every, &health
}

// maxHeldListed bounds the resources a HeldDeletions record lists.
const maxHeldListed = 50

// HeldDeletions is the status record of a mass deletion m held by a pass
// at now, and whether obj's approval annotation (ApproveDeletionsAnnotation)
// approves it. prev is the record the object's status holds (nil: none):
// when it names the same set (Digest), the set keeps the time it was first
// held, and so its token; any other set is stamped now and needs a new
// approval.
func HeldDeletions(obj metav1.Object, m tags.MassDeletion, prev *v1alpha1.HeldDeletions, now time.Time) (*v1alpha1.HeldDeletions, bool) {
	since := metav1.NewTime(now.UTC().Truncate(time.Second))
	if prev != nil && prev.Digest == m.Digest() {
		since = prev.Since
	}
	rec := &v1alpha1.HeldDeletions{Token: m.ApprovalToken(since.Time), Digest: m.Digest(), Since: since,
		Count: int32(m.Count()), Reason: m.Reason}
	for _, d := range m.Deletions[:min(len(m.Deletions), maxHeldListed)] {
		rec.Resources = append(rec.Resources, v1alpha1.HeldResource{Resource: d.Resource, Tags: d.Names, Labels: d.Labels})
	}
	return rec, obj.GetAnnotations()[v1alpha1.ApproveDeletionsAnnotation] == rec.Token
}

// HeldNote is the DeletionsHeld condition's message and the Warning
// event's note for a held set rec: what was held, why, where (the first
// few of each resource's names, shown at most), and the command that
// approves it, which annotates object ("nodetagsync default",
// "labelsyncprofile racks -n metal").
func HeldNote(what string, rec *v1alpha1.HeldDeletions, object string, shown int) string {
	var where []string
	for _, r := range rec.Resources {
		res := r.Resource
		if r.Labels {
			res = "the labels of the Nodes on " + res
		}
		where = append(where, res+": "+notify.Summary(r.Tags, shown))
	}
	return fmt.Sprintf("%d %s held, not written: %s (%s). If they are intended, approve this exact set once: "+
		"kubectl annotate %s %s=%s --overwrite", rec.Count, what, rec.Reason, notify.Summary(where, 5), object,
		v1alpha1.ApproveDeletionsAnnotation, rec.Token)
}

// StampSyncTime is the lastSyncTime to store: the pass's (next) when
// anything else in the status changed (unchanged is false), when none is
// stored, or when an interval (every) has passed since the stored one;
// else the stored one (prev), so that a steady object's status is not
// rewritten by every pass and its watchers are not woken.
func StampSyncTime(prev, next *metav1.Time, unchanged bool, every time.Duration) *metav1.Time {
	if prev == nil || next == nil || !unchanged || next.Sub(prev.Time) >= every {
		return next
	}
	return prev
}

// PatchStatus writes obj's status, which a pass computed from before (the
// object as the pass read it from the cache), unless the server already
// holds it: an unchanged object costs no write.
//
// The write is a merge patch, which carries only what differs from its
// base, so a base older than the server's object would leave alone the
// fields the pass set back to what that old base held. Two guards keep the
// base current:
//   - When before is the version this controller's own last status write
//     of the object replaced (the cache has not shown that write yet), the
//     patch is based on the object as the cache shows it once it has caught
//     up, and "unchanged" is judged against that; when the cache then
//     shows a later write by someone else, it fails as a conflict.
//   - The patch carries the base's resourceVersion, so a write by anyone
//     else since fails as a conflict (apierrors.IsConflict) and the pass
//     runs again, instead of patching over it.
func (b *Base) PatchStatus(ctx context.Context, obj, before client.Object) error {
	base, err := b.statusBase(ctx, before)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(Field(obj, "Status"), Field(base, "Status")) {
		return nil
	}
	from := base.GetResourceVersion()
	if err := b.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patch status of %s %s: %w", kindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
	if obj.GetResourceVersion() == from {
		// The server held this status already (a stale base): it wrote
		// nothing, and no later version is to be waited for.
		b.statusWrites().Remove(obj.GetUID())
		return nil
	}
	b.statusWrites().Add(obj.GetUID(), statusWrite{replaced: from, made: obj.GetResourceVersion()})
	return nil
}

// Current returns obj as a pass's events should name it: obj itself, or,
// while the cache has not shown this controller's own last status write
// of it, a copy with the resourceVersion that write made. client-go's
// event recorder takes two events with one reason about one version of an
// object for repeats of one event (a series that keeps the first note), so
// an event of this pass about the version the last pass's status write
// replaced would be folded into that pass's event, its note lost.
func (b *Base) Current(obj client.Object) client.Object {
	v, _ := b.statusWrites().Get(obj.GetUID())
	last, ok := v.(statusWrite)
	if !ok || last.replaced != obj.GetResourceVersion() {
		return obj
	}
	c := obj.DeepCopyObject().(client.Object)
	c.SetResourceVersion(last.made)
	return c
}

// statusWrite is the controller's last status write of an object: the
// resourceVersion it replaced and the one it made.
type statusWrite struct{ replaced, made string }

// statusBase is what a status patch computed from before applies to:
// before, unless it is the version the controller's last status write of
// the object replaced; then the object as the cache shows it once it shows
// that write (a conflict when it shows a later one).
func (b *Base) statusBase(ctx context.Context, before client.Object) (client.Object, error) {
	v, _ := b.statusWrites().Get(before.GetUID())
	last, ok := v.(statusWrite)
	if !ok || last.replaced != before.GetResourceVersion() {
		return before, nil
	}
	replaced := last.replaced
	fresh := before.DeepCopyObject().(client.Object)
	key := client.ObjectKeyFromObject(before)
	err := wait.PollUntilContextTimeout(ctx, cachePoll, cacheCatchUp, true, func(ctx context.Context) (bool, error) {
		if err := b.Client.Get(ctx, key, fresh); err != nil {
			return false, err
		}
		return fresh.GetResourceVersion() != replaced, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the cache did not show the last status write of %s %s: %w", kindOf(before), key, err)
	}
	if fresh.GetResourceVersion() != last.made {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: kindOf(before)}, key.String(),
			errors.New("written by someone else since the pass read it"))
	}
	return fresh, nil
}

const (
	// cachePoll and cacheCatchUp are how often and how long PatchStatus
	// reads the cache for an object's version after the controller's own
	// write: the watch brings it in milliseconds.
	cachePoll    = 10 * time.Millisecond
	cacheCatchUp = 10 * time.Second
	// statusWritesKept bounds how many objects' last status writes a
	// controller remembers; forgetting one only drops the first guard.
	statusWritesKept = 4096
)

// statusWrites is, per object UID, the controller's last status write.
func (b *Base) statusWrites() *lru.Cache {
	b.statusOnce.Do(func() { b.replaced = lru.New(statusWritesKept) })
	return b.replaced
}

// kindOf names a typed object's kind (its Go type's name).
func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return reflect.Indirect(reflect.ValueOf(obj)).Type().Name()
}

// ConditionStatus is True for ok, else False.
func ConditionStatus(ok bool) metav1.ConditionStatus {
	if ok {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// Field is the top-level field name (Spec, Status) of a typed object, nil
// when it has none: for comparing what one kind or another holds.
func Field(obj client.Object, name string) any {
	v := reflect.Indirect(reflect.ValueOf(obj))
	if v.Kind() != reflect.Struct {
		return nil
	}
	f := v.FieldByName(name)
	if !f.IsValid() {
		return nil
	}
	return f.Interface()
}
