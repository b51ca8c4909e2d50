package nodetags

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// applyNodes writes each member's label changes and new base, in parallel,
// and counts the outcome. Nodes that need no change are not written.
func (r *Reconciler) applyNodes(ctx context.Context, nts *v1alpha1.NodeTagSync, cfg syncConfig, plan resourcePlan, out *outcome) {
	limit := r.NodeWriteConcurrency
	if limit <= 0 {
		limit = 16
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(limit)
	changed := 0
	var example string
	for i, m := range plan.members {
		u, skipped := nodeUpdateFor(cfg, m, plan.results[i])
		for _, s := range skipped {
			out.skipped = append(out.skipped, skippedEntry(m.node.Name, s))
			r.notes.once(m.node, "skip/"+m.node.Name+"/"+s.Name, ReasonTagUnrepresentable, fmt.Sprintf("tag %q: %s", s.Name, s.Reason))
		}
		if u.isEmpty() {
			if plan.writeErr == nil {
				out.synced++
			}
			continue
		}
		if !u.labels.IsEmpty() {
			changed++
			example = describePatch(u.labels.Set, u.labels.Delete)
		}
		g.Go(func() error {
			readAt := m.node.ResourceVersion
			err := patchNode(ctx, r.Client, m.node, u)
			mu.Lock()
			defer mu.Unlock()
			if apierrors.IsConflict(err) {
				// The Node changed since the cache read it: its watch event
				// brings a pass that sees the change; nothing failed.
				out.inFlight++
				return nil
			}
			if err != nil {
				out.fail(err)
				writesTotal.WithLabelValues(nts.Name, "node", "error").Inc()
				r.notes.warn(m.node, ReasonNodeWriteFailed, err.Error())
				return nil
			}
			r.notePending(m.node.Name, readAt)
			out.nodeWrites++
			writesTotal.WithLabelValues(nts.Name, "node", "ok").Inc()
			if plan.writeErr == nil {
				out.synced++
			}
			return nil
		})
	}
	_ = g.Wait()
	if changed > 0 {
		r.notes.normal(nts, ReasonLabelsSynced, fmt.Sprintf("labels of %d node(s) of %s updated (%s)", changed, plan.resource.ID, example))
	}
}
