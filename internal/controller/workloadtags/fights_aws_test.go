package workloadtags_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/cloudchange"
	sqssource "github.com/tagsync/tagsync/internal/cloudchange/sqs"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
)

// lbcRole is the AWS Load Balancer Controller's role in the tests.
const lbcRole = "aws-load-balancer-controller"

// TestAWSAStripperIsStoppedAndNamed: the AWS Load Balancer Controller
// (the fidelity layer's stripper) removes every tag it does not own from
// its load balancer as soon as another writer adds one. The events AWS
// sends of both sides' writes (tag changes and CloudTrail calls, some
// duplicated, delayed and out of order) reach tagsync through an SQS
// queue and its SQS source. The policy writes its key, puts it back 3
// times, then stops: 4 TagResources, Conflict Fighting naming the
// controller's role from its CloudTrail event, and the controller's 4
// removals.
func TestAWSAStripperIsStoppedAndNamed(t *testing.T) {
	moto, h, calls := awsEventsHarness(t, 3, func(*testenv.Moto) {})
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	h.service(shop, "web", nil)
	owned := map[string]string{aws.ServiceStackTag: shop + "/web", "elbv2.k8s.aws/cluster": "c1"}
	lb := awstest.LoadBalancers(t, moto, 1, owned)[0]
	moto.Rules.SetIdentity("lbc", testenv.RoleIdentity(lbcRole))
	strips := moto.Rules.AddStripper(testenv.AWSStripper{Resources: []string{lb}, Keep: []string{aws.ServiceStackTag, "elbv2.k8s.aws/cluster"}, AccessKey: "lbc"})

	p, c := h.awsServiceFight(testenv.RoleIdentity(lbcRole).ARN)
	if !strings.Contains(c.Message, "cost-center") {
		t.Errorf("Conflict %q, want the fight over cost-center naming %s", c.Message, testenv.RoleIdentity(lbcRole).ARN)
	}
	h.pass(p)
	if n := calls()["tag:TagResources"]; n != 4 {
		t.Errorf("%d TagResources, want 4 (the write and 3 put-backs)", n)
	}
	if n := strips(); n != 4 {
		t.Errorf("the controller removed the key %d times, want 4", n)
	}
	events, dups, _ := moto.Rules.EventsDelivered()
	t.Logf("4 writes before the stop; %d events delivered, %d of them duplicates", events, dups)
}

// TestAWSAValueWriterIsStoppedAndNamed: another writer that owns a key's
// value (a pipeline's role, the fidelity layer's writer of values) writes
// its own value back after every write of the policy. Its CloudTrail calls
// come after the tag changes they made; tagsync's own calls are in the
// same stream, under its own role. The policy puts its value back 3 times,
// then stops: Conflict Fighting names the pipeline's role, never tagsync's
// own (the SQS source learns it from STS and keeps none of its calls).
func TestAWSAValueWriterIsStoppedAndNamed(t *testing.T) {
	moto, h, calls := awsEventsHarness(t, 5, func(m *testenv.Moto) {
		m.Rules.SetIdentity(testenv.MotoAccessKeyID, testenv.RoleIdentity("tagsync"))
	})
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	h.service(shop, "web", nil)
	lb := awstest.LoadBalancers(t, moto, 1, map[string]string{aws.ServiceStackTag: shop + "/web", "elbv2.k8s.aws/cluster": "c1"})[0]
	pipeline := testenv.RoleIdentity("terraform")
	moto.Rules.SetIdentity("pipeline", pipeline)
	writes := moto.Rules.AddStripper(testenv.AWSStripper{Resources: []string{lb}, AccessKey: "pipeline", Set: map[string]string{"cost-center": "cc-legacy"}})

	p, c := h.awsServiceFight(pipeline.ARN)
	if !strings.Contains(c.Message, "cost-center") || strings.Contains(c.Message, "assumed-role/tagsync/") {
		t.Errorf("Conflict %q, want the fight over cost-center naming only %s", c.Message, pipeline.ARN)
	}
	h.pass(p)
	if n := calls()["tag:TagResources"]; n != 4 {
		t.Errorf("%d TagResources, want 4 (the write and 3 put-backs)", n)
	}
	if n := writes(); n != 4 {
		t.Errorf("the pipeline wrote its value %d times, want 4", n)
	}
	if g := awstest.Tags(t, moto, lb); g["cost-center"] != "cc-legacy" {
		t.Errorf("the load balancer carries %v: the policy wrote after it stopped", g)
	}
}

// awsServiceFight creates an AWS policy writing cost-center on the test's
// Services and waits until its Conflict is Fighting naming writer; it
// returns the policy and the condition.
func (h *harness) awsServiceFight(writer string) (*v1alpha1.WorkloadTagPolicy, *metav1.Condition) {
	h.t.Helper()
	p := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-costs"},
		Spec: v1alpha1.WorkloadTagPolicySpec{Provider: v1alpha1.ProviderAWS, Resources: []v1alpha1.WorkloadResource{v1alpha1.WorkloadService},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tagsync-test": h.run}},
			Tags:              []v1alpha1.WorkloadTag{tag("cost-center", "${namespace.labels['cost-center']}")}}}
	if err := h.c.Create(h.ctx, p); err != nil {
		h.t.Fatal(err)
	}
	var c *metav1.Condition
	testenv.Eventually(h.t, waitFor, "the fight reported naming "+writer, func() string {
		var got v1alpha1.WorkloadTagPolicy
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: p.Name}, &got); err != nil {
			return err.Error()
		}
		if c = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionConflict); c == nil || c.Reason != workloadtags.ReasonFighting ||
			!strings.Contains(c.Message, writer) {
			return fmt.Sprintf("Conflict %+v", c)
		}
		return ""
	})
	return p, c
}

// awsEventsHarness starts moto with its tag writes' events delivered to an
// SQS queue as AWS may deliver them (30% twice, each up to 0.5 s late,
// CloudTrail's 0.2 s later still; seed draws them), runs ready on it, then
// starts the controller with its changes from that queue through the SQS
// source. It returns moto, the harness and the provider's calls so far.
func awsEventsHarness(t *testing.T, seed uint64, ready func(*testenv.Moto)) (*testenv.Moto, *harness, func() map[string]int) {
	t.Helper()
	moto := testenv.StartMoto(t)
	moto.Rules.SetTaggingIndexDelay(0)
	queue := sqsQueue(t, moto, "events")
	t.Cleanup(moto.Rules.DeliverEvents(testenv.EventDelivery{QueueURL: queue, Duplicates: 0.3,
		MaxDelay: 500 * time.Millisecond, CallDelay: 200 * time.Millisecond, Seed: seed}))
	ready(moto)
	var provider *aws.Provider
	h := newHarness(t, func(*harness) cloud.Provider { provider = awstest.Provider(t, moto); return provider }, sqsEventsOn(t, moto, queue))
	return moto, h, func() map[string]int { return provider.Calls() }
}

// sqsQueue creates an SQS queue on moto and returns its URL.
func sqsQueue(t *testing.T, moto *testenv.Moto, name string) string {
	t.Helper()
	out, err := sqs.NewFromConfig(moto.Config).CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: &name})
	if err != nil {
		t.Fatal(err)
	}
	return *out.QueueUrl
}

// sqsEventsOn is the manager option of a hub that polls only every 2
// hours and takes its changes from the SQS queue, through tagsync's SQS
// source, with a removal waiting up to 10 s for its CloudTrail call.
func sqsEventsOn(t *testing.T, moto *testenv.Moto, queue string) func(*operator.Options) {
	hub := cloudchange.NewHub(cloudchange.HubOptions{ResyncInterval: 2 * time.Hour, HealthEvery: 20 * time.Millisecond})
	src := func(sink cloudchange.Sink) (cloudchange.Source, error) {
		return sqssource.New(sqssource.Config{QueueURL: queue, WaitTime: time.Second, AttributionWait: 10 * time.Second,
			AWS: aws.Config{Region: testenv.MotoRegion, Endpoint: moto.URL, AccessKeyID: testenv.MotoAccessKeyID, SecretAccessKey: testenv.MotoSecretAccessKey}},
			sink, sqssource.WithRegisterer(prometheus.NewRegistry()), sqssource.WithLogger(testr.New(t)))
	}
	return func(o *operator.Options) {
		o.Events = operator.EventsOptions{Hub: hub, Sources: []operator.EventSource{src}}
	}
}
