package cloud

import (
	"context"
	"time"
)

// A change event wakes every controller that cares about the changed
// resource, and each may read it: the node sync reads a changed VM for its
// Nodes, and the metadata controller reads the same VM to see whether it
// gained a classifier. A read sent after the change was received shows the
// change, so a provider may answer a second reader with the first reader's
// read (or wait for it while it is under way) instead of reading again.
// The second reader says which reads are recent enough with WithReadAfter.

// readAfterKey is the context key of WithReadAfter's time.
type readAfterKey struct{}

// WithReadAfter returns ctx asking that a single-resource read made with
// it may be answered by any read of the same resource sent at or after t
// (when the change it serves was received), instead of a read of its own.
func WithReadAfter(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, readAfterKey{}, t)
}

// ReadAfter is the time WithReadAfter put in ctx, and whether there is one.
func ReadAfter(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(readAfterKey{}).(time.Time)
	return t, ok && !t.IsZero()
}
