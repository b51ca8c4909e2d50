package kit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
