package kit

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// PatchStatus sends obj's status as a merge patch from before (what the
// server holds), unless the two statuses are equal: an unchanged object
// costs no write.
func PatchStatus(ctx context.Context, c client.Client, obj, before client.Object) error {
	if equality.Semantic.DeepEqual(Field(obj, "Status"), Field(before, "Status")) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patch status of %s %s: %w", kindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
	return nil
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
