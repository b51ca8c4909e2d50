package labelsync

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/notify"
)

// Condition, event and problem reasons.
const (
	// ReasonInSync: every host with a Node has its labels in place.
	ReasonInSync = "InSync"
	// ReasonClusterUnreachable: a workload cluster could not be reached.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonNodeWriteFailed: a Node could not be patched.
	ReasonNodeWriteFailed = "NodeWriteFailed"
	// ReasonNodeReadFailed: a Node could not be read.
	ReasonNodeReadFailed = "NodeReadFailed"
	// ReasonNodesNotSynced: some Nodes could not be synced (see problems).
	ReasonNodesNotSynced = "NodesNotSynced"
	// ReasonLabelsSynced: Node labels were written (a Normal event).
	ReasonLabelsSynced = "LabelsSynced"
	// ReasonInvalidAnnotation: a Metal3Cluster's label sync annotations
	// cannot be used; nothing is synced for it.
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonCRDsMissing: Metal3 or Cluster API is not installed.
	ReasonCRDsMissing = "CRDsMissing"
	// ReasonDeletionsHeld: label removals wait for a person's approval
	// (a prefix new to the sync, one label removed from many Nodes).
	ReasonDeletionsHeld = "DeletionsHeld"
	// ReasonLinkRefused: a host's chain has a link that is not followed (a
	// consumerRef into another namespace, or a Metal3Machine that names
	// another host); nothing is written for the host.
	ReasonLinkRefused = "LinkRefused"
)

// warnUnreachableAfter is how many consecutive failed attempts to reach a
// workload cluster (with the backoff: about 7 s) come before a Warning.
const warnUnreachableAfter = 3

// shownInNotes is how many items an event note lists before "and N more".
const shownInNotes = 3

// report emits the pass's events on its source: what it wrote (every time
// it writes) and, once while they last, unreachable clusters and hosts
// whose Node could not be written.
func (p *pass) report() {
	n, obj := p.st.notes, p.src.obj
	if len(p.out.written) > 0 {
		sort.Strings(p.out.written)
		note := fmt.Sprintf("labels of %d node(s) updated (%d set, %d removed", len(p.out.written), p.out.sets, p.out.deletes)
		if p.out.taintsReleased > 0 {
			note += fmt.Sprintf(", %d pending taint(s) removed", p.out.taintsReleased)
		}
		n.Normal(obj, ReasonLabelsSynced, note+"): "+notify.Summary(p.out.written, shownInNotes))
	}
	p.reportSafety()
	p.reportHeld()
	for cluster := range p.out.unreachable {
		// clustercache connects to a new cluster in the background: a
		// cluster that has just appeared is "not connected" for a moment.
		// Status says its hosts wait at once; the Warning comes only when
		// the cluster keeps failing.
		if p.r.clusterFailures(cluster) < warnUnreachableAfter {
			continue
		}
		n.Once(obj, "unreachable/"+cluster.String(), ReasonClusterUnreachable, p.unreachableNote(cluster.String()))
	}
	for _, c := range p.out.contestNotes {
		n.OnceRelated(obj, hostRef(c.other), "contest/"+c.host.String()+"/"+c.other.String(), v1alpha1.ReasonContestedKeys, c.note)
	}
	for _, pr := range p.out.problems {
		if pr.Reason == ReasonClusterUnreachable || pr.Reason == v1alpha1.ReasonContestedKeys {
			continue
		}
		n.Once(obj, "problem/"+pr.Host+"/"+pr.Reason, pr.Reason, fmt.Sprintf("host %s: %s", pr.Host, pr.Message))
	}
	n.EndPass(true)
}

// reportHeld remembers the held set (a Metal3Cluster has no status to keep
// it) and emits a DeletionsHeld Warning when a set is first held.
func (p *pass) reportHeld() {
	held := p.out.held
	if p.out.approved {
		held = nil
	}
	p.st.held = held
	if held != nil {
		p.st.notes.Once(p.src.obj, "held/"+held.Token, ReasonDeletionsHeld, heldMessage(p.src, held))
	}
}

// reportSafety emits the Normal events of a profile's safety settings:
// Suspended when a pass first finds the profile suspended, and Retained
// when the set of labels deletionPolicy Retain keeps changes (and is not
// empty).
func (p *pass) reportSafety() {
	n, obj := p.st.notes, p.src.obj
	if p.src.profile != nil && p.src.suspended && !meta.IsStatusConditionTrue(p.src.profile.Status.Conditions, v1alpha1.ConditionSuspended) {
		n.Normal(obj, v1alpha1.ReasonSuspended, "spec.suspend is set: nothing is written until it is unset; "+describePending(p.out.pending))
	}
	sort.Strings(p.out.retained)
	kept := strings.Join(p.out.retained, "\n")
	if kept != p.st.retained && kept != "" {
		n.Normal(obj, v1alpha1.ReasonRetained, retainedNote(p.out.retained))
	}
	p.st.retained = kept
}

// unreachableNote says which hosts wait for an unreachable cluster.
func (p *pass) unreachableNote(cluster string) string {
	var hosts []string
	msg := ""
	for _, pr := range p.out.problems {
		if pr.Reason == ReasonClusterUnreachable && pr.Cluster == cluster {
			hosts = append(hosts, pr.Host)
			msg = pr.Message
		}
	}
	sort.Strings(hosts)
	return fmt.Sprintf("%s; %d host(s) wait for it: %s", strings.TrimSuffix(msg, "."), len(hosts), notify.Summary(hosts, shownInNotes))
}

// describeUpdate renders a Node change for an event: "set a=1, b=2;
// removed c; pending taint removed".
func describeUpdate(u nodeUpdate) string {
	var parts []string
	if len(u.Labels.Set) > 0 {
		keys := make([]string, 0, len(u.Labels.Set))
		for k := range u.Labels.Set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		kv := make([]string, len(keys))
		for i, k := range keys {
			kv[i] = k + "=" + u.Labels.Set[k]
		}
		parts = append(parts, "set "+notify.Summary(kv, shownInNotes))
	}
	if len(u.Labels.Delete) > 0 {
		parts = append(parts, "removed "+notify.Summary(u.Labels.Delete, shownInNotes))
	}
	if u.Taints != nil {
		parts = append(parts, "pending taint removed")
	}
	return strings.Join(parts, "; ")
}
