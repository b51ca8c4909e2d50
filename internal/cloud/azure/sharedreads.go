package azure

import (
	"context"
	"time"

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
// failed). Every read it makes is kept for the next reader.
func (p *Provider) readShared(ctx context.Context, ref resourceRef) (*entry, error) {
	key := cloud.CanonicalID(ref.id)
	if after, ok := cloud.ReadAfter(ctx); ok {
		if v, found := p.shared.Get(key); found {
			if r := v.(*sharedRead); !r.sent.Before(after) {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-r.done:
				}
				if r.err == nil {
					return r.e, nil
				}
			}
		}
	}
	r := &sharedRead{sent: p.now(), done: make(chan struct{})}
	p.shared.Add(key, r)
	r.e, r.err = p.read(ctx, ref)
	close(r.done)
	return r.e, r.err
}

// newSharedReads is the provider's store of recent reads.
func newSharedReads() *lru.Cache { return lru.New(sharedReadsKept) }
