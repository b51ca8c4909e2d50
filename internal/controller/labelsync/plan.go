package labelsync

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// PlanClusterTimeout bounds the reads of one workload cluster while a
// profile is planned: a cluster that does not answer in time is reported
// unreachable and the others are still planned.
const PlanClusterTimeout = 10 * time.Second

// ClientFor returns a client of a workload cluster (a Cluster's
// namespace/name); an error means the cluster cannot be reached.
type ClientFor func(ctx context.Context, cluster types.NamespacedName) (client.Reader, error)

// ProfilePlan is what the next pass over a LabelSyncProfile would do, as
// computed by PlanProfile.
type ProfilePlan struct {
	// Matched counts the hosts the profile selects.
	Matched int
	// Nodes are the Nodes the pass would patch, by host name.
	Nodes []NodePlan
	// InSync counts the hosts whose Node is already in sync.
	InSync int
	// Paused are the hosts skipped because they, their Machine or their
	// Cluster are paused.
	Paused []string
	// Waiting are the hosts whose Node would not be synced, with why.
	Waiting []HostWait
	// Suspended: the profile is suspended, so its pass writes none of
	// Nodes.
	Suspended bool
	// Retained counts the labels deletionPolicy Retain keeps that the
	// sync would otherwise remove (they are not in Nodes).
	Retained int
	// HeldReason says why the removals in the Nodes' Held are held ("":
	// none is).
	HeldReason string
	// removals are the Nodes' planned removals, judged together (hold).
	removals []nodeRemovals
}

// NodePlan is the patch the next pass would send to one host's Node.
type NodePlan struct {
	Host    string
	Cluster types.NamespacedName
	Node    string
	// Before are the Node's labels as read.
	Before map[string]string
	// Labels are the label changes (the controller's own computation).
	Labels tags.LabelChanges
	// ReleaseTaint: the pending taint would be removed.
	ReleaseTaint bool
	// Held are the removals the pass would hold for a person's approval
	// (not in Labels): labels the sync never wrote (under a prefix new to
	// it), and one label removed from many Nodes, in this pass or within
	// the hour (the deletions the profile's status remembers), unless the
	// profile approves that set.
	Held []string
}

// HostWait is a host whose Node would not be synced.
type HostWait struct {
	Host string
	// Reason is a v1alpha1.WaitReason, ReasonNodeReadFailed when the
	// cluster answered but its Nodes could not be listed, or
	// ReasonLinkRefused when the host's chain is not followed.
	Reason string
	// Message details an unreachable cluster or a failed read.
	Message string
}

// MissingKinds asks the API server's discovery which of the Metal3 and
// Cluster API kinds label sync needs it does not serve; "" when all are.
func MissingKinds(dc discovery.DiscoveryInterface) string { return missingKinds(dc) }

// PlanProfile computes, reading only, what the next pass over profile would
// write (a suspended profile's pass writes none of it: ProfilePlan.Suspended;
// with deletionPolicy Retain no removal is planned): its hosts are read with c (the management cluster) and followed
// along the controller's chain, each Node is read through clientFor (live,
// at most PlanClusterTimeout per cluster) and compared with its host by the
// controller's own update. The controller's memory of writes still in
// flight plays no part (plan reads fresh). Only a failing read of the
// management cluster is an error.
func PlanProfile(ctx context.Context, c client.Reader, clientFor ClientFor, profile *v1alpha1.LabelSyncProfile) (*ProfilePlan, error) {
	hosts, err := profileHosts(ctx, c, profile)
	if err != nil {
		return nil, err
	}
	out := &ProfilePlan{Matched: len(hosts), Suspended: profile.Spec.Suspend}
	byCluster := map[types.NamespacedName][]*link{}
	rd := newBulkReader(c)
	for _, h := range hosts {
		l, err := resolve(ctx, rd, h)
		if err != nil {
			return nil, err
		}
		switch {
		case l.refused != "":
			out.wait(l, ReasonLinkRefused, l.refused)
		case l.paused:
			out.Paused = append(out.Paused, h.Name)
		case l.wait != "":
			out.wait(l, string(l.wait), "")
		default:
			byCluster[l.cluster] = append(byCluster[l.cluster], l)
		}
	}
	for _, k := range sortedClusters(byCluster) {
		out.planCluster(ctx, clientFor, k, byCluster[k], profile, profile.Spec.Retains())
	}
	out.hold(profile, time.Now())
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Host < out.Nodes[j].Host })
	sort.SliceStable(out.Waiting, func(i, j int) bool { return out.Waiting[i].Host < out.Waiting[j].Host })
	return out, nil
}

// sortedClusters returns the clusters in name order.
func sortedClusters(m map[types.NamespacedName][]*link) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}

// planCluster compares the hosts of one workload cluster with their Nodes,
// read with one live List.
func (p *ProfilePlan) planCluster(ctx context.Context, clientFor ClientFor, cluster types.NamespacedName, links []*link,
	profile *v1alpha1.LabelSyncProfile, retain bool) {
	prefixes := profile.Spec.Prefixes
	ctx, cancel := context.WithTimeout(ctx, PlanClusterTimeout)
	defer cancel()
	nodes, unreachable, err := readNodes(ctx, clientFor, cluster)
	if err != nil {
		reason := ReasonNodeReadFailed
		msg := fmt.Sprintf("listing the nodes of cluster %s: %v", cluster, err)
		if unreachable {
			reason, msg = string(v1alpha1.WaitClusterUnreachable), fmt.Sprintf("workload cluster %s cannot be reached: %v", cluster, err)
		}
		for _, l := range links {
			p.wait(l, reason, msg)
		}
		return
	}
	for _, l := range links {
		node := nodes[l.node]
		if node == nil {
			p.wait(l, string(v1alpha1.WaitNoNodeRef), "")
			continue
		}
		u := updateFor(l.host.Labels, node.Labels, prefixes, node.Spec.Taints, retain)
		p.Retained += len(u.Retained)
		if !retain {
			rec, _ := tags.ParseLabelRecord(node.Annotations[v1alpha1.LabelSyncRecordAnnotation])
			lp := tags.PlanLabelSync(l.host.Labels, node.Labels, prefixes, (&source{obj: profile, profile: profile}).recordName(), rec)
			p.removals = append(p.removals, nodeRemovals{key: nodeKey{cluster: cluster, node: node.Name}, labels: node.Labels,
				names: slices.Concat(lp.Removals, lp.Unclear), unclear: lp.Unclear})
		}
		if u.Labels.IsEmpty() && u.Taints == nil {
			p.InSync++
			continue
		}
		p.Nodes = append(p.Nodes, NodePlan{Host: l.host.Name, Cluster: cluster, Node: node.Name, Before: node.Labels,
			Labels: u.Labels, ReleaseTaint: u.Taints != nil})
	}
}

// hold judges the planned removals of every Node together, as the pass
// does (judgeRemovals, with the deletions the profile's status remembers
// and its approval), and moves those it would hold from each Node's
// deletions to Held.
func (p *ProfilePlan) hold(profile *v1alpha1.LabelSyncProfile, now time.Time) {
	var recent kit.Recent
	recent.Load(profile.Status.RecentWrites)
	j := judgeRemovals(p.removals, profile.Spec.Prefixes, recent.Deletions.Recent(now))
	if !j.mass.Held() {
		return
	}
	if _, approved := kit.HeldDeletions(profile, j.mass, profile.Status.DeletionsHeld, now); approved {
		return
	}
	held := j.held()
	p.HeldReason = j.mass.Reason
	for i := range p.Nodes {
		n := &p.Nodes[i]
		n.Held = held[nodeKey{cluster: n.Cluster, node: n.Node}]
		n.Labels.Delete = slices.DeleteFunc(n.Labels.Delete, func(k string) bool { return slices.Contains(n.Held, k) })
		if len(n.Labels.Delete) == 0 {
			n.Labels.Delete = nil
		}
	}
}

// readNodes lists a workload cluster's Nodes, by name; unreachable says
// that a failure is the cluster's not being reached (no client for it, or
// no answer) rather than a refused read.
func readNodes(ctx context.Context, clientFor ClientFor, cluster types.NamespacedName) (map[string]*corev1.Node, bool, error) {
	c, err := clientFor(ctx, cluster)
	if err != nil {
		return nil, true, err
	}
	var list corev1.NodeList
	if err := c.List(ctx, &list); err != nil {
		return nil, isUnreachable(err), err
	}
	return byName(list.Items), false, nil
}

// wait records a host that waits.
func (p *ProfilePlan) wait(l *link, reason, msg string) {
	p.Waiting = append(p.Waiting, HostWait{Host: l.host.Name, Reason: reason, Message: msg})
}
