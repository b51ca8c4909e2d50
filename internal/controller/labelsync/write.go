package labelsync

import (
	"context"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// writeCluster writes the Nodes of one cluster's hosts, except the
// removals held.
func (p *pass) writeCluster(ctx context.Context, cw *clusterWork, held map[nodeKey][]string) {
	for i, hw := range cw.hosts {
		if err := p.syncHost(ctx, cw.c, hw, held[nodeKey{cluster: cw.cluster, node: hw.l.node}]); err != nil {
			links := make([]*link, 0, len(cw.hosts)-i)
			for _, rest := range cw.hosts[i:] {
				links = append(links, rest.l)
			}
			p.unreachable(cw.cluster, links, err)
			return
		}
	}
	p.r.clusterReached(cw.cluster)
}

// syncHost brings one host's Node in line, in the pass's stages: plan
// (planHost, pure), report what the plan holds back, write, and report
// the write.
func (p *pass) syncHost(ctx context.Context, c client.Client, hw hostWork, held []string) error {
	l, node := hw.l, hw.node
	if node == nil {
		p.wait(l, v1alpha1.WaitNoNodeRef)
		return nil
	}
	k := nodeKey{cluster: l.cluster, node: l.node}
	p.touch(k)
	hp := planHost(p.src, hw, held)
	p.reportHostPlan(l, hp, hw.contests)
	switch {
	case hp.u.IsEmpty():
		p.synced(hp.inSync && len(held) == 0, false)
		return nil
	case p.src.suspended:
		// Read and reported, never written: the Node is in sync only if
		// its labels already are.
		hp.u.Record = ""
		p.wouldWrite(hp.u)
		p.keepsTaint(hp.inSync && hp.tainted)
		p.synced(hp.inSync && hp.u.Labels.IsEmpty(), false)
		return nil
	case p.r.inFlight.Stale(k, node.ResourceVersion):
		p.synced(hp.inSync, true)
		return nil
	}
	err := p.r.inFlight.Patch(ctx, c, k, node.Name, node.ResourceVersion, hp.u.patch())
	return p.reportHostWrite(l, hp, held, err)
}

// hostPlan is what a pass decides for one host's Node.
type hostPlan struct {
	u nodeUpdate
	// inSync: no other host contests a key; tainted: the Node carries the
	// pending taint the update would release.
	inSync, tainted bool
	// contested are the keys other hosts contest, left alone.
	contested []string
}

// planHost decides the change one host's Node needs: the host's labels
// under the source's prefixes, except the keys another host contests (and
// the pending taint stays while any is), and the record of what the sync
// owns on the Node, without the removals held for approval.
func planHost(src *source, hw hostWork, held []string) hostPlan {
	node := hw.node
	hp := hostPlan{u: updateFor(hw.l.host.Labels, node.Labels, src.prefixes, node.Spec.Taints, src.retain), inSync: len(hw.contests) == 0}
	hp.tainted = hp.u.Taints != nil
	if !hp.inSync {
		hp.contested = contestedKeys(hw.contests)
		hp.u.Labels, hp.u.Taints = hp.u.Labels.Without(hp.contested), nil
		hp.u.Retained = slices.DeleteFunc(hp.u.Retained, func(k string) bool { return slices.Contains(hp.contested, k) })
	}
	hp.u.remember(hw.plan, held, hp.contested, node.Annotations[v1alpha1.LabelSyncRecordAnnotation])
	return hp
}

// keepsTaint counts a Node that keeps the pending taint after the pass
// (when tainted).
func (p *pass) keepsTaint(tainted bool) {
	if !tainted {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.stillTainted++
}
