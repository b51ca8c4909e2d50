package azure

import (
	"context"
	"errors"

	"github.com/tagsync/tagsync/internal/cloud"
)

// errNotYet marks the classified-resource operations this provider does not
// implement yet.
var errNotYet = errors.New("azure: classified-resource discovery and batch writes are not implemented yet")

// Discover is not implemented yet.
func (p *Provider) Discover(context.Context, []cloud.Classifier, cloud.DiscoverOptions) (cloud.Discovery, error) {
	return cloud.Discovery{}, errNotYet
}

// WriteTags is not implemented yet.
func (p *Provider) WriteTags(_ context.Context, writes []cloud.TagWrite) []cloud.WriteResult {
	var out []cloud.WriteResult
	for _, w := range writes {
		for _, id := range w.IDs {
			out = append(out, cloud.WriteResult{ID: id, Err: errNotYet})
		}
	}
	return out
}
