package cloud

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/lru"
)

// A cloud change event names the operation that made the change (Azure:
// the ARM correlation ID, which tagsync sets on its own writes). When that
// operation is one of tagsync's own writes, the object whose pass made it
// already knows its result, and reading the resource again on its echo is
// wasted quota. OwnWrites remembers which controller's object made each
// recent write; the events hub routes the echo to every other object (of
// that controller and of the others: their view of the resource did
// change) and not to the writer.
//
// Example: CloudMetadata a/cm reverts an outside edit of a VM's tags with
// a PATCH whose correlation ID is c1, recorded as ("c1", {metadata a/cm}).
// Event Grid delivers ResourceWriteSuccess with correlationId c1: the node
// sync's NodeTagSyncs on the VM get it, and so does another CloudMetadata
// that matched the VM; a/cm does not. An outside edit a moment later comes
// with its own correlation ID and reaches all of them.

// Writer is the object whose pass makes cloud writes: its controller and
// its key (as the controller's router names it).
type Writer struct {
	Controller, Object string
}

// writerKey is the context key of the Writer that makes the calls.
type writerKey struct{}

// WithWriter returns ctx carrying the writer of the cloud writes made
// with it.
func WithWriter(ctx context.Context, w Writer) context.Context {
	return context.WithValue(ctx, writerKey{}, w)
}

// WriterOf is the writer WithWriter put in ctx, the zero Writer when none.
func WriterOf(ctx context.Context) Writer {
	w, _ := ctx.Value(writerKey{}).(Writer)
	return w
}

// DefaultOwnWrites is how many recent writes an OwnWrites remembers: the
// echo of a write comes within seconds, and far fewer writes than that are
// made in seconds.
const DefaultOwnWrites = 10000

// OwnWrites remembers, by operation ID, which object made each of the last
// n cloud writes. It is safe for concurrent use; a nil *OwnWrites records
// nothing and knows no writer.
type OwnWrites struct {
	writers *lru.Cache

	awaitMu  sync.Mutex
	awaiting map[string]AwaitedWrite // by operation
	// early are the writes whose echo arrived before their answer.
	early *lru.Cache
}

// NewOwnWrites remembers the last n writes (DefaultOwnWrites when n ≤ 0).
func NewOwnWrites(n int) *OwnWrites {
	if n <= 0 {
		n = DefaultOwnWrites
	}
	return &OwnWrites{writers: lru.New(n), early: lru.New(n)}
}

// Record remembers that w made the write operation; an empty operation or
// controller is not recorded.
func (o *OwnWrites) Record(operation string, w Writer) {
	if o == nil || operation == "" || w.Controller == "" {
		return
	}
	o.writers.Add(operation, w)
}

// Writer is the object that made the write operation, the zero Writer
// when it is not one of the recent writes recorded.
func (o *OwnWrites) Writer(operation string) Writer {
	if o == nil || operation == "" {
		return Writer{}
	}
	v, _ := o.writers.Get(operation)
	w, _ := v.(Writer)
	return w
}

// A write's echo also proves that the event pipeline delivers: when
// tagsync's own writes stop coming back, events have stopped arriving (a
// deleted event subscription, a broken Ingress) though every source still
// listens. So an OwnWrites also keeps the writes whose echo is awaited:
// the provider says when one succeeded (Written), the events hub when its
// echo arrived (Echoed), and the hub looks at the ones still awaited
// (Overdue).

// maxAwaited bounds the writes an OwnWrites awaits echoes of; past it a
// write is not awaited (its echo is simply not looked for).
const maxAwaited = DefaultOwnWrites

// AwaitedWrite is a successful write whose echo has not arrived.
type AwaitedWrite struct {
	// Operation is the write's operation ID (its echo carries it).
	Operation string
	// Cloud is the provider's name, Resource the resource written.
	Cloud, Resource string
	// At is when the write's answer came.
	At time.Time
}

// Written records that the write operation of resource succeeded at at:
// its echo is awaited. Nothing is recorded for an empty operation, or
// unless the operation was Recorded (a write of an object's pass).
func (o *OwnWrites) Written(operation, cloudName, resource string, at time.Time) {
	if o == nil || operation == "" || o.Writer(operation).Controller == "" {
		return
	}
	o.awaitMu.Lock()
	defer o.awaitMu.Unlock()
	if _, ok := o.early.Get(operation); ok {
		o.early.Remove(operation) // its echo came before its answer
		return
	}
	if o.awaiting == nil {
		o.awaiting = map[string]AwaitedWrite{}
	}
	if len(o.awaiting) < maxAwaited {
		o.awaiting[operation] = AwaitedWrite{Operation: operation, Cloud: cloudName, Resource: resource, At: at}
	}
}

// Echoed records that the echo of operation arrived, which may be before
// the write's answer (then Written does not await it).
func (o *OwnWrites) Echoed(operation string) {
	if o == nil || operation == "" {
		return
	}
	o.awaitMu.Lock()
	defer o.awaitMu.Unlock()
	if _, ok := o.awaiting[operation]; ok {
		delete(o.awaiting, operation)
		return
	}
	if o.Writer(operation).Controller != "" {
		o.early.Add(operation, struct{}{})
	}
}

// Overdue returns the awaited writes made before before, oldest first,
// and forgets them: the caller judges them once.
func (o *OwnWrites) Overdue(before time.Time) []AwaitedWrite {
	if o == nil {
		return nil
	}
	o.awaitMu.Lock()
	defer o.awaitMu.Unlock()
	var out []AwaitedWrite
	for op, w := range o.awaiting {
		if w.At.Before(before) {
			out = append(out, w)
			delete(o.awaiting, op)
		}
	}
	slices.SortFunc(out, func(a, b AwaitedWrite) int { return a.At.Compare(b.At) })
	return out
}

// Awaited is how many writes' echoes are awaited.
func (o *OwnWrites) Awaited() int {
	if o == nil {
		return 0
	}
	o.awaitMu.Lock()
	defer o.awaitMu.Unlock()
	return len(o.awaiting)
}
