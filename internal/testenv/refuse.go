package testenv

import (
	"context"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Refusal is what RefuseUpdates makes the API server refuse: updates of
// Resources in group APIGroup for which Allow (CEL over object) is false,
// within the namespaces Namespaces selects (nil: every object, cluster
// scoped ones included).
type Refusal struct {
	APIGroup, Resource string
	Allow              string
	Namespaces         *metav1.LabelSelector
}

// RefuseUpdates makes the API server of c refuse the updates r names, with
// a ValidatingAdmissionPolicy and its binding called name, waits until
// probe (an update r refuses) fails, and returns the function that lets
// them through again and waits until probe succeeds (also run at
// cleanup).
func RefuseUpdates(ctx context.Context, t testing.TB, c client.Client, name string, r Refusal, probe func() error, within time.Duration) func() {
	t.Helper()
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{r.APIGroup}, APIVersions: []string{"*"}, Resources: []string{r.Resource}}}}}},
			Validations: []admissionv1.Validation{{Expression: r.Allow, Message: "refused by the test"}},
		}}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}}}
	if r.Namespaces != nil {
		binding.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: r.Namespaces}
	}
	for _, o := range []client.Object{policy, binding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	Eventually(t, within, "the API server refusing "+r.Resource+" updates ("+name+")", func() string {
		if err := probe(); err == nil {
			return "an update was let through"
		}
		return ""
	})
	var once sync.Once
	let := func() {
		once.Do(func() {
			for _, o := range []client.Object{binding, policy} {
				if err := c.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
					t.Error(err)
				}
			}
			Eventually(t, within, "the API server letting "+r.Resource+" updates through ("+name+")", func() string {
				if err := probe(); err != nil {
					return err.Error()
				}
				return ""
			})
		})
	}
	t.Cleanup(let)
	return let
}
