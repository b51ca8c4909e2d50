package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
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
		build.AWSMetadata("aws", build.Namespace(ns), build.Opcode(v1alpha1.OpcodeUpdate),
			build.ResourceTags(map[string]string{"env": "prod", "team": "a"})),
		build.CloudMetadata("plan-aws", build.Namespace(ns), build.Classifiers(map[string]string{owned: "owned"}), build.AWSRef("aws")),
	} {
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}

	plan, calls := planOnMoto(t, moto, "plan-aws", "--kubeconfig="+kubeconfig, "-n", ns)
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
		v1alpha1.SyncRequestAnnotation, func(o client.Object) string { return o.(*v1alpha1.CloudMetadata).Status.LastSyncRequest }, planWait)
	if got, want := auditChanges(t, log.String()), planMetadataChanges(plan); got != want {
		t.Errorf("audit records:\n%s\nplan predicted:\n%s", got, want)
	}
}

// planOnMoto runs `tagsync plan -o json` with args and the cloud flags
// that reach moto; it returns the plan and the AWS provider's requests by
// operation.
func planOnMoto(t *testing.T, moto *testenv.Moto, args ...string) (planReport, map[string]int) {
	t.Helper()
	cmd, f := newPlanCommand()
	var built cloud.Providers
	f.providers = func(ctx context.Context, f *planFlags) (cloud.Providers, error) {
		ps, err := planProviders(ctx, f)
		built = ps
		return ps, err
	}
	out, errOut, err := runVerb(t.Context(), cmd, append(append([]string{"plan", "-o", "json"}, args...), awsFlags(t, moto)...)...)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	plan := parsePlan(t, out)
	return plan, built["aws"].(*aws.Provider).Calls()
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

// TestPlanAWSNodeTagSync: for a NodeTagSync on AWS (moto: an Auto Scaling
// group of two instances, an instance in no group whose Node carries a
// label for the cloud), plan predicts exactly the labels and tags the
// nodetags controller then writes, having sent only Describe reads and
// written nothing to the cluster.
func TestPlanAWSNodeTagSync(t *testing.T) {
	env := testenv.Start(t) // its own API server: Nodes are cluster-scoped
	kubeconfig := writeFile(t, "kubeconfig", string(env.KubeConfig))
	moto := testenv.StartMoto(t)
	_, group := seed.Group(t, moto.Config, testenv.MotoRegion, "pool1", 2, map[string]string{"env": "prod"})
	solo := awstest.RunInstances(t, moto, 1, map[string]string{"owner": "ops"})
	seed.SetInstanceTags(t, moto.Config, testenv.MotoRegion, group[1], nil, "env") // drifted from its group
	node := func(name, id string, labels map[string]string) *corev1.Node {
		return build.Node(name, build.Labels(labels), build.ProviderID(seed.ProviderID(testenv.MotoRegion, id)))
	}
	for _, o := range []client.Object{
		node("pool1-0", group[0], nil), node("pool1-1", group[1], nil),
		node("solo-0", solo[0], map[string]string{"aws.tags/team": "a"}),
		build.NodeTagSync("default", build.Provider(v1alpha1.ProviderAWS)),
	} {
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	versionsBefore := clusterVersions(t, env.Client)

	plan, calls := planOnMoto(t, moto, "--kubeconfig="+kubeconfig)
	for op, n := range calls {
		if _, name, _ := strings.Cut(op, ":"); !strings.HasPrefix(name, "Describe") {
			t.Errorf("plan sent %d %s request(s): not a read", n, op)
		}
	}
	if after := clusterVersions(t, env.Client); !equalMaps(versionsBefore, after) {
		t.Fatalf("plan wrote to the cluster:\nbefore %v\nafter  %v", versionsBefore, after)
	}
	want := map[string]map[string]string{
		"pool1-0": {"aws.tags/env": "prod"}, "pool1-1": {"aws.tags/env": "prod"},
		"solo-0": {"aws.tags/owner": "ops", "aws.tags/team": "a"},
	}
	if len(plan.NodeTagSyncs) != 1 {
		t.Fatalf("plan covers %d NodeTagSyncs, want 1: %+v", len(plan.NodeTagSyncs), plan)
	}
	sp := plan.NodeTagSyncs[0]
	predicted := map[string]map[string]string{"pool1-0": {}, "pool1-1": {}, "solo-0": {"aws.tags/team": "a"}}
	for _, nd := range sp.Nodes {
		predicted[nd.Name] = applyChanges(tags.CaseSensitive, predicted[nd.Name], nd.Labels)
	}
	if fmt.Sprint(predicted) != fmt.Sprint(want) {
		t.Errorf("plan predicts the labels %v, want %v", predicted, want)
	}
	writes := map[string]string{}
	for _, r := range sp.Resources {
		writes[r.ID[strings.LastIndex(r.ID, "/")+1:]] = fmt.Sprint(applyChanges(tags.CaseSensitive, tags.Set{}, r.Changes))
	}
	if want := map[string]string{solo[0]: "map[team:a]", group[1]: "map[env:prod]"}; !equalMaps(writes, want) {
		t.Errorf("plan's cloud writes %+v, want team=a on %s and its group's env=prod back on %s", sp.Resources, solo[0], group[1])
	}

	startAWSNodeSync(t, env, moto)
	testenv.RequestPass(t, env.Client, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, v1alpha1.SyncRequestAnnotation,
		func(o client.Object) string { return o.(*v1alpha1.NodeTagSync).Status.LastSyncRequest }, planWait)
	if got := awsLabels(t, env.Client); fmt.Sprint(got) != fmt.Sprint(predicted) {
		t.Errorf("labels after the pass %v, plan predicted %v", got, predicted)
	}
	if got := seed.InstanceTags(t, moto.Config, testenv.MotoRegion, solo[0])["team"]; got != "a" {
		t.Errorf("team tag on %s after the pass %q, plan predicted a", solo[0], got)
	}
	if got := seed.InstanceTags(t, moto.Config, testenv.MotoRegion, group[1])["env"]; got != "prod" {
		t.Errorf("env tag on %s after the pass %q, plan predicted prod", group[1], got)
	}
}

// startAWSNodeSync runs the nodetags controller with an AWS provider on moto.
func startAWSNodeSync(t *testing.T, env *testenv.Env, moto *testenv.Moto) {
	t.Helper()
	mgr, err := operator.Build(t.Context(), env.Config, operator.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Providers: []cloud.Provider{awstest.Provider(t, moto)}, Controllers: []string{nodetags.ControllerName}})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, mgr, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
}

// awsLabels are the Nodes' aws.tags/ labels, by Node.
func awsLabels(t *testing.T, c client.Client) map[string]map[string]string {
	t.Helper()
	var list corev1.NodeList
	if err := c.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, n := range list.Items {
		out[n.Name] = map[string]string{}
		for k, v := range n.Labels {
			if strings.HasPrefix(k, "aws.tags/") {
				out[n.Name][k] = v
			}
		}
	}
	return out
}
