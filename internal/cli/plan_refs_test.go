package cli

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestPlanAgreesWithTheControllerOnADeletedCloudMetadata: the oldest
// CloudMetadata referencing an AzureMetadata is being deleted (a finalizer
// holds it) and a newer one references the same object. plan and the
// metadata controller resolve the references with the same code, so both
// say the object is still the deleted one's, in the same words.
func TestPlanAgreesWithTheControllerOnADeletedCloudMetadata(t *testing.T) {
	e := newPlanEstate(t)
	ctx, c := t.Context(), e.kube.Client
	newer := build.CloudMetadata("newer", build.Namespace(e.ns), build.Classifiers(map[string]string{classifier: "owned"}), build.AzureRef("tags"))
	if err := c.Create(ctx, newer); err != nil {
		t.Fatal(err)
	}
	deleted := &v1alpha1.CloudMetadata{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "cluster"}, deleted); err != nil {
		t.Fatal(err)
	}
	deleted.Finalizers = append(deleted.Finalizers, "test.tagsync.io/hold")
	if err := c.Update(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, deleted); err != nil {
		t.Fatal(err)
	}

	planned := planProblems(t, e)
	if planned["cluster"] != "" {
		t.Errorf("plan: the deleted CloudMetadata still drives its AzureMetadata, yet plan says %q", planned["cluster"])
	}
	const inUse = `AzureMetadata "tags" is already applied by CloudMetadata "cluster"`
	if !strings.Contains(planned["newer"], inUse) {
		t.Errorf("plan says of the newer CloudMetadata %q, want %q", planned["newer"], inUse)
	}

	startControllers(t, e)
	testenv.RequestPass(t, c, newer, v1alpha1.SyncRequestAnnotation,
		func(o client.Object) string { return o.(*v1alpha1.CloudMetadata).Status.LastSyncRequest }, planWait)
	ready := meta.FindStatusCondition(newer.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Reason != metadata.ReasonRefInUse {
		t.Fatalf("the controller's Ready condition of the newer CloudMetadata: %+v, want reason %s", ready, metadata.ReasonRefInUse)
	}
	if want := "nothing would be written: " + ready.Message; planned["newer"] != want {
		t.Errorf("plan and the controller disagree:\nplan       %q\ncontroller %q", planned["newer"], want)
	}
}

// planProblems runs plan -o json over the estate's namespace and returns
// each CloudMetadata's problem by name ("" when it would be planned).
func planProblems(t *testing.T, e *planEstate) map[string]string {
	t.Helper()
	plan := e.planJSON(t, "-n", e.ns)
	problems := map[string]string{}
	for _, m := range plan.CloudMetadata {
		problems[m.Name] = m.Problem
	}
	return problems
}
