package nodetags_test

import (
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/tags"
)

// The behaviours below are routine operations that must never delete a
// cloud tag or a label tagsync did not decide to change; they run in the
// cross-cloud suite (TestCrossCloud), on Azure and on AWS.

// estate are the tags the no-tag-lost behaviours start from.
var estate = map[string]string{"env": "prod", "team": "blue", "cost": "cc-1"}

// update changes the NodeTagSync name (retrying when a status write got in
// first).
func (o *onCloud) update(name string, mutate func(*v1alpha1.NodeTagSync)) {
	o.t.Helper()
	o.eventually("updating "+name, func() string {
		var nts v1alpha1.NodeTagSync
		if err := o.c.Get(o.ctx, clientKey(name), &nts); err != nil {
			return err.Error()
		}
		mutate(&nts)
		if err := o.c.Update(o.ctx, &nts); err != nil {
			return err.Error()
		}
		return ""
	})
}

// labelsUnder waits until every node carries each tag's label under prefix
// and none under the default prefix.
func (o *onCloud) labelsUnder(prefix string, nodes []string, want map[string]string) {
	o.t.Helper()
	for _, n := range nodes {
		for k, v := range want {
			o.waitLabel(n, prefix+"/"+k, v)
			o.waitLabel(n, o.label(k), absent)
		}
	}
}

// tagsIntact checks, after a pass that served a fresh request, that each
// resource still has exactly its tags and that nothing was held.
func (o *onCloud) tagsIntact(name string, want map[string]map[string]string) {
	o.t.Helper()
	nts := o.syncAndWait(name)
	for id, tags := range want {
		if got := o.cloud.tags(o.harness, id); !maps.Equal(got, tags) {
			o.t.Fatalf("the tags of %s are %v, want %v: a routine operation changed them", id, got, tags)
		}
	}
	if c := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionDeletionsHeld); c != nil && c.Status == metav1.ConditionTrue {
		o.t.Fatalf("deletions were held (%s): the operation should have planned none", c.Message)
	}
}

// syncedSolo creates an instance in no group tagged t, its Node, and the
// case's NodeTagSync (spec tweaked by mutate), and waits until the Node
// carries t's labels; it returns the resource ID and the Node's name.
func (o *onCloud) syncedSolo(t map[string]string, mutate func(*v1alpha1.NodeTagSyncSpec)) (string, string) {
	o.t.Helper()
	id, pid := o.cloud.solo(o.harness, o.name, t)
	node := o.node(0, pid, nil, nil)
	o.sync(mutate)
	o.waitLabels([]string{node}, t)
	o.passDone(o.name, 1)
	return id, node
}

// prefixChange: changing labelPrefix on a live NodeTagSync moves the labels
// to the new prefix and deletes no tag.
func prefixChange(o *onCloud) {
	id, pids := o.cloud.group(o.harness, o.name, 2, estate)
	solo, spid := o.cloud.solo(o.harness, o.name+"-solo", map[string]string{"env": "dev", "owner": "ops"})
	nodes := append(o.nodes(pids), o.node(2, spid, nil, nil))
	o.sync(nil)
	o.waitLabels(nodes[:2], estate)
	o.passDone(o.name, 3)

	o.update(o.name, func(n *v1alpha1.NodeTagSync) { n.Spec.LabelPrefix = ptrTo("corp.tags") })
	o.labelsUnder("corp.tags", nodes[:2], estate)
	o.labelsUnder("corp.tags", nodes[2:], map[string]string{"env": "dev", "owner": "ops"})
	o.tagsIntact(o.name, map[string]map[string]string{id: estate, solo: {"env": "dev", "owner": "ops"}})
}

// recreate: deleting the NodeTagSync deletes nothing, and creating it again
// with another prefix moves the labels and deletes no tag.
func recreate(o *onCloud) {
	id, pids := o.cloud.group(o.harness, o.name, 2, estate)
	nodes := o.nodes(pids)
	o.sync(nil)
	o.waitLabels(nodes, estate)
	o.passDone(o.name, 2)

	if err := o.c.Delete(o.ctx, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: o.name}}); err != nil {
		o.t.Fatal(err)
	}
	o.eventually(o.name+" gone", func() string {
		err := o.c.Get(o.ctx, clientKey(o.name), &v1alpha1.NodeTagSync{})
		if !apierrors.IsNotFound(err) {
			return fmt.Sprintf("still there (%v)", err)
		}
		return ""
	})
	if got := o.cloud.tags(o.harness, id); !maps.Equal(got, estate) {
		o.t.Fatalf("deleting the NodeTagSync changed the tags: %v", got)
	}
	o.waitLabels(nodes, estate)
	o.sync(func(s *v1alpha1.NodeTagSyncSpec) { s.LabelPrefix = ptrTo("re.tags") })
	o.labelsUnder("re.tags", nodes, estate)
	o.tagsIntact(o.name, map[string]map[string]string{id: estate})
}

// directionChange: a label removed while the sync ran CloudToNode (so not
// propagated) is not deleted from the cloud once the sync turns TwoWay:
// the base made under CloudToNode is no base for TwoWay, the label comes
// back from the cloud.
func directionChange(o *onCloud) {
	id, node := o.syncedSolo(estate, func(s *v1alpha1.NodeTagSyncSpec) { s.Direction = v1alpha1.DirectionCloudToNode })
	removeLabel(o.harness, node, o.label("team"))
	o.syncAndWait(o.name)

	o.update(o.name, func(n *v1alpha1.NodeTagSync) { n.Spec.Direction = v1alpha1.DirectionTwoWay })
	o.waitLabels([]string{node}, estate)
	o.tagsIntact(o.name, map[string]map[string]string{id: estate})
}

// moveBetweenSyncs: a Node whose labels move it from one NodeTagSync to
// another (of another prefix) gets its labels under the new prefix, loses
// the old ones, and no tag is deleted.
func moveBetweenSyncs(o *onCloud) {
	id, node := o.syncedSolo(estate, nil)
	other := o.name + "-b"
	o.harness.sync(other, func(s *v1alpha1.NodeTagSyncSpec) {
		s.Provider, s.LabelPrefix = o.provider, ptrTo("moved.tags")
		s.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"case": other}}
	})
	setLabel(o.harness, node, "case", other)
	o.labelsUnder("moved.tags", []string{node}, estate)
	o.tagsIntact(other, map[string]map[string]string{id: estate})
}

// legacyBase: a Node carrying a base in the format before origins, met by
// a NodeTagSync with another prefix (an upgrade that also changed the
// prefix), gets its labels under the new prefix and no tag is deleted;
// its base is rewritten in the current format.
func legacyBase(o *onCloud) {
	id, pid := o.cloud.solo(o.harness, o.name, estate)
	node := o.node(0, pid, estate, estate)
	o.sync(func(s *v1alpha1.NodeTagSyncSpec) { s.LabelPrefix = ptrTo("new.tags") })
	for k, v := range estate {
		o.waitLabel(node, "new.tags/"+k, v)
	}
	o.tagsIntact(o.name, map[string]map[string]string{id: estate})
	base, err := tags.ParseBase(o.getNode(node).Annotations[v1alpha1.LastSyncedTagsAnnotation])
	if err != nil || base.Legacy || base.Origin.Prefix != "new.tags" {
		o.t.Fatalf("the base was not rewritten in the current format: %+v (%v)", base, err)
	}
}

// massDeletion: removing every synced label from the Nodes of two
// resources is held (DeletionsHeld, a Warning, nothing deleted) while
// another change is still written; the approval annotation with the
// condition's token lets the deletions through, once.
func massDeletion(o *onCloud) {
	a, apid := o.cloud.solo(o.harness, o.name+"-a", estate)
	b, bpid := o.cloud.solo(o.harness, o.name+"-b", estate)
	c, cpid := o.cloud.solo(o.harness, o.name+"-c", map[string]string{"env": "prod"})
	nodes := []string{o.node(0, apid, nil, nil), o.node(1, bpid, nil, nil), o.node(2, cpid, nil, nil)}
	o.sync(nil)
	o.waitLabels(nodes[:2], estate)
	o.passDone(o.name, 3)

	all := []string{o.label("env"), o.label("team"), o.label("cost")}
	removeLabel(o.harness, nodes[0], all...)
	removeLabel(o.harness, nodes[1], all...)
	setLabel(o.harness, nodes[2], o.label("added"), "yes")
	o.waitTag(c, "added", "yes")
	held := o.waitStatus(o.name, "6 deletions held", func(nts *v1alpha1.NodeTagSync) string {
		cond := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionDeletionsHeld)
		if cond == nil || cond.Status != metav1.ConditionTrue || nts.Status.DeletionsHeld == nil || nts.Status.DeletionsHeld.Count != 6 {
			return fmt.Sprintf("DeletionsHeld %+v, held %+v", cond, nts.Status.DeletionsHeld)
		}
		return ""
	}).Status.DeletionsHeld
	o.waitEvent(nodetags.ReasonDeletionsHeld, o.name)
	for _, id := range []string{a, b} {
		if got := o.cloud.tags(o.harness, id); !maps.Equal(got, estate) {
			o.t.Fatalf("held deletions were written: %s has %v", id, got)
		}
	}

	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.ApproveDeletionsAnnotation, held.Token)
	if err := o.c.Patch(o.ctx, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: o.name}},
		client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		o.t.Fatal(err)
	}
	for _, id := range []string{a, b} {
		for k := range estate {
			o.waitTag(id, k, absent)
		}
	}
	o.waitStatus(o.name, "nothing held", func(nts *v1alpha1.NodeTagSync) string {
		cond := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionDeletionsHeld)
		if cond == nil || cond.Status != metav1.ConditionFalse || nts.Status.DeletionsHeld != nil {
			return fmt.Sprintf("DeletionsHeld %+v, held %+v", cond, nts.Status.DeletionsHeld)
		}
		return ""
	})
}

// suspend: a suspended NodeTagSync writes nothing (cloud or Node) and says
// so; resumed, it writes what changed meanwhile.
func suspend(o *onCloud) {
	id, node := o.syncedSolo(map[string]string{"env": "prod"}, nil)

	o.suspend(true)
	o.cloud.edit(o.harness, id, map[string]string{"env": "staging"})
	setLabel(o.harness, node, o.label("team"), "blue")
	o.syncAndWait(o.name)
	if got := o.labels(node)[o.label("env")]; got != "prod" {
		o.t.Fatalf("a suspended sync wrote the label: env=%q", got)
	}
	if got, ok := o.cloud.tags(o.harness, id)["team"]; ok {
		o.t.Fatalf("a suspended sync wrote the tag team=%q", got)
	}

	o.update(o.name, func(n *v1alpha1.NodeTagSync) { n.Spec.Suspend = false })
	o.waitLabel(node, o.label("env"), "staging")
	o.waitTag(id, "team", "blue")
}

// retain: under deletionPolicy Retain a tag deleted in the cloud keeps its
// label and a label removed from the Node keeps its tag, both reported;
// additions still flow.
func retain(o *onCloud) {
	id, node := o.syncedSolo(estate, func(s *v1alpha1.NodeTagSyncSpec) { s.DeletionPolicy = v1alpha1.DeletionPolicyRetain })

	o.cloud.edit(o.harness, id, nil, "cost")
	removeLabel(o.harness, node, o.label("env"))
	setLabel(o.harness, node, o.label("added"), "yes")
	o.waitTag(id, "added", "yes")
	// The cloud's deletion is seen by a pass that reads the cloud fresh
	// (the resync, a sync request, a change event); the Node's change
	// starts one that may use the provider's read cache.
	o.syncAndWait(o.name)
	nts := o.waitStatus(o.name, "2 deletions retained", func(nts *v1alpha1.NodeTagSync) string {
		if nts.Status.RetainedDeletions != 2 {
			return fmt.Sprintf("retained %d", nts.Status.RetainedDeletions)
		}
		return ""
	})
	if c := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionDeletionsHeld); c == nil || c.Reason != v1alpha1.ReasonRetained {
		o.t.Fatalf("DeletionsHeld %+v, want reason Retained", c)
	}
	o.syncAndWait(o.name)
	if got := o.labels(node)[o.label("cost")]; got != "cc-1" {
		o.t.Fatalf("Retain deleted the label of a tag deleted in the cloud (cost=%q)", got)
	}
	if got := o.cloud.tags(o.harness, id)["env"]; got != "prod" {
		o.t.Fatalf("Retain deleted the tag of a removed label (env=%q)", got)
	}
}
