package nodetags

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// runTargeted is a pass over the nodes the last full pass placed on the
// changed resources ids: it reads those resources only (fresh), or takes
// the tags their changes carried (carried.go), syncs them in the stages of
// a full pass (sync), and writes nothing when nothing differs (a
// change tagsync's own write caused, a redelivery). Its findings go to
// events, logs and metrics; the status and its counts are the full
// passes', which see every node. A pass that fails keeps the changes for
// its retry.
func (p *pass) runTargeted(ctx context.Context, ids []string, carried map[string]kit.Carried) (reconcile.Result, error) {
	p.targeted = true
	res, err := p.syncChanged(ctx, ids, carried)
	result := "ok"
	if err != nil || p.out.errors > 0 {
		result = "error"
		p.r.changes.restore(p.nts.Name, ids, false)
		kit.KeepForRetry(ctx, fmt.Sprintf("%d nodes of the changed resources not synced", p.out.errors))
	}
	targetedPassesTotal.WithLabelValues(p.nts.Name, result).Inc()
	log.FromContext(ctx).V(1).Info("targeted sync pass done", "resources", len(ids), "synced", p.out.synced,
		"errors", p.out.errors, "cloudWrites", p.out.cloudWrites, "nodeWrites", p.out.nodeWrites)
	return res, err
}

// syncChanged reads the changed resources whose changes carried no usable
// tags and syncs the nodes of all of them.
func (p *pass) syncChanged(ctx context.Context, ids []string, carried map[string]kit.Carried) (reconcile.Result, error) {
	sel, err := p.selectNodes(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	items := onlyNodes(sel.items, p.r.changes.nodesOn(p.nts.Name, ids))
	if len(items) == 0 {
		return p.next()
	}
	p.people = people(carried)
	snap, unread := p.r.changes.fromChanges(p.nts.Name, ids, carried, p.cfg.provider)
	if toRead := onlyNodes(items, p.r.changes.nodesOn(p.nts.Name, unread)); len(toRead) > 0 {
		read, err := p.cfg.provider.Snapshot(readAfterChanges(ctx, unread, carried), cloudNodes(toRead), cloud.ReadOptions{
			Target: p.cfg.target, Fresh: true, Scopes: p.cfg.resourceGroups, Resources: unread,
		})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("reading the changed resources: %w", err)
		}
		p.r.changes.markRead(p.r.Now(), unread...)
		merge(&snap, read)
	}
	p.sync(ctx, items, snap)
	p.keepSteady(items)
	return p.next()
}

// people are the resources whose latest change the cloud attributes to a
// person, with who (nil: none).
func people(carried map[string]kit.Carried) map[string]string {
	var out map[string]string
	for id, c := range carried {
		if c.Writer.Person {
			if out == nil {
				out = map[string]string{}
			}
			out[cloud.CanonicalID(id)] = c.Writer.ID
		}
	}
	return out
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
