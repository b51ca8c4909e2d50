package cli

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
)

// awsFlags are the cloud flags that reach moto with static keys, the
// secret in a file as tagsync run takes it.
func awsFlags(t *testing.T, moto *testenv.Moto) []string {
	t.Helper()
	return awsFlagsWith(t, moto, testenv.MotoSecretAccessKey)
}

// awsFlagsWith is awsFlags with another secret key (moto takes any).
func awsFlagsWith(t *testing.T, moto *testenv.Moto, key string) []string {
	t.Helper()
	secret := writeFile(t, "aws-secret", key)
	return []string{"--aws-region=" + testenv.MotoRegion, "--aws-endpoint=" + moto.URL,
		"--aws-access-key-id=" + testenv.MotoAccessKeyID, "--aws-secret-access-key-file=" + secret}
}

// TestPlanAWSPredictsTheAuditRecords: on EC2 resources in moto, plan's
// writes for an AWSMetadata (update over an existing value, add, delete of
// another object's request left out) are exactly the metadata
// controller's audit records; plan called only tag:GetResources.
func TestPlanAWSPredictsTheAuditRecords(t *testing.T) {
	env, kubeconfig := kube(t)
	ns := newNamespace(t, env)
	moto := testenv.StartMoto(t)
	owned := "kubernetes.io/cluster/plan-aws"
	ids := awstest.RunInstances(t, moto, 3, map[string]string{owned: "owned"})
	ids = append(ids, awstest.RunInstances(t, moto, 1, map[string]string{owned: "owned", "env": "old", "keep": "me"})...)
	awstest.RunInstances(t, moto, 1, map[string]string{"unrelated": "owned"})
	for _, o := range []client.Object{
		&v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: ns}, Spec: v1alpha1.AWSMetadataSpec{
			Opcode: v1alpha1.OpcodeUpdate, ResourceTags: map[string]string{"env": "prod", "team": "a"}}},
		&v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Name: "plan-aws", Namespace: ns}, Spec: v1alpha1.CloudMetadataSpec{
			Classifiers: map[string]string{owned: "owned"}, CloudProvider: v1alpha1.CloudProviderRefs{AWSRef: &v1alpha1.LocalObjectRef{Name: "aws"}}}},
	} {
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}

	cmd, f := newPlanCommand()
	var built cloud.Providers
	f.providers = func(ctx context.Context, f *planFlags) (cloud.Providers, error) {
		ps, err := planProviders(ctx, f)
		built = ps
		return ps, err
	}
	out, errOut, err := runVerb(t.Context(), cmd, append([]string{"plan", "plan-aws", "--kubeconfig=" + kubeconfig, "-n", ns, "-o", "json"}, awsFlags(t, moto)...)...)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	var plan planReport
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, out)
	}
	calls := built["aws"].(*aws.Provider).Calls()
	for op, n := range calls {
		if op != "tag:GetResources" {
			t.Errorf("plan sent %d %s request(s): only tag:GetResources reads", n, op)
		}
	}
	if len(plan.CloudMetadata) != 1 || len(plan.CloudMetadata[0].Requests) != 1 || len(plan.CloudMetadata[0].Requests[0].Resources) != len(ids) {
		t.Fatalf("plan = %+v, want one request writing %d instances", plan, len(ids))
	}

	log := startAWSController(t, env, ns, moto)
	testenv.RequestPass(t, env.Client, &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plan-aws"}},
		metadata.SyncRequestAnnotation, func(o client.Object) string { return o.(*v1alpha1.CloudMetadata).Status.LastSyncRequest }, planWait)
	if got, want := auditChanges(t, log.String()), planMetadataChanges(plan); got != want {
		t.Errorf("audit records:\n%s\nplan predicted:\n%s", got, want)
	}
}

// startAWSController runs the metadata controller for ns with an AWS
// provider on moto, and returns its audit log.
func startAWSController(t *testing.T, env *testenv.Env, ns string, moto *testenv.Moto) *testenv.SyncBuffer {
	t.Helper()
	p := awstest.Provider(t, moto)
	log := &testenv.SyncBuffer{}
	mgr, err := operator.Build(t.Context(), env.Config, operator.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Providers: []cloud.Provider{p}, Controllers: []string{metadata.ControllerName}, Namespaces: []string{ns}, Audit: audit.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, mgr, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	return log
}
