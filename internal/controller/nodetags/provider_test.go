package nodetags

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/cloud/cloudtest"
	"github.com/tagsync/tagsync/internal/scheme"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// classifiedOnly is a provider that tags resources found by classifier
// tags and does not sync nodes.
type classifiedOnly struct{ cloud.ClassifiedProvider }

// TestProviderWithoutNodeSyncIsInvalidSpec: a NodeTagSync naming a
// configured provider that does not sync nodes is an invalid spec: Ready
// says so, a Warning event tells it once, nothing is read or written, and it
// claims no Node.
func TestProviderWithoutNodeSyncIsInvalidSpec(t *testing.T) {
	classified := cloudtest.New(aws.TagRules)
	azureFake := cloudtest.New(azure.TagRules)
	onAWS := build.NodeTagSync("nts", build.UID("u1"), build.Generation(1), build.Provider(v1alpha1.ProviderAWS))
	objs := append([]client.Object{onAWS}, unitObjects()[1:]...)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.NodeTagSync{}).Build()
	rec := events.NewFakeRecorder(10)
	u := &unit{t: t, c: c, cloud: azureFake,
		r: NewReconciler(c, cloud.Providers{"azure": azureFake, "aws": classifiedOnly{classified}}, rec, nil, nil)}

	u.reconcile()
	u.reconcile()
	const want = `provider "aws" does not support the node sync`
	if c := u.ready(); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidSpec || !strings.Contains(c.Message, want) {
		t.Fatalf("Ready = %+v, want InvalidSpec saying %q", c, want)
	}
	if ev := drain(rec); len(ev) != 1 || !strings.Contains(ev[0], "Warning "+ReasonInvalidSpec) || !strings.Contains(ev[0], want) {
		t.Fatalf("events = %q, want one InvalidSpec warning saying %q", ev, want)
	}
	if calls := classified.Calls(); len(calls) != 0 {
		t.Fatalf("calls = %v, want none", calls)
	}
	if syncs := validSyncsOf([]v1alpha1.NodeTagSync{*onAWS}, u.r.providers); len(syncs) != 0 {
		t.Fatalf("valid syncs = %d, want none: it claims no Node", len(syncs))
	}
}

// TestConfigForAWS: the real AWS provider syncs nodes: a NodeTagSync on AWS
// gets it with AWS's tag rules and, omitting labelPrefix, the aws.tags
// prefix; one on Azure (or naming no provider) omitting it keeps
// azure.tags; a prefix given wins on both. Building the config sends no
// request.
func TestConfigForAWS(t *testing.T) {
	awsProvider, err := aws.NewProvider(context.Background(), aws.Config{Region: "us-east-1", Endpoint: "http://127.0.0.1:1",
		AccessKeyID: "AKIDTEST", SecretAccessKey: "test"}, aws.WithRegisterer(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	providers := cloud.Providers{"azure": cloudtest.New(azure.TagRules), "aws": awsProvider}
	for _, tc := range []struct {
		spec       v1alpha1.NodeTagSyncSpec
		prefix     string
		caseInsens bool
	}{
		{v1alpha1.NodeTagSyncSpec{Provider: v1alpha1.ProviderAWS}, "aws.tags", false},
		{v1alpha1.NodeTagSyncSpec{Provider: v1alpha1.ProviderAWS, LabelPrefix: ptr.To("ec2.example.com")}, "ec2.example.com", false},
		{v1alpha1.NodeTagSyncSpec{Provider: v1alpha1.ProviderAWS, LabelPrefix: ptr.To("")}, "", false},
		{v1alpha1.NodeTagSyncSpec{Provider: v1alpha1.ProviderAzure}, "azure.tags", true},
		{v1alpha1.NodeTagSyncSpec{}, "azure.tags", true},
	} {
		cfg, err := configFor(&v1alpha1.NodeTagSync{Spec: tc.spec}, providers)
		if err != nil {
			t.Fatalf("configFor(%+v): %v", tc.spec, err)
		}
		if cfg.codec.Prefix != tc.prefix || cfg.rules.CaseInsensitive != tc.caseInsens {
			t.Errorf("configFor(provider %q) = prefix %q, case-insensitive %v; want %q, %v",
				tc.spec.Provider, cfg.codec.Prefix, cfg.rules.CaseInsensitive, tc.prefix, tc.caseInsens)
		}
	}
	if calls := awsProvider.Calls(); len(calls) != 0 {
		t.Fatalf("AWS calls = %v, want none", calls)
	}
}

// drain returns the events rec has recorded so far.
func drain(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
