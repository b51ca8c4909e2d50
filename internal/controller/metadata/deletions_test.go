package metadata_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// disks seeds n disks in the resource group rg-<infra>, each (and the
// group) tagged with the infra's classifier and tags; it returns their IDs,
// the group's last.
func (h *harness) disks(infra string, n int, tags map[string]string) []string {
	h.t.Helper()
	all := map[string]string{classifierOf(infra): "owned"}
	for k, v := range tags {
		all[k] = v
	}
	e := armsimtest.ClusterEstate{Infra: infra, PerType: n, Types: []string{armsim.TypeDisk}, Tags: all}
	if err := e.Seed(h.az.Server); err != nil {
		h.t.Fatal(err)
	}
	return append(e.ResourceIDs(), e.GroupIDs()...)
}

// waitCondition waits until the object's condition typ has status and
// reason for its current generation; get reads the object and returns
// its generation and conditions.
func (h *harness) waitCondition(what, typ string, status metav1.ConditionStatus, reason string, get func() (int64, []metav1.Condition)) *metav1.Condition {
	h.t.Helper()
	var found *metav1.Condition
	eventually(h.t, fmt.Sprintf("%s %s=%s (%s)", what, typ, status, reason), func() string {
		gen, conds := get()
		found = meta.FindStatusCondition(conds, typ)
		if found == nil || found.Status != status || found.Reason != reason || found.ObservedGeneration != gen {
			return fmt.Sprintf("generation %d, %s = %+v", gen, typ, found)
		}
		return ""
	})
	return found
}

// cmCondition reads a CloudMetadata's conditions for waitCondition.
func (h *harness) cmCondition(name string) func() (int64, []metav1.Condition) {
	return func() (int64, []metav1.Condition) {
		cm := read(h, name, &v1alpha1.CloudMetadata{})
		return cm.Generation, cm.Status.Conditions
	}
}

// azureCondition reads an AzureMetadata's conditions for waitCondition.
func (h *harness) azureCondition(name string) func() (int64, []metav1.Condition) {
	return func() (int64, []metav1.Condition) {
		o := h.azureStatus(name)
		return o.Generation, o.Status.Conditions
	}
}

// deleteRecords counts the audit records (results) that deleted name.
func (h *harness) deleteRecords(name string) int {
	n := 0
	for _, r := range h.auditRecords() {
		if _, ok := r.Deleted[name]; ok {
			n++
		}
	}
	return n
}

// TestSuspendWritesNothingThenResumes: a suspended CloudMetadata discovers
// and plans (it counts the resources and how many it would write) but
// writes no tag and records none as its own; Ready and Suspended say so.
// Unsuspended, its request is still suspended: nothing is written and the
// request's status says Suspended. Unsuspending the request writes at
// once.
func TestSuspendWritesNothingThenResumes(t *testing.T) {
	h := newHarness(t)
	ids := h.disks("susp", 2, nil)
	az := h.azureMetadata("tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	cm := build.CloudMetadata("cm", build.Classifiers(map[string]string{classifierOf("susp"): "owned"}), build.Suspend(), build.AzureRef("tags"))
	h.create(cm)

	h.waitCondition("CloudMetadata", v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspended, h.cmCondition("cm"))
	ready := h.waitCondition("CloudMetadata", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended, h.cmCondition("cm"))
	if !strings.Contains(ready.Message, fmt.Sprintf("would write %d resource(s)", len(ids))) {
		t.Errorf("Ready message %q does not say what a pass would write", ready.Message)
	}
	h.waitCondition("AzureMetadata", v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspended, h.azureCondition("tags"))
	h.pass("cm")
	if st := read(h, "cm", &v1alpha1.CloudMetadata{}).Status; int(st.Matched) != len(ids) || st.Failed != 0 {
		t.Errorf("suspended status counts %d matched, %d failed; want %d, 0", st.Matched, st.Failed, len(ids))
	}
	if n := h.writes(); n != 0 {
		t.Errorf("a suspended CloudMetadata made %d tag writes", n)
	}
	if st := h.azureStatus("tags").Status; len(st.Held) != 0 {
		t.Errorf("a suspended pass recorded held tags it did not write: %+v", st.Held)
	}

	// The CloudMetadata resumes, its request is suspended.
	h.update(az, func() { az.Spec.Suspend = true })
	h.update(cm, func() { cm.Spec.Suspend = false })
	ready = h.waitCondition("CloudMetadata", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended, h.cmCondition("cm"))
	if !strings.Contains(ready.Message, `AzureMetadata "tags"`) {
		t.Errorf("Ready message %q does not name the suspended request", ready.Message)
	}
	h.waitCondition("CloudMetadata", v1alpha1.ConditionSuspended, metav1.ConditionFalse, v1alpha1.ReasonNotSuspended, h.cmCondition("cm"))
	h.pass("cm")
	if n := h.writes(); n != 0 {
		t.Errorf("a suspended AzureMetadata had %d tag writes made for it", n)
	}

	// The request resumes: written at once.
	h.update(az, func() { az.Spec.Suspend = false })
	h.waitCondition("AzureMetadata", v1alpha1.ConditionSuspended, metav1.ConditionFalse, v1alpha1.ReasonNotSuspended, h.azureCondition("tags"))
	h.waitReady("cm", metav1.ConditionTrue)
	if m := h.missing(ids, "env", "prod"); m != "" {
		t.Errorf("not written once resumed: %s", m)
	}
}

// TestRetainKeepsWhatADeleteWouldDelete: under deletionPolicy Retain a
// delete opcode deletes nothing; the CloudMetadata reports what it kept
// (DeletionsHeld=True Retained, status.retainedDeletions, an event).
func TestRetainKeepsWhatADeleteWouldDelete(t *testing.T) {
	h := newHarness(t)
	ids := h.disks("keep", 2, map[string]string{"env": "dev"})
	h.azureMetadata("tags", v1alpha1.OpcodeDelete, map[string]string{"env": ""})
	cm := build.CloudMetadata("cm", build.Classifiers(map[string]string{classifierOf("keep"): "owned"}),
		build.DeletionPolicy(v1alpha1.DeletionPolicyRetain), build.AzureRef("tags"))
	h.create(cm)
	c := h.waitCondition("CloudMetadata", v1alpha1.ConditionDeletionsHeld, metav1.ConditionTrue, v1alpha1.ReasonRetained, h.cmCondition("cm"))
	if !strings.Contains(c.Message, "Retain") {
		t.Errorf("DeletionsHeld message %q", c.Message)
	}
	got := h.waitReady("cm", metav1.ConditionTrue)
	if int(got.Status.RetainedDeletions) != len(ids) {
		t.Errorf("retainedDeletions = %d, want %d", got.Status.RetainedDeletions, len(ids))
	}
	if m := h.missing(ids, "env", "dev"); m != "" {
		t.Errorf("Retain deleted env from %s", m)
	}
	if n := h.writes(); n != 0 {
		t.Errorf("%d tag writes under Retain, want none", n)
	}
	h.waitEvent(v1alpha1.ReasonRetained, "cm", "env")
}

// TestMassDeletionWaitsForApproval: a delete opcode that would remove
// every tag it names from three resources (two disks and the group) is
// held, the disk that carries many other tags included (the guard counts
// the request's tags, not all of a resource's): nothing is written; the
// CloudMetadata says DeletionsHeld with the approval token and command,
// emits a Warning and counts them. Once the annotation carries the token,
// the next pass writes the held deletions, once, and the hold clears.
func TestMassDeletionWaitsForApproval(t *testing.T) {
	h := newHarness(t)
	ids := h.disks("mass", 2, map[string]string{"env": "dev", "team": "a"})
	rich := ids[0]
	h.seedTags(map[string]string{"x1": "1", "x2": "2", "x3": "3", "x4": "4"}, rich)
	h.azureMetadata("tags", v1alpha1.OpcodeDelete, map[string]string{"env": "", "team": ""})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("mass"): "owned"})

	c := h.waitCondition("CloudMetadata", v1alpha1.ConditionDeletionsHeld, metav1.ConditionTrue, v1alpha1.ReasonMassDeletion, h.cmCondition("cm"))
	cm := read(h, "cm", &v1alpha1.CloudMetadata{})
	held := cm.Status.DeletionsHeld
	if held == nil || held.Token == "" || held.Count != 6 || len(held.Resources) != 3 {
		t.Fatalf("deletionsHeld %+v, want 6 deletions on 3 resources with a token", held)
	}
	command := fmt.Sprintf("kubectl annotate cloudmetadata cm -n %s %s=%s --overwrite", h.ns, v1alpha1.ApproveDeletionsAnnotation, held.Token)
	if !strings.Contains(c.Message, command) {
		t.Errorf("DeletionsHeld message %q does not give the command %q", c.Message, command)
	}
	if r := meta.FindStatusCondition(cm.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Reason != v1alpha1.ReasonMassDeletion {
		t.Errorf("Ready = %+v, want reason %s", r, v1alpha1.ReasonMassDeletion)
	}
	h.waitEvent(v1alpha1.ReasonMassDeletion, "cm", held.Token)
	h.pass("cm")
	if m := h.missing(ids, "env", "dev") + h.missing(ids, "team", "a"); m != "" {
		t.Errorf("held deletions were written: %s", m)
	}
	if again := read(h, "cm", &v1alpha1.CloudMetadata{}).Status.DeletionsHeld; again == nil || again.Token != held.Token {
		t.Errorf("the same set held again got another hold: %+v, was %+v", again, held)
	}
	if n := testenv.Counter(t, "tagsync_metadata_deletions_held_total",
		map[string]string{"namespace": h.ns, "cloudmetadata": "cm", "reason": v1alpha1.ReasonMassDeletion}); n < 4 {
		t.Errorf("deletions_held_total = %v, want at least 4", n)
	}
	if n := h.deleteRecords("env"); n != 0 {
		t.Errorf("%d env deletions audited before approval, want none", n)
	}

	// Approval: the held deletions are written once; the hold clears.
	h.update(cm, func() { cm.Annotations = map[string]string{v1alpha1.ApproveDeletionsAnnotation: held.Token} })
	h.waitCondition("CloudMetadata", v1alpha1.ConditionDeletionsHeld, metav1.ConditionFalse, v1alpha1.ReasonNoneHeld, h.cmCondition("cm"))
	for _, id := range ids {
		if tg := h.tags(id); tg["env"] != "" || tg["team"] != "" {
			t.Errorf("%s still has %v after approval", id, tg)
		}
	}
	h.waitReady("cm", metav1.ConditionTrue)
	h.pass("cm")
	if n := h.deleteRecords("env"); n != len(ids) {
		t.Errorf("%d env deletions audited, want %d (each resource once)", n, len(ids))
	}
	if st := read(h, "cm", &v1alpha1.CloudMetadata{}).Status; st.DeletionsHeld != nil {
		t.Errorf("deletionsHeld %+v after the approved deletions were written", st.DeletionsHeld)
	}
}

// TestRemovingAnAddObjectDeletesNothing: tags an add object wrote are
// released, never deleted, when the CloudMetadata references another
// object instead and when the object is deleted.
func TestRemovingAnAddObjectDeletesNothing(t *testing.T) {
	h := newHarness(t)
	ids := h.disks("rel", 2, nil)
	h.azureMetadata("first", v1alpha1.OpcodeAdd, map[string]string{"env": "prod", "team": "a"})
	cm := h.cloudMetadata("cm", "first", "", map[string]string{classifierOf("rel"): "owned"})
	h.waitReady("cm", metav1.ConditionTrue)
	h.azureMetadata("second", v1alpha1.OpcodeAdd, map[string]string{"owner": "x"})
	h.update(cm, func() { cm.Spec.CloudProvider.AzureRef.Name = "second" })
	eventually(t, "owner=x everywhere", func() string { return h.missing(ids, "owner", "x") })
	if err := h.c.Delete(h.ctx, &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "first"}}); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(h.ctx, &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "second"}}); err != nil {
		t.Fatal(err)
	}
	h.waitCondition("CloudMetadata", v1alpha1.ConditionReady, metav1.ConditionFalse, "RefNotFound", h.cmCondition("cm"))
	h.pass("cm")
	for _, name := range []string{"env", "team", "owner"} {
		if n := h.deleteRecords(name); n != 0 {
			t.Errorf("%d deletions of %s audited", n, name)
		}
	}
	if m := h.missing(ids, "env", "prod") + h.missing(ids, "team", "a") + h.missing(ids, "owner", "x"); m != "" {
		t.Errorf("released tags were deleted from %s", m)
	}
	if c := h.az.Server.Calls().Count("Tags.DeleteAtScope"); c != 0 {
		t.Errorf("%d tag deletions sent", c)
	}
}

// TestAWSSuspendedRequestWritesNothing: on EC2 (moto), a suspended
// AWSMetadata has nothing written for it (no CreateTags) while its
// status says Suspended; unsuspended, it is written at once.
func TestAWSSuspendedRequestWritesNothing(t *testing.T) {
	moto := testenv.StartMoto(t)
	provider := awstest.Provider(t, moto)
	h := newHarness(t, provider)
	ids := awstest.RunInstances(t, moto, 3, map[string]string{awsOwned("awssusp"): "owned"})
	aw := build.AWSMetadata("tags", build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(map[string]v1alpha1.AWSTagValue{"env": "prod"}), build.Suspend())
	h.create(aw)
	h.create(build.CloudMetadata("cm", build.Classifiers(map[string]string{awsOwned("awssusp"): "owned"}), build.AWSRef("tags")))
	awsCond := func() (int64, []metav1.Condition) {
		o := h.awsStatus("tags")
		return o.Generation, o.Status.Conditions
	}
	h.waitCondition("AWSMetadata", v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspended, awsCond)
	h.waitCondition("CloudMetadata", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended, h.cmCondition("cm"))
	h.pass("cm")
	if n := provider.Calls()["ec2:CreateTags"]; n != 0 {
		t.Errorf("%d CreateTags calls for a suspended AWSMetadata", n)
	}
	if st := h.awsStatus("tags").Status; int(st.Matched) != len(ids) {
		t.Errorf("matched %d, want %d", st.Matched, len(ids))
	}
	h.update(aw, func() { aw.Spec.Suspend = false })
	h.waitReady("cm", metav1.ConditionTrue)
	for _, id := range ids {
		if v := awstest.Tags(t, moto, id)["env"]; v != "prod" {
			t.Errorf("%s has env=%q once resumed", id, v)
		}
	}
}

// approveDeletions waits until CloudMetadata name holds deletions and
// approves the held set.
func approveDeletions(t *testing.T, h *harness, name string) {
	t.Helper()
	var token string
	eventually(t, name+" holding deletions", func() string {
		cm := read(h, name, &v1alpha1.CloudMetadata{})
		if cm.Status.DeletionsHeld == nil {
			return "nothing held"
		}
		token = cm.Status.DeletionsHeld.Token
		return ""
	})
	cm := read(h, name, &v1alpha1.CloudMetadata{})
	h.update(cm, func() { cm.Annotations = map[string]string{v1alpha1.ApproveDeletionsAnnotation: token} })
}

// TestDeletionsAreCountedAcrossARestart: a delete request that reaches its
// resources one at a time (each classified later) is judged as one, even
// when the controller restarts between them (a new leader): the deletion
// the first controller wrote is kept in the status, and the second
// resource's deletion is held (2 resources are more than a quarter of the
// 2 that carried the tag within the hour).
func TestDeletionsAreCountedAcrossARestart(t *testing.T) {
	h := newHarness(t)
	ids := h.disks("spr", 2, map[string]string{"env": "dev"})
	for _, id := range ids[1:] {
		if err := h.az.Server.DeleteTags(id, classifierOf("spr")); err != nil {
			t.Fatal(err)
		}
	}
	h.indexed(ids[1:]...)
	h.azureMetadata("tags", v1alpha1.OpcodeDelete, map[string]string{"env": ""})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("spr"): "owned"})
	eventually(t, "env deleted from the one classified disk, and the deletion in the status", func() string {
		cm := read(h, "cm", &v1alpha1.CloudMetadata{})
		if got := h.tags(ids[0])["env"]; got != "" {
			return "env=" + got
		}
		if r := cm.Status.RecentWrites; r == nil || len(r.Deletions) != 1 || r.Deletions[0].Tag != "env" {
			return fmt.Sprintf("recentWrites %+v", r)
		}
		return ""
	})
	h.indexed(ids[0]) // the next pass must not see env on the first disk again
	h.stop()
	h.startController()
	h.seedTags(map[string]string{classifierOf("spr"): "owned"}, ids[1])
	h.pass("cm")
	h.waitCondition("CloudMetadata", v1alpha1.ConditionDeletionsHeld, metav1.ConditionTrue, v1alpha1.ReasonMassDeletion, h.cmCondition("cm"))
	if got := h.tags(ids[1])["env"]; got != "dev" {
		t.Errorf("the second deletion of env within the hour was written after the restart (env=%q)", got)
	}
}
