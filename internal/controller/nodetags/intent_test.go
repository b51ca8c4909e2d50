package nodetags_test

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
)

// The behaviours below are the operations whose disappearances are not a
// person's wish to delete (docs/nodetagsync.md, "Deletions only by
// intent"); they run in the cross-cloud suite (TestCrossCloud), on Azure
// and on AWS. Each counts the labels and tags it finds lost at the end:
// the operation loses none.

// pool are a node pool's own tags, which the platform keeps.
var pool = map[string]string{"costcenter": "cc-7", "env": "prod"}

// nodePoolRewrite: a team labels one Node per pool; tagsync copies the
// labels to the pool's group and on to its other Nodes. Then the
// platform rewrites the group's tags to the pool's declared set (what
// `az aks nodepool update --tags`, an upgrade's reconcile or a Terraform
// apply do): its own tags stay, the tags tagsync copied up vanish. They
// are put back from the labels (TagsRestored), and no Node loses a label.
func nodePoolRewrite(o *onCloud) {
	id, pids := o.cloud.group(o.harness, o.name, 3, pool)
	nodes := o.nodes(pids)
	o.sync(nil)
	o.waitLabels(nodes, pool)
	copied := map[string]string{"team": "blue", "owner": "payments"}
	for k, v := range copied {
		setLabel(o.harness, nodes[0], o.label(k), v)
	}
	for k, v := range copied {
		o.waitTag(id, k, v)
	}
	want := maps.Clone(pool)
	maps.Copy(want, copied)
	o.waitLabels(nodes, want)
	o.passDone(o.name, 3)

	o.cloud.edit(o.harness, id, pool, "team", "owner")
	o.syncNow(o.name)
	o.waitEvent(nodetags.ReasonTagsRestored, o.name)
	for k, v := range copied {
		o.waitTag(id, k, v)
	}
	o.noLabelLost(nodes, want)
}

// restoreFight: another writer (a policy, a reconciler) removes a tag
// that came from a label each time tagsync puts it back. After three
// restores within the hour tagsync stops (RestoreStopped), so the two
// never take turns forever; the labels stay.
func restoreFight(o *onCloud) { fight(o, false) }

// restoreFightAcrossLeaders: restoreFight with a new leader after the
// third restore: it counts the restores the old leader made (the status
// keeps them) and stops as the old one would have.
func restoreFightAcrossLeaders(o *onCloud) { fight(o, true) }

func fight(o *onCloud, newLeader bool) {
	id, pids := o.cloud.group(o.harness, o.name, 2, pool)
	nodes := o.nodes(pids)
	o.sync(nil)
	setLabel(o.harness, nodes[0], o.label("team"), "blue")
	o.waitTag(id, "team", "blue")
	want := maps.Clone(pool)
	want["team"] = "blue"
	o.waitLabels(nodes, want)
	for range 3 {
		o.cloud.edit(o.harness, id, nil, "team")
		o.syncNow(o.name)
		o.waitTag(id, "team", "blue")
	}
	if newLeader {
		o.newLeader(func(r *v1alpha1.RecentWrites) bool { return len(r.Restores) == 1 && len(r.Restores[0].Times) == 3 })
	}
	o.cloud.edit(o.harness, id, nil, "team")
	o.syncNow(o.name)
	o.waitEvent(nodetags.ReasonRestoreStopped, o.name)
	o.syncAndWait(o.name)
	if got, ok := o.cloud.tags(o.harness, id)["team"]; ok {
		o.t.Fatalf("tagsync put team=%q back a fourth time within the hour", got)
	}
	o.noLabelLost(nodes, want)
}

// labelTidyUp: `kubectl label nodes --all <prefix>/costcenter-` on Nodes
// whose costcenter came from the cloud deletes no tag: the deletions are
// held for approval (DeletionsHeld, its reason says the tags did not come
// from the Nodes).
func labelTidyUp(o *onCloud) {
	ids, nodes := o.solos(3, pool)
	o.sync(nil)
	o.waitLabels(nodes, pool)
	o.passDone(o.name, 3)

	for _, n := range nodes {
		removeLabel(o.harness, n, o.label("costcenter"))
	}
	o.waitHeld(3)
	for _, id := range ids {
		if got := o.cloud.tags(o.harness, id); !maps.Equal(got, pool) {
			o.t.Fatalf("a label tidy-up changed the tags of %s: %v, want %v", id, got, pool)
		}
	}
}

// cloudRemovalCascade: a tag that came from the cloud is removed from
// four resources at once (a CloudMetadata delete request, a policy that
// strips it): the labels would follow on every Node; the removal of one
// tag from that many resources is held (label deletions, DeletionsHeld),
// and no Node loses the label until a person approves.
func cloudRemovalCascade(o *onCloud) {
	ids, nodes := o.solos(4, pool)
	o.sync(nil)
	o.waitLabels(nodes, pool)
	o.passDone(o.name, 4)

	for _, id := range ids {
		o.cloud.edit(o.harness, id, nil, "costcenter")
	}
	o.syncNow(o.name)
	o.waitHeld(4)
	o.noLabelLost(nodes, pool)
}

// spreadDeletions: a tag that came from the Nodes, removed from their
// labels one Node at a time, pass after pass, is deleted from the first
// resource and held on the second: 2 of 5 is more than a quarter of the
// resources that carry it, however many passes it takes.
func spreadDeletions(o *onCloud) { spread(o, false) }

// spreadAcrossLeaders: spreadDeletions with a new leader between the two
// deletions: it counts the deletion the old leader wrote (the status
// keeps it) and holds the second.
func spreadAcrossLeaders(o *onCloud) { spread(o, true) }

func spread(o *onCloud, newLeader bool) {
	var ids, nodes []string
	for i := range 5 {
		id, pid := o.cloud.solo(o.harness, fmt.Sprintf("%s-%d", o.name, i), map[string]string{"env": "prod"})
		ids = append(ids, id)
		nodes = append(nodes, o.node(i, pid, map[string]string{"owner": "payments"}, nil))
	}
	o.sync(nil)
	for _, id := range ids {
		o.waitTag(id, "owner", "payments")
	}
	o.passDone(o.name, 5)

	removeLabel(o.harness, nodes[0], o.label("owner"))
	o.waitTag(ids[0], "owner", absent)
	if newLeader {
		o.newLeader(func(r *v1alpha1.RecentWrites) bool { return len(r.Deletions) == 1 && r.Deletions[0].Tag == "owner" })
	}
	removeLabel(o.harness, nodes[1], o.label("owner"))
	o.waitHeld(1)
	if got := o.cloud.tags(o.harness, ids[1])["owner"]; got != "payments" {
		o.t.Fatalf("the second deletion of owner within the window was written (owner=%q)", got)
	}
}

// poolVote: on a shared group one Node cannot delete a tag the other
// Nodes still hold: a conflict, nothing deleted; once every Node holding
// it removed its label, the tag (which came from the Nodes) is deleted.
func poolVote(o *onCloud) {
	id, pids := o.cloud.group(o.harness, o.name, 2, pool)
	nodes := o.nodes(pids)
	o.sync(nil)
	setLabel(o.harness, nodes[0], o.label("team"), "blue")
	o.waitTag(id, "team", "blue")
	o.waitLabel(nodes[1], o.label("team"), "blue")
	o.passDone(o.name, 2)

	removeLabel(o.harness, nodes[0], o.label("team"))
	o.waitStatus(o.name, "a conflict on team", func(nts *v1alpha1.NodeTagSync) string {
		if !slices.ContainsFunc(nts.Status.Conflicts, func(c v1alpha1.TagConflict) bool { return c.Tag == "team" }) {
			return fmt.Sprintf("conflicts %+v", nts.Status.Conflicts)
		}
		return ""
	})
	if got := o.cloud.tags(o.harness, id)["team"]; got != "blue" {
		o.t.Fatalf("one Node's deletion reached the group: team=%q", got)
	}
	if got := o.labels(nodes[1])[o.label("team")]; got != "blue" {
		o.t.Fatalf("one Node's deletion reached the other Node: team=%q", got)
	}
	removeLabel(o.harness, nodes[1], o.label("team"))
	o.waitTag(id, "team", absent)
	o.noLabelLost(nodes, pool)
}

// targetChange: Nodes synced with their group switch to their own
// instances (target Instance). The instances lack the tag copied up to
// the group: the group's base is no base for an instance, so nothing is
// deleted and the instances get the tag.
func targetChange(o *onCloud) {
	_, pids := o.cloud.members(o.harness, o.name, 2, pool)
	nodes := o.nodes(pids)
	o.sync(nil)
	setLabel(o.harness, nodes[0], o.label("team"), "blue")
	want := maps.Clone(pool)
	want["team"] = "blue"
	o.waitLabels(nodes, want)
	o.passDone(o.name, 2)

	o.update(o.name, func(n *v1alpha1.NodeTagSync) { n.Spec.Target = v1alpha1.TargetInstance })
	o.syncAndWait(o.name)
	o.noLabelLost(nodes, want)
}

// suspendedDeletions: deletions that piled up while suspended are listed
// in the status as what resuming would hold, and are held on resume like
// any others: the tidy-up made while suspended deletes no tag once
// resumed.
func suspendedDeletions(o *onCloud) {
	ids, nodes := o.solos(2, pool)
	o.sync(nil)
	o.waitLabels(nodes, pool)
	o.suspend(true)
	for _, n := range nodes {
		removeLabel(o.harness, n, o.label("costcenter"))
	}
	o.syncAndWait(o.name)
	o.waitHeld(2) // listed while suspended: what resuming would hold
	o.suspend(false)
	o.waitHeld(2)
	for _, id := range ids {
		if got := o.cloud.tags(o.harness, id); !maps.Equal(got, pool) {
			o.t.Fatalf("resuming wrote the deletions made while suspended: %s has %v", id, got)
		}
	}
}

// newLeader waits until the NodeTagSync's status keeps the recent writes
// kept says, then makes the controller forget what it remembers of the
// object in memory, as a new leader starts.
func (o *onCloud) newLeader(kept func(*v1alpha1.RecentWrites) bool) {
	o.t.Helper()
	o.waitStatus(o.name, "the recent writes in the status", func(nts *v1alpha1.NodeTagSync) string {
		if r := nts.Status.RecentWrites; r == nil || !kept(r) {
			return fmt.Sprintf("recentWrites %+v", r)
		}
		return ""
	})
	o.rec.NewLeader(o.name)
}

// solos creates n resources in no group (Azure VMs, AWS instances) tagged
// t, each with a Node, and returns their IDs and the Nodes.
func (o *onCloud) solos(n int, t map[string]string) (ids, nodes []string) {
	for i := range n {
		id, pid := o.cloud.solo(o.harness, fmt.Sprintf("%s-%d", o.name, i), t)
		ids = append(ids, id)
		nodes = append(nodes, o.node(i, pid, nil, nil))
	}
	return ids, nodes
}

// suspend sets the case's NodeTagSync's spec.suspend and waits until its
// status says so for the new generation.
func (o *onCloud) suspend(on bool) {
	o.t.Helper()
	o.update(o.name, func(n *v1alpha1.NodeTagSync) { n.Spec.Suspend = on })
	want := metav1.ConditionFalse
	if on {
		want = metav1.ConditionTrue
	}
	o.waitStatus(o.name, fmt.Sprintf("Suspended=%s", want), func(nts *v1alpha1.NodeTagSync) string {
		c := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionSuspended)
		if c == nil || c.Status != want || nts.Status.ObservedGeneration != nts.Generation {
			return fmt.Sprintf("Suspended %+v", c)
		}
		return ""
	})
}

// waitHeld waits until the NodeTagSync holds n deletions for approval.
func (o *onCloud) waitHeld(n int32) {
	o.t.Helper()
	o.waitStatus(o.name, fmt.Sprintf("%d deletions held", n), func(nts *v1alpha1.NodeTagSync) string {
		cond := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionDeletionsHeld)
		if cond == nil || cond.Status != metav1.ConditionTrue || nts.Status.DeletionsHeld == nil || nts.Status.DeletionsHeld.Count != n {
			return fmt.Sprintf("DeletionsHeld %+v, held %+v", cond, nts.Status.DeletionsHeld)
		}
		return ""
	})
	o.waitEvent(nodetags.ReasonDeletionsHeld, o.name)
}

// noLabelLost checks, after a pass that served a fresh request, that every
// node still carries want's labels; it reports how many were lost.
func (o *onCloud) noLabelLost(nodes []string, want map[string]string) {
	o.t.Helper()
	o.syncAndWait(o.name)
	lost := 0
	for _, n := range nodes {
		got := o.labels(n)
		for k, v := range want {
			if got[o.label(k)] != v {
				lost++
			}
		}
	}
	if lost > 0 {
		o.t.Fatalf("%d of %d labels lost on %d nodes", lost, len(nodes)*len(want), len(nodes))
	}
}
