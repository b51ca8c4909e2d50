package cloud

import (
	"context"

	"k8s.io/utils/lru"
)

// A cloud change event names the operation that made the change (Azure:
// the ARM correlation ID, which tagsync sets on its own writes). When that
// operation is one of tagsync's own writes, the controller that made it
// already knows its result, and reading the resource again on its echo is
// wasted quota. OwnWrites remembers which controller made each recent
// write; the events hub routes the echo to every other controller (their
// view of the resource did change) and not to the writer.
//
// Example: the metadata controller reverts an outside edit of a VM's tags
// with a PATCH whose correlation ID is c1, recorded as ("c1", "metadata").
// Event Grid delivers ResourceWriteSuccess with correlationId c1: the node
// sync gets it (its nodes' VM changed), the metadata controller does not.
// An outside edit a moment later comes with its own correlation ID and
// reaches both.

// writerKey is the context key of the controller that makes the calls.
type writerKey struct{}

// WithWriter returns ctx carrying the name of the controller whose cloud
// writes are made with it.
func WithWriter(ctx context.Context, controller string) context.Context {
	return context.WithValue(ctx, writerKey{}, controller)
}

// WriterOf is the controller WithWriter put in ctx, "" when none.
func WriterOf(ctx context.Context) string {
	name, _ := ctx.Value(writerKey{}).(string)
	return name
}

// DefaultOwnWrites is how many recent writes an OwnWrites remembers: the
// echo of a write comes within seconds, and far fewer writes than that are
// made in seconds.
const DefaultOwnWrites = 10000

// OwnWrites remembers, by operation ID, which controller made each of the
// last n cloud writes. It is safe for concurrent use; a nil *OwnWrites
// records nothing and knows no writer.
type OwnWrites struct {
	writers *lru.Cache
}

// NewOwnWrites remembers the last n writes (DefaultOwnWrites when n ≤ 0).
func NewOwnWrites(n int) *OwnWrites {
	if n <= 0 {
		n = DefaultOwnWrites
	}
	return &OwnWrites{writers: lru.New(n)}
}

// Record remembers that controller made the write operation; an empty
// operation or controller is not recorded.
func (w *OwnWrites) Record(operation, controller string) {
	if w == nil || operation == "" || controller == "" {
		return
	}
	w.writers.Add(operation, controller)
}

// Writer is the controller that made the write operation, "" when it is
// not one of the recent writes recorded.
func (w *OwnWrites) Writer(operation string) string {
	if w == nil || operation == "" {
		return ""
	}
	name, _ := w.writers.Get(operation)
	s, _ := name.(string)
	return s
}
