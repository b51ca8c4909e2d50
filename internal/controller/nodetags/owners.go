package nodetags

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
)

// validSync is a NodeTagSync whose spec is usable, with its node selector.
type validSync struct {
	nts      *v1alpha1.NodeTagSync
	selector labels.Selector
}

// validSyncs lists the valid NodeTagSyncs not being deleted, oldest first
// (ties broken by name). An invalid NodeTagSync syncs nothing, so it claims
// no node.
func (r *Reconciler) validSyncs(ctx context.Context) ([]validSync, error) {
	var list v1alpha1.NodeTagSyncList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing NodeTagSyncs: %w", err)
	}
	return validSyncsOf(list.Items, r.providers), nil
}

// validSyncsOf returns the valid NodeTagSyncs of items not being deleted,
// oldest first (ties broken by name); it sorts items.
func validSyncsOf(items []v1alpha1.NodeTagSync, providers cloud.Providers) []validSync {
	sort.Slice(items, func(i, j int) bool { return olderThan(&items[i], &items[j]) })
	var out []validSync
	for i := range items {
		nts := &items[i]
		if nts.DeletionTimestamp != nil {
			continue
		}
		if cfg, err := configFor(nts, providers); err == nil {
			out = append(out, validSync{nts: nts, selector: cfg.selector})
		}
	}
	return out
}

// olderClaimants are the valid NodeTagSyncs created before nts. A node
// selected by several NodeTagSyncs is synced only by the oldest, so two
// configurations never fight over one node's labels.
func olderClaimants(syncs []validSync, nts *v1alpha1.NodeTagSync) []validSync {
	var out []validSync
	for _, s := range syncs {
		if s.nts.UID != nts.UID && olderThan(s.nts, nts) {
			out = append(out, s)
		}
	}
	return out
}

func olderThan(a, b *v1alpha1.NodeTagSync) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// selectedByAny reports whether some NodeTagSync in syncs selects node.
func selectedByAny(syncs []validSync, node *cachedNode) bool {
	for _, s := range syncs {
		if s.selector.Matches(nodeLabels{node}) {
			return true
		}
	}
	return false
}

// withoutClaimed drops nodes an older NodeTagSync syncs and returns how many.
func withoutClaimed(nodes []*cachedNode, claimants []validSync) ([]*cachedNode, int) {
	if len(claimants) == 0 {
		return nodes, 0
	}
	kept := nodes[:0:0]
	for _, n := range nodes {
		if !selectedByAny(claimants, n) {
			kept = append(kept, n)
		}
	}
	return kept, len(nodes) - len(kept)
}
