package labelsync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/tags"
)

// clusterWork is one reachable workload cluster of a pass: its client and
// its hosts, read and planned.
type clusterWork struct {
	cluster types.NamespacedName
	c       client.Client
	hosts   []hostWork
}

// hostWork is one host of a pass with its Node (nil: not registered yet),
// the other hosts contesting keys of it, and its sync plan.
type hostWork struct {
	l        *link
	node     *corev1.Node
	contests []contest
	plan     tags.LabelSyncPlan
}

// readCluster reads the Nodes of one workload cluster with one List of its
// cache and plans its hosts. The first sign that the cluster cannot be
// reached makes every host of it wait, unsynced (nil).
func (p *pass) readCluster(ctx context.Context, cluster types.NamespacedName, links []*link) *clusterWork {
	w := p.r.workloads
	c, err := w.Client(ctx, cluster)
	if err == nil {
		err = w.WatchNodes(ctx, cluster)
	}
	var nodes map[string]*corev1.Node
	if err == nil {
		nodes, err = listNodes(ctx, c)
	}
	switch {
	case isUnreachable(err):
		p.unreachable(cluster, links, err)
		return nil
	case err != nil:
		for _, l := range links {
			p.problem(l, ReasonNodeReadFailed, fmt.Sprintf("listing the nodes of cluster %s: %v", cluster, err))
		}
		return nil
	}
	contests := p.stakeAll(links, nodes)
	out := &clusterWork{cluster: cluster, c: c, hosts: make([]hostWork, len(links))}
	for i, l := range links {
		hw := hostWork{l: l, node: nodes[l.node], contests: contests[i]}
		if hw.node != nil {
			rec, _ := tags.ParseLabelRecord(hw.node.Annotations[v1alpha1.LabelSyncRecordAnnotation]) // malformed: no memory, removals wait
			hw.plan = tags.PlanLabelSync(l.host.Labels, hw.node.Labels, p.src.prefixes, p.src.recordName(), rec)
		}
		out.hosts[i] = hw
	}
	return out
}

// listNodes reads a workload cluster's Nodes from its cache, by name,
// without copies (UnsafeDisableDeepCopy): they are read, never modified.
func listNodes(ctx context.Context, c client.Client) (map[string]*corev1.Node, error) {
	var list corev1.NodeList
	if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return byName(list.Items), nil
}

// stakeAll records what each host wants on its Node, then returns each
// host's contests with other hosts of the same Node (of this source or
// another), so two hosts of one pass see each other.
func (p *pass) stakeAll(links []*link, nodes map[string]*corev1.Node) [][]contest {
	out := make([][]contest, len(links))
	who := make([]claimant, len(links))
	for i, l := range links {
		if node := nodes[l.node]; node != nil {
			var w want
			who[i], w = claimOf(p.src, l)
			p.r.wake(p.r.claims.Stake(who[i], w, []types.UID{node.UID}))
			p.mu.Lock()
			p.out.staked[who[i]] = true
			p.mu.Unlock()
		}
	}
	for i, l := range links {
		if node := nodes[l.node]; node != nil {
			out[i] = contestsOf(p.r.claims, node.UID, who[i])
		}
	}
	return out
}
