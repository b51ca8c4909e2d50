package azure

// What the provider does for cloud change events: it gives the writes of a
// controller correlation IDs the events hub recognises as their echoes, and
// it lets the readers of one change share one read.

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/google/uuid"
	"k8s.io/utils/lru"

	"github.com/tagsync/tagsync/internal/cloud"
)

// sharedReadsKept is how many recent single-resource reads the provider
// keeps for other readers of the same change (cloud.WithReadAfter).
const sharedReadsKept = 1000

// sharedRead is one single-resource GET: when it was sent, and its result
// once done is closed.
type sharedRead struct {
	sent time.Time
	done chan struct{}
	e    *entry
	err  error
}

// readShared is read for the readers of a change: with cloud.WithReadAfter
// in ctx it takes a read of the same resource sent at or after that time,
// waiting while it is under way, and reads only when there is none (or it
// failed). Every read it makes is kept for the next reader; two readers
// that come at once make one read. A read it made itself (sent) may go
// into the provider's cache; one it took may be older than what the cache
// holds since.
func (p *Provider) readShared(ctx context.Context, ref resourceRef) (e *entry, sent bool, err error) {
	key := cloud.CanonicalID(ref.id)
	r, mine := p.claimRead(ctx, key, true)
	if !mine {
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-r.done:
		}
		if r.err == nil {
			return r.e, false, nil
		}
		r, _ = p.claimRead(ctx, key, false)
	}
	r.e, r.err = p.read(ctx, ref)
	close(r.done)
	return r.e, true, r.err
}

// dropSharedRead forgets the kept read of a resource tagsync writes: a
// reader must not take a read from before the write.
func (p *Provider) dropSharedRead(ref resourceRef) {
	p.sharedMu.Lock()
	defer p.sharedMu.Unlock()
	p.shared.Remove(cloud.CanonicalID(ref.id))
}

// claimRead returns the read of key sent at or after the time
// cloud.WithReadAfter put in ctx, done or under way (when share is set and
// there is one); else a new read the caller must make (mine), kept for the
// readers that come after.
func (p *Provider) claimRead(ctx context.Context, key string, share bool) (r *sharedRead, mine bool) {
	p.sharedMu.Lock()
	defer p.sharedMu.Unlock()
	if after, ok := cloud.ReadAfter(ctx); ok && share {
		v, found := p.shared.Get(key)
		if r, _ := v.(*sharedRead); found && !r.sent.Before(after) {
			return r, false
		}
	}
	r = &sharedRead{sent: p.now(), done: make(chan struct{})}
	p.shared.Add(key, r)
	return r, true
}

// newSharedReads is the provider's store of recent reads.
func newSharedReads() *lru.Cache { return lru.New(sharedReadsKept) }

// correlationHeader carries the ID ARM gives an operation: a client may set
// it, ARM returns it on the answer, and Event Grid's resource events carry
// it as data.correlationId.
const correlationHeader = "x-ms-correlation-request-id"

// ownWritesPolicy gives each write a controller makes (its context names
// it: cloud.WithWriter) a correlation ID of its own and records it before
// the write leaves (its event may arrive before its answer), so that the
// write's change event is known as the writer's echo (cloud.OwnWrites). A
// write that fails has no success event to match. Reads (a GET, or a POST
// such as a Resource Graph query) and writes made outside an object's pass
// pass through untouched.
type ownWritesPolicy struct{ writes *cloud.OwnWrites }

// Do implements policy.Policy.
func (p ownWritesPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	writer := cloud.WriterOf(raw.Context())
	if writer.Controller == "" || !isWrite(raw.Method) {
		return req.Next()
	}
	sent := raw.Header.Get(correlationHeader)
	if sent == "" {
		sent = uuid.NewString()
		raw.Header.Set(correlationHeader, sent)
	}
	p.writes.Record(sent, writer)
	resp, err := req.Next()
	if err == nil {
		op := sent
		if got := resp.Header.Get(correlationHeader); got != "" && got != sent {
			p.writes.Record(got, writer) // ARM chose another ID
			op = got
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			// Its echo is awaited: one that never comes says events stopped.
			p.writes.Written(op, providerName, writtenResource(raw.URL.Path), time.Now())
		}
	}
	return resp, err
}

// isWrite reports whether an ARM request of method writes: a read is a
// GET, and a POST (a Resource Graph query, an action) writes no tags.
func isWrite(method string) bool {
	return method == http.MethodPut || method == http.MethodPatch || method == http.MethodDelete
}

// tagsPath is the Tags API's path below the resource whose tags it writes.
const tagsPath = "/providers/microsoft.resources/tags/default"

// writtenResource is the resource an ARM write's path changes: the path,
// less the Tags API's suffix.
func writtenResource(path string) string {
	if i := strings.LastIndex(strings.ToLower(path), tagsPath); i > 0 {
		return path[:i]
	}
	return path
}
