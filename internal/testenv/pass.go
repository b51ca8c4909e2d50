package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// passRequests numbers the requests of this process, so that two requests
// made within one clock tick still differ.
var passRequests atomic.Uint64

// RequestPass asks a controller for one pass over obj and waits for exactly
// that pass. It is for controllers that record in status which sync request
// they served, as NodeTagSync's does: the annotation
// tagsync.io/sync-requested asks, status.lastSyncRequest answers.
//
// It sets obj's annotation to a fresh value no earlier request had (a merge
// patch of that annotation alone, so it never conflicts with the
// controller's writes), then re-reads obj until served(obj) returns that
// value: the state read then is the pass's own, not an earlier pass's. obj
// needs its name (and namespace) set and ends up holding that state. It
// returns the request's value, and fails t, saying what served reported last,
// when the pass has not been served within timeout.
func RequestPass(t testing.TB, c client.Client, obj client.Object, annotation string, served func(client.Object) string, timeout time.Duration) string {
	t.Helper()
	// Eventually enforces timeout; the margin lets the last read finish and
	// report what served said rather than a cancelled request.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	key := client.ObjectKeyFromObject(obj)
	what := describe(c, obj, key)

	value := strconv.FormatInt(time.Now().UnixNano(), 10) + "-" + strconv.FormatUint(passRequests.Add(1), 10)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotation: value}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("requesting a pass over %s (annotation %s=%s): %v", what, annotation, value, err)
	}
	Eventually(t, timeout, fmt.Sprintf("the pass over %s serving request %s=%s", what, annotation, value), func() string {
		if err := c.Get(ctx, key, obj); err != nil {
			return err.Error()
		}
		if got := served(obj); got != value {
			return fmt.Sprintf("it reports serving request %q", got)
		}
		return ""
	})
	return value
}

// describe names obj for messages: its kind, when the client's scheme knows
// it, and its key.
func describe(c client.Client, obj client.Object, key client.ObjectKey) string {
	if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil {
		return gvk.Kind + " " + key.String()
	}
	return fmt.Sprintf("%T %s", obj, key)
}

// Pass asks a tagsync controller for one pass over obj and waits for
// exactly that pass: RequestPass with the sync-request annotation every
// tagsync kind takes and its status.lastSyncRequest. obj, returned, then
// holds the state that pass wrote.
func Pass[O client.Object](t testing.TB, c client.Client, obj O, timeout time.Duration) O {
	t.Helper()
	RequestPass(t, c, obj, v1alpha1.SyncRequestAnnotation, LastSyncRequest, timeout)
	return obj
}
