package nodetags

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// claimant is an older NodeTagSync that may select the same nodes.
type claimant struct {
	name     string
	selector labels.Selector
}

// olderClaimants lists the valid NodeTagSyncs created before nts (ties broken
// by name). A node selected by several NodeTagSyncs is synced only by the
// oldest, so two configurations never fight over one node's labels.
func (r *Reconciler) olderClaimants(ctx context.Context, nts *v1alpha1.NodeTagSync) ([]claimant, error) {
	var list v1alpha1.NodeTagSyncList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing NodeTagSyncs: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return olderThan(&list.Items[i], &list.Items[j]) })
	var out []claimant
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == nts.UID || !olderThan(other, nts) || other.DeletionTimestamp != nil {
			continue
		}
		cfg, err := configFrom(other.Spec)
		if err != nil {
			continue // an invalid NodeTagSync syncs nothing, so it claims nothing
		}
		out = append(out, claimant{name: other.Name, selector: cfg.selector})
	}
	return out, nil
}

func olderThan(a, b *v1alpha1.NodeTagSync) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// claimedBy returns the older NodeTagSync that syncs node, if any.
func claimedBy(claimants []claimant, node *corev1.Node) (string, bool) {
	for _, c := range claimants {
		if c.selector.Matches(labels.Set(node.Labels)) {
			return c.name, true
		}
	}
	return "", false
}

// withoutClaimed drops nodes an older NodeTagSync syncs and returns how many.
func withoutClaimed(nodes []corev1.Node, claimants []claimant) ([]corev1.Node, int) {
	if len(claimants) == 0 {
		return nodes, 0
	}
	kept := nodes[:0:0]
	for i := range nodes {
		if _, ok := claimedBy(claimants, &nodes[i]); !ok {
			kept = append(kept, nodes[i])
		}
	}
	return kept, len(nodes) - len(kept)
}
