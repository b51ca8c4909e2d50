package labelsync

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// syncHost compares one host with its Node (nil: not registered yet) and
// writes the Node when they differ, except the keys other hosts of the
// Node contest (and then the pending taint stays) and the removals held.
// It returns an error only when the cluster could not be reached; other
// failures are recorded as the host's problem.
func (p *pass) syncHost(ctx context.Context, c client.Client, hw hostWork, held []string) error {
	l, node, contests := hw.l, hw.node, hw.contests
	k := nodeKey{cluster: l.cluster, node: l.node}
	if node == nil {
		p.wait(l, v1alpha1.WaitNoNodeRef)
		return nil
	}
	p.touch(k)
	u := updateFor(l.host.Labels, node.Labels, p.src.prefixes, node.Spec.Taints, p.src.retain)
	tainted := u.taints != nil
	inSync := len(contests) == 0
	var contested []string
	if !inSync {
		contested = contestedKeys(contests)
		u.labels, u.taints = u.labels.Without(contested), nil
		u.retained = slices.DeleteFunc(u.retained, func(k string) bool { return slices.Contains(contested, k) })
		p.contested(l, contests)
		p.keepsTaint(tainted)
	}
	u.remember(hw.plan, held, contested, node.Annotations[v1alpha1.LabelSyncRecordAnnotation])
	p.kept(l, u.retained)
	if u.isEmpty() {
		p.synced(inSync && len(held) == 0, false)
		return nil
	}
	if p.src.suspended {
		// Read and reported, never written: the Node is in sync only if
		// its labels already are.
		u.record = ""
		p.wouldWrite(u)
		p.keepsTaint(inSync && tainted)
		p.synced(inSync && u.labels.IsEmpty(), false)
		return nil
	}
	if p.r.inFlight.Stale(k, node.ResourceVersion) {
		p.synced(inSync, true)
		return nil
	}
	err := p.r.inFlight.Patch(ctx, c, k, node.Name, node.ResourceVersion, u.patch())
	switch {
	case err == nil:
		p.wrote(l, u)
		p.synced(inSync && len(held) == 0, true)
	case apierrors.IsConflict(err):
		// The Node changed since the cache read it; its watch event
		// brings a pass that sees the change.
		nodeWritesTotal.WithLabelValues("conflict").Inc()
		p.synced(inSync, true)
	case isUnreachable(err):
		nodeWritesTotal.WithLabelValues("error").Inc()
		return err
	default:
		nodeWritesTotal.WithLabelValues("error").Inc()
		p.problem(l, ReasonNodeWriteFailed, err.Error()+": check that the kubeconfig of cluster "+l.cluster.String()+" may patch nodes")
		p.mu.Lock()
		p.out.writeErrors++
		p.mu.Unlock()
		p.keepsTaint(inSync && tainted)
	}
	return nil
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
