package nodetags_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// TestScaleSetFanOut: a Uniform scale set's tags reach every node, with one
// bulk read and no writes.
func TestScaleSetFanOut(t *testing.T) {
	h := newHarness(t)
	ssID := h.scaleSetOfNodes("fan", 40, map[string]string{"env": "prod", "costcenter": "42"})
	h.cloud.ResetCalls()
	h.sync("fan", nil)
	for i := range 40 {
		h.waitLabel(fmt.Sprintf("fan-%d", i), "azure.tags/env", "prod")
		h.waitLabel(fmt.Sprintf("fan-%d", i), "azure.tags/costcenter", "42")
	}
	nts := h.passDone("fan", 40)
	if !h.rec.ReadsInformerStore() {
		t.Fatal("passes copy every Node through the client instead of reading the informer's store")
	}
	if nts.Status.SyncedNodes != 40 || nts.Status.ConflictCount != 0 {
		t.Fatalf("status = %+v, want 40 synced and no conflicts", nts.Status)
	}
	calls := h.cloud.Calls()
	if got := calls.Count("VirtualMachineScaleSets.List"); got < 1 || got > 2 {
		t.Fatalf("scale-set lists = %d, want 1 (or 2 with the follow-up pass after the label writes)", got)
	}
	if got := calls.Count("VirtualMachineScaleSets.Get") + calls.Count("VirtualMachineScaleSetVMs.Get"); got != 0 {
		t.Fatalf("%d per-resource GETs, want 0 (reads are bulk)", got)
	}
	if w := h.writes(); w != 0 {
		t.Fatalf("%d ARM writes, want 0: nothing changed in the cloud", w)
	}
	// An unchanged resync finds every node steady and merges none of them;
	// a tag edit makes the scale set's nodes merge again.
	if nts := h.syncAndWait("fan"); nts.Status.SyncedNodes != 40 || h.rec.Steady("fan") != 40 {
		t.Fatalf("after an unchanged resync: synced %d, steady %d; want 40 and 40", nts.Status.SyncedNodes, h.rec.Steady("fan"))
	}
	if err := h.cloud.SetTags(ssID, map[string]string{"env": "canary"}); err != nil {
		t.Fatal(err)
	}
	h.syncNow("fan")
	for i := range 40 {
		h.waitLabel(fmt.Sprintf("fan-%d", i), "azure.tags/env", "canary")
	}
}

// TestDirectionsAndPolicies covers every direction x conflict policy: each
// case starts from an agreed base env=prod, then the cloud sets env=cloud and
// adds fromcloud, the node sets env=node and adds fromnode.
func TestDirectionsAndPolicies(t *testing.T) {
	type want struct {
		label, tag          string // env on each side after the pass
		fromCloud, fromNode bool   // propagated?
		conflict            bool
	}
	cases := []struct {
		dir    v1alpha1.Direction
		policy v1alpha1.ConflictPolicy
		want   want
	}{
		{v1alpha1.DirectionTwoWay, v1alpha1.ConflictIgnore, want{"node", "cloud", true, true, true}},
		{v1alpha1.DirectionTwoWay, v1alpha1.ConflictCloudWins, want{"cloud", "cloud", true, true, false}},
		{v1alpha1.DirectionTwoWay, v1alpha1.ConflictNodeWins, want{"node", "node", true, true, false}},
		{v1alpha1.DirectionCloudToNode, v1alpha1.ConflictIgnore, want{"node", "cloud", true, false, true}},
		{v1alpha1.DirectionCloudToNode, v1alpha1.ConflictCloudWins, want{"cloud", "cloud", true, false, false}},
		{v1alpha1.DirectionCloudToNode, v1alpha1.ConflictNodeWins, want{"node", "cloud", true, false, true}},
		{v1alpha1.DirectionNodeToCloud, v1alpha1.ConflictIgnore, want{"node", "cloud", false, true, true}},
		{v1alpha1.DirectionNodeToCloud, v1alpha1.ConflictCloudWins, want{"node", "cloud", false, true, true}},
		{v1alpha1.DirectionNodeToCloud, v1alpha1.ConflictNodeWins, want{"node", "node", false, true, false}},
	}
	h := newHarness(t)
	h.resourceGroup("rg-dir")
	type made struct{ name, vm string }
	var all []made
	for _, c := range cases {
		name := strings.ToLower(fmt.Sprintf("%s-%s", c.dir, c.policy))
		vmID, pid := h.vm("rg-dir", name, map[string]string{"env": "cloud", "fromcloud": "c"})
		h.node(name, pid, map[string]string{"case": name, "azure.tags/env": "node", "azure.tags/fromnode": "n"}, map[string]string{"env": "prod"})
		h.sync(name, func(s *v1alpha1.NodeTagSyncSpec) {
			s.Direction, s.ConflictPolicy = c.dir, c.policy
			s.NodeSelector = &metav1LabelSelector{MatchLabels: map[string]string{"case": name}}
		})
		all = append(all, made{name, vmID})
	}
	for i, c := range cases {
		m := all[i]
		t.Run(m.name, func(t *testing.T) {
			nts := h.passDone(m.name, 1)
			labels, tags := h.labels(m.name), h.tags(m.vm)
			check := func(what, got, want string) {
				if got != want {
					t.Errorf("%s = %q, want %q (labels %v, tags %v)", what, got, want, labels, tags)
				}
			}
			check("label env", labels["azure.tags/env"], c.want.label)
			check("tag env", tags["env"], c.want.tag)
			if _, ok := labels["azure.tags/fromcloud"]; ok != c.want.fromCloud {
				t.Errorf("fromcloud label present = %v, want %v", ok, c.want.fromCloud)
			}
			if _, ok := tags["fromnode"]; ok != c.want.fromNode {
				t.Errorf("fromnode tag present = %v, want %v", ok, c.want.fromNode)
			}
			if got := nts.Status.ConflictCount > 0; got != c.want.conflict {
				t.Errorf("conflict reported = %v, want %v: %+v", got, c.want.conflict, nts.Status.Conflicts)
			}
			if c.want.conflict {
				h.waitEvent("TagConflict", m.name)
			}
		})
	}
}

// TestDisagreeingScaleSetNodes: two nodes of one scale set propose different
// values: a conflict, nothing written, no flip-flop across passes.
func TestDisagreeingScaleSetNodes(t *testing.T) {
	h := newHarness(t)
	h.resourceGroup("rg-dis")
	ssID, pids := h.scaleSet("rg-dis", "pool", 3, map[string]string{"env": "prod"})
	base := map[string]string{"env": "prod"}
	h.node("dis-0", pids[0], map[string]string{"azure.tags/env": "prod", "azure.tags/team": "a"}, base)
	h.node("dis-1", pids[1], map[string]string{"azure.tags/env": "prod", "azure.tags/team": "b"}, base)
	h.node("dis-2", pids[2], map[string]string{"azure.tags/env": "prod"}, base)
	h.sync("dis", nil)
	nts := h.passDone("dis", 3)
	if nts.Status.ConflictCount != 1 || len(nts.Status.Conflicts) != 1 || nts.Status.Conflicts[0].Tag != "team" {
		t.Fatalf("conflicts = %+v, want one on team", nts.Status.Conflicts)
	}
	h.waitEvent("TagConflict", "dis-0")
	h.waitEvent("TagConflict", "dis-1")
	for range 3 {
		nts := h.syncAndWait("dis")
		if nts.Status.ConflictCount != 1 || nts.Status.ErrorCount != 0 {
			t.Fatalf("a forced pass changed the outcome: %+v", nts.Status)
		}
	}
	if _, ok := h.tags(ssID)["team"]; ok {
		t.Fatalf("the scale set got a team tag %v although its nodes disagree", h.tags(ssID))
	}
	if w := h.writes(); w != 0 {
		t.Fatalf("%d ARM writes, want 0 while nodes disagree", w)
	}
	if got := h.labels("dis-2")["azure.tags/team"]; got != "" {
		t.Fatalf("dis-2 got team=%q from a disagreement", got)
	}
}

// TestDeletionsPropagateKeyByKey: a tag removed in Azure (where it came
// from) removes the label; a label removed on a node removes the tag it
// brought; a label removed of a tag the cloud brought is held; other keys
// stay.
func TestDeletionsPropagateKeyByKey(t *testing.T) {
	h := newHarness(t)
	vmID, pid := h.vmInGroup("rg-del", "vm-del", map[string]string{"env": "prod", "owner": "ops", "team": "blue"})
	h.node("del", pid, nil, nil)
	h.sync("del", nil)
	h.waitLabel("del", "azure.tags/owner", "ops")
	h.waitLabel("del", "azure.tags/team", "blue")

	if err := h.cloud.DeleteTags(vmID, "owner"); err != nil {
		t.Fatal(err)
	}
	h.syncAndWait("del")
	h.waitLabel("del", "azure.tags/owner", absent)

	setLabel(h, "del", "azure.tags/added", "yes")
	h.waitTag(vmID, "added", "yes")
	removeLabel(h, "del", "azure.tags/added")
	h.waitTag(vmID, "added", absent)

	removeLabel(h, "del", "azure.tags/team")
	h.syncAndWait("del")
	if got := h.tags(vmID)["team"]; got != "blue" {
		t.Fatalf("team = %q: the removal of a label whose tag came from the cloud must wait for approval", got)
	}
	if got := h.tags(vmID)["env"]; got != "prod" {
		t.Fatalf("env tag = %q, want prod to survive unrelated deletions", got)
	}
	if got := h.labels("del")["azure.tags/env"]; got != "prod" {
		t.Fatalf("env label = %q, want prod", got)
	}
}

// TestLabelAddedReachesScaleSet: a label added on one node is written to its
// scale set and fans out to the other nodes.
func TestLabelAddedReachesScaleSet(t *testing.T) {
	h := newHarness(t)
	h.labelFansOut("add", 3)
}

// TestScaleOutAndNodeReplacement: a new instance's node gets the labels; a
// node deleted and recreated (upgrade) gets them back and deletes nothing.
func TestScaleOutAndNodeReplacement(t *testing.T) {
	h := newHarness(t)
	h.resourceGroup("rg-scale")
	ssID, pids := h.scaleSet("rg-scale", "pool", 2, map[string]string{"env": "prod", "team": "blue"})
	h.node("scale-0", pids[0], nil, nil)
	h.node("scale-1", pids[1], nil, nil)
	h.sync("scale", nil)
	h.waitLabel("scale-1", "azure.tags/team", "blue")

	more, err := h.cloud.AddInstances(ssID, 1)
	if err != nil {
		t.Fatal(err)
	}
	h.node("scale-2", "azure://"+more[0], nil, nil)
	h.waitLabel("scale-2", "azure.tags/team", "blue")

	if err := h.c.Delete(h.ctx, nodeObject("scale-0")); err != nil {
		t.Fatal(err)
	}
	h.eventually("scale-0 deleted", func() string {
		if h.labels("scale-0") != nil {
			return "still there"
		}
		return ""
	})
	h.node("scale-0", pids[0], nil, nil)
	h.waitLabel("scale-0", "azure.tags/team", "blue")
	h.passDone("scale", 3)
	if got := h.tags(ssID); !maps.Equal(got, map[string]string{"env": "prod", "team": "blue"}) {
		t.Fatalf("scale-set tags = %v after scale-out and replacement, want them unchanged", got)
	}
}

// TestNodePoolReconcileWipe: a wholesale rewrite of the scale set's tags
// deletes no labels, is reported, and is repaired from the labels; the
// platform's own tag it wrote is left to it.
func TestNodePoolReconcileWipe(t *testing.T) {
	h := newHarness(t)
	want := map[string]string{"env": "prod", "team": "blue", "costcenter": "42"}
	ssID := h.syncedScaleSetOfNodes("wipe", 3, want)
	h.passDone("wipe", 3)

	if err := h.cloud.ReplaceTags(ssID, map[string]string{"aks-managed-poolName": "pool"}); err != nil {
		t.Fatal(err)
	}
	h.syncAndWait("wipe")
	for k, v := range want {
		h.waitTag(ssID, k, v)
	}
	h.waitEvent("TagsWiped", "wipe")
	for i := range 3 {
		labels := h.labels(fmt.Sprintf("wipe-%d", i))
		for k, v := range want {
			if labels["azure.tags/"+k] != v {
				t.Fatalf("wipe-%d lost label %s: %v", i, k, labels)
			}
		}
		if v, ok := labels["azure.tags/aks-managed-poolName"]; ok {
			t.Fatalf("wipe-%d got the platform's tag as label %q: aks-managed-* tags are AKS's, not synced", i, v)
		}
	}
	if got := h.tags(ssID)["aks-managed-poolName"]; got != "pool" {
		t.Fatalf("the platform's tag became %q after the repair, want it left as AKS wrote it", got)
	}
}
