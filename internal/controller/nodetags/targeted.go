package nodetags

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
)

// runTargeted is a pass over the nodes the last full pass placed on the
// changed resources ids: it reads those resources only (fresh), syncs
// them as a full pass does, and writes nothing when nothing differs (a
// change tagsync's own write caused, a redelivery). Its findings go to
// events, logs and metrics; the status and its counts are the full
// passes', which see every node. A pass that fails keeps the changes for
// its retry.
func (p *pass) runTargeted(ctx context.Context, ids []string) (reconcile.Result, error) {
	res, err := p.syncChanged(ctx, ids)
	result := "ok"
	if err != nil || p.out.errors > 0 {
		result = "error"
		p.r.changes.restore(p.nts.Name, ids, false)
	}
	targetedPassesTotal.WithLabelValues(p.nts.Name, result).Inc()
	log.FromContext(ctx).V(1).Info("targeted sync pass done", "resources", len(ids), "synced", p.out.synced,
		"errors", p.out.errors, "cloudWrites", p.out.cloudWrites, "nodeWrites", p.out.nodeWrites)
	return res, err
}

// syncChanged reads the changed resources and syncs their nodes.
func (p *pass) syncChanged(ctx context.Context, ids []string) (reconcile.Result, error) {
	sel, err := p.selectNodes(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	items := onlyNodes(sel.items, p.r.changes.nodesOn(p.nts.Name, ids))
	if len(items) == 0 {
		return p.next()
	}
	snap, err := p.cfg.provider.Snapshot(ctx, cloudNodes(items), cloud.ReadOptions{
		Target: p.cfg.target, Fresh: true, Scopes: p.cfg.resourceGroups, Resources: ids,
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the changed resources: %w", err)
	}
	p.reportReadFailures(snap.Failed)
	p.syncAll(ctx, items, snap)
	p.keepSteady(items)
	return p.next()
}

// keepSteady updates the steady marks of the nodes a targeted pass saw and
// keeps the others'.
func (p *pass) keepSteady(items []*cachedNode) {
	for _, n := range items {
		if mark, ok := p.nextSteady[n.Name]; ok {
			p.st.steady[n.Name] = mark
		} else {
			delete(p.st.steady, n.Name)
		}
	}
}

// onlyNodes keeps the nodes named.
func onlyNodes(nodes []*cachedNode, names map[string]bool) []*cachedNode {
	out := make([]*cachedNode, 0, len(names))
	for _, n := range nodes {
		if names[n.Name] {
			out = append(out, n)
		}
	}
	return out
}

// setEventsCondition reports in st whether events drive the passes (the
// Events condition), or removes it when events are off.
func (p *pass) setEventsCondition(st *v1alpha1.NodeTagSyncStatus) {
	if p.health == nil {
		return
	}
	setConditions(st, p.nts.Generation, p.health.Condition(p.cfg.resync, p.nts.Generation))
}
