package labelsync

import (
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/notify"
)

// outcome is what a pass found and did.
type outcome struct {
	matched, inSync, paused int
	waiting                 map[v1alpha1.WaitReason][]string
	problems                []v1alpha1.HostProblem
	// written are the Nodes patched, described for the event.
	written []string
	sets    int
	deletes int
	// taintsReleased counts Nodes that lost the pending taint; stillTainted
	// the Nodes that keep it after the pass though their host matched
	// (contested keys, a failed write, a suspended source).
	taintsReleased, stillTainted int
	writeErrors                  int
	inFlight                     int
	// unreachable are the clusters that could not be reached, with the
	// wait before retrying them.
	unreachable map[types.NamespacedName]time.Duration
	// touched are the clusters, Nodes and hosts the pass looked at.
	clusters map[types.NamespacedName]bool
	nodes    map[nodeKey]bool
	hosts    map[types.NamespacedName]bool
	// staked are the claims the pass made.
	staked map[claimant]bool
	// conflicts describe the hosts holding back contested keys.
	conflicts []string
	// contestNotes are the Warnings of contests, one per host and other
	// host.
	contestNotes []contestNote
	// retained are the labels an upsert-only source kept, as "node N of
	// C: key".
	retained []string
	// pending is what a suspended source would have written.
	pending v1alpha1.PendingLabelWrites
	// held is the set of label removals held for approval (nil: none);
	// approved is set when the approval annotation named it.
	held     *v1alpha1.HeldDeletions
	approved bool
}

// contestNote is the Warning of one host's contest with another host.
type contestNote struct {
	host, other types.NamespacedName
	note        string
}

// unreachable makes the hosts wait for their cluster and records the
// failure for the backoff.
func (p *pass) unreachable(cluster types.NamespacedName, links []*link, err error) {
	retry := p.r.clusterFailed(cluster, err)
	msg := describeUnreachable(cluster, err)
	p.mu.Lock()
	p.out.unreachable[cluster] = retry
	p.mu.Unlock()
	for _, l := range links {
		p.wait(l, v1alpha1.WaitClusterUnreachable)
		p.problem(l, ReasonClusterUnreachable, msg)
	}
}

// wait counts a host waiting for a reason.
func (p *pass) wait(l *link, why v1alpha1.WaitReason) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.waiting[why] = append(p.out.waiting[why], l.host.Name)
}

// problem records a host's problem.
func (p *pass) problem(l *link, reason, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.problems = append(p.out.problems, v1alpha1.HostProblem{Host: l.host.Name, Cluster: l.cluster.String(), Node: l.node,
		Reason: reason, Message: notify.Fit(msg)})
}

// synced counts a host whose Node is in sync (or whose write is in
// flight), unless keys of it are contested, and a write in flight.
func (p *pass) synced(inSync, inFlight bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if inSync {
		p.out.inSync++
	}
	if inFlight {
		p.out.inFlight++
	}
}

// contested records a host whose Node's keys other hosts contest.
func (p *pass) contested(l *link, contests []contest) {
	msg := describeContests(contests)
	p.problem(l, v1alpha1.ReasonContestedKeys, fmt.Sprintf("node %s of cluster %s: %s; neither writes these keys until one of the hosts changes or no longer reaches the node",
		l.node, l.cluster, msg))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.conflicts = append(p.out.conflicts, fmt.Sprintf("host %s on node %s: %s", l.host.Name, l.node, msg))
	for _, c := range contests {
		p.out.contestNotes = append(p.out.contestNotes, contestNote{host: l.hostKey(), other: c.otherHost,
			note: fmt.Sprintf("host %s, node %s of cluster %s: %s wants other values for %s; neither writes them",
				l.host.Name, l.node, l.cluster, c.other, strings.Join(c.keys, ", "))})
	}
}

// wrote counts a Node written.
func (p *pass) wrote(l *link, u nodeUpdate) {
	nodeWritesTotal.WithLabelValues("ok").Inc()
	labelChangesTotal.WithLabelValues("set").Add(float64(len(u.Labels.Set)))
	labelChangesTotal.WithLabelValues("delete").Add(float64(len(u.Labels.Delete)))
	what := describeUpdate(u)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.sets += len(u.Labels.Set)
	p.out.deletes += len(u.Labels.Delete)
	if u.Taints != nil {
		p.out.taintsReleased++
	}
	p.out.written = append(p.out.written, fmt.Sprintf("node %s of %s (host %s): %s", l.node, l.cluster, l.host.Name, what))
}

// kept records the labels of a host's Node an upsert-only source keeps.
func (p *pass) kept(l *link, keys []string) {
	if len(keys) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		p.out.retained = append(p.out.retained, fmt.Sprintf("node %s of %s: %s", l.node, l.cluster, k))
	}
}

// wouldWrite counts what a suspended source would have written to a Node.
func (p *pass) wouldWrite(u nodeUpdate) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &p.out.pending
	w.Nodes++
	w.LabelsSet += int32(len(u.Labels.Set))
	w.LabelsRemoved += int32(len(u.Labels.Delete))
	if u.Taints != nil {
		w.TaintsRemoved++
	}
}

// touch records a Node the pass looked at.
func (p *pass) touch(k nodeKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.nodes[k] = true
}

// waitingCount is how many hosts wait.
func (p *pass) waitingCount() int {
	n := 0
	for _, hs := range p.out.waiting {
		n += len(hs)
	}
	return n
}

// reportHostPlan reports what a host's plan holds back: the contested
// keys (and the pending taint they keep), and the removals an upsert-only
// source keeps.
func (p *pass) reportHostPlan(l *link, hp hostPlan, contests []contest) {
	if !hp.inSync {
		p.contested(l, contests)
		p.keepsTaint(hp.tainted)
	}
	p.kept(l, hp.u.Retained)
}

// reportHostWrite reports a host's Node write that ended with err; an
// unreachable cluster's error is returned, for the pass to report the
// cluster.
func (p *pass) reportHostWrite(l *link, hp hostPlan, held []string, err error) error {
	switch {
	case err == nil:
		p.wrote(l, hp.u)
		p.synced(hp.inSync && len(held) == 0, true)
	case apierrors.IsConflict(err):
		// The Node changed since the cache read it; its watch event
		// brings a pass that sees the change.
		nodeWritesTotal.WithLabelValues("conflict").Inc()
		p.synced(hp.inSync, true)
	case isUnreachable(err):
		nodeWritesTotal.WithLabelValues("error").Inc()
		return err
	default:
		nodeWritesTotal.WithLabelValues("error").Inc()
		p.problem(l, ReasonNodeWriteFailed, err.Error()+": check that the kubeconfig of cluster "+l.cluster.String()+" may patch nodes")
		p.mu.Lock()
		p.out.writeErrors++
		p.mu.Unlock()
		p.keepsTaint(hp.inSync && hp.tainted)
	}
	return nil
}
