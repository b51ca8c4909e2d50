package testenv

import (
	"context"
	"testing"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Update changes obj with fn on the API server: it reads obj afresh, applies
// fn and writes it, again when another writer got there first (a
// conflict). It fails t when the write cannot be made.
func Update(ctx context.Context, t testing.TB, c client.Client, obj client.Object, fn func()) {
	t.Helper()
	if err := readModifyWrite(ctx, c, obj, fn, func() error { return c.Update(ctx, obj) }); err != nil {
		t.Fatalf("update %s: %v", obj.GetName(), err)
	}
}

// UpdateStatus is Update for obj's status subresource.
func UpdateStatus(ctx context.Context, t testing.TB, c client.Client, obj client.Object, fn func()) {
	t.Helper()
	if err := readModifyWrite(ctx, c, obj, fn, func() error { return c.Status().Update(ctx, obj) }); err != nil {
		t.Fatalf("update status of %s: %v", obj.GetName(), err)
	}
}

func readModifyWrite(ctx context.Context, c client.Client, obj client.Object, fn func(), write func() error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		fn()
		return write()
	})
}
