package cli

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestPlanShowsContestsAndHoldsAsTheControllerRuns: plan predicts a
// metadata pass with the controller's own stages. On the estate of
// TestPlanPredictsWhatTheControllersWrite, a CloudMetadata of another
// namespace wants another cost-center on the same resources (a contest:
// neither writes it), and a third deletes the classifier tag from every
// resource (a mass deletion the guard holds). plan shows the contest on
// both sides and the hold, leaves the contested and held tags out of its
// writes, and the controllers then write exactly what it showed.
func TestPlanShowsContestsAndHoldsAsTheControllerRuns(t *testing.T) {
	e := newPlanEstate(t)
	ctx := t.Context()
	c := e.kube.Client
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		build.AzureMetadata("rival", build.Namespace("team-b"), build.Opcode(v1alpha1.OpcodeAdd), build.Subscriptions(planSub),
			build.ResourceTags(map[string]string{"cost-center": "eng-7"})),
		build.CloudMetadata("rival", build.Namespace("team-b"), build.Classifiers(map[string]string{classifier: "owned"}), build.AzureRef("rival")),
		build.AzureMetadata("cleanup", build.Namespace(e.ns), build.Opcode(v1alpha1.OpcodeDelete), build.Subscriptions(planSub),
			build.ResourceTags(map[string]string{classifier: "owned"})),
		build.CloudMetadata("cleanup", build.Namespace(e.ns), build.Classifiers(map[string]string{classifier: "owned"}), build.AzureRef("cleanup")),
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	plan := e.planJSON(t, "-A")
	byName := map[string]metadataPlan{}
	for _, m := range plan.CloudMetadata {
		byName[m.Namespace+"/"+m.Name] = m
	}
	for _, side := range []struct{ cm, other string }{{e.ns + "/cluster", "AzureMetadata team-b/rival"}, {"team-b/rival", "AzureMetadata " + e.ns + "/tags"}} {
		m := byName[side.cm]
		if len(m.Requests) != 1 || len(m.Requests[0].Contests) != 1 {
			t.Fatalf("%s: plan shows no contest: %+v", side.cm, m)
		}
		ct := m.Requests[0].Contests[0]
		if !strings.HasPrefix(ct.Other, side.other) || !slices.Equal(ct.Names, []string{"cost-center"}) || ct.Resources != 4 {
			t.Errorf("%s: contest %+v, want %s on cost-center on the 4 classified resources", side.cm, ct, side.other)
		}
		for _, res := range m.Requests[0].Resources {
			for _, ch := range res.Changes {
				if ch.Name == "cost-center" {
					t.Errorf("%s: plan writes the contested cost-center on %s", side.cm, res.ID)
				}
			}
		}
	}
	cleanup := byName[e.ns+"/cleanup"]
	if cleanup.Held == nil || cleanup.Held.Count != 4 {
		t.Fatalf("plan does not hold the classifier's deletion from 4 resources: %+v", cleanup)
	}
	for _, res := range cleanup.Requests[0].Resources {
		if len(res.Changes) > 0 {
			t.Errorf("plan writes %+v on %s, whose deletion the guard holds", res.Changes, res.ID)
		}
	}
	text, _, _ := runPlanCLI(ctx, append(e.azureFlags(t), "--kubeconfig="+e.kubeconfig, "-A")...)
	for _, want := range []string{"! AzureMetadata team-b/rival (CloudMetadata rival) wants other values for cost-center on 4 resource(s)",
		"! 4 tag deletion(s) would be held for approval"} {
		if !strings.Contains(text, want) {
			t.Errorf("plan's text does not say %q:\n%s", want, text)
		}
	}

	auditLog := startControllers(t, e)
	served := func(o client.Object) string { return o.(*v1alpha1.CloudMetadata).Status.LastSyncRequest }
	for _, key := range []client.ObjectKey{{Namespace: e.ns, Name: "cluster"}, {Namespace: "team-b", Name: "rival"}, {Namespace: e.ns, Name: "cleanup"}} {
		testenv.RequestPass(t, c, &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
			v1alpha1.SyncRequestAnnotation, served, planWait)
	}
	if got, want := auditChanges(t, auditLog.String()), planMetadataChanges(plan); got != want {
		t.Errorf("audit records:\n%s\nplan predicted:\n%s", got, want)
	}
	var az v1alpha1.AzureMetadata
	if err := c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "tags"}, &az); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(az.Status.Conditions, v1alpha1.ConditionConflict) {
		t.Errorf("the controller reports no conflict on AzureMetadata tags: %+v", az.Status.Conditions)
	}
	var cm v1alpha1.CloudMetadata
	if err := c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "cleanup"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Status.DeletionsHeld == nil || cm.Status.DeletionsHeld.Count != cleanup.Held.Count {
		t.Errorf("the controller holds %+v, plan showed %d deletions held", cm.Status.DeletionsHeld, cleanup.Held.Count)
	}
}
