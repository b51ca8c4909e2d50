package nodetags

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/cloudtest"
	"github.com/tagsync/tagsync/internal/scheme"
	"github.com/tagsync/tagsync/internal/tags"
)

// TestProviderWithoutNodeSyncIsInvalidSpec: a NodeTagSync naming a
// configured provider that does not sync nodes (AWS, which only tags
// resources found by classifier tags) is an invalid spec: Ready says so, a
// Warning event tells it once, nothing is read or written, and it claims no
// Node. The AWS provider is the real one; it sends no request here.
func TestProviderWithoutNodeSyncIsInvalidSpec(t *testing.T) {
	ctx := context.Background()
	awsProvider, err := aws.NewProvider(ctx, aws.Config{Region: "us-east-1", Endpoint: "http://127.0.0.1:1",
		AccessKeyID: "AKIDTEST", SecretAccessKey: "test"}, aws.WithRegisterer(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	azureFake := cloudtest.New(tags.AzureRules)
	onAWS := &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "nts", UID: "u1", Generation: 1},
		Spec: v1alpha1.NodeTagSyncSpec{Provider: "aws"}}
	objs := append([]client.Object{onAWS}, unitObjects()[1:]...)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.NodeTagSync{}).Build()
	rec := events.NewFakeRecorder(10)
	u := &unit{t: t, c: c, cloud: azureFake,
		r: NewReconciler(c, cloud.Providers{"azure": azureFake, "aws": awsProvider}, rec, nil, nil)}

	u.reconcile()
	u.reconcile()
	const want = `provider "aws" does not support the node sync`
	if c := u.ready(); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidSpec || !strings.Contains(c.Message, want) {
		t.Fatalf("Ready = %+v, want InvalidSpec saying %q", c, want)
	}
	if ev := drain(rec); len(ev) != 1 || !strings.Contains(ev[0], "Warning "+ReasonInvalidSpec) || !strings.Contains(ev[0], want) {
		t.Fatalf("events = %q, want one InvalidSpec warning saying %q", ev, want)
	}
	if calls := awsProvider.Calls(); len(calls) != 0 {
		t.Fatalf("AWS calls = %v, want none", calls)
	}
	if syncs := validSyncsOf([]v1alpha1.NodeTagSync{*onAWS}, u.r.providers); len(syncs) != 0 {
		t.Fatalf("valid syncs = %d, want none: a NodeTagSync on AWS claims no Node", len(syncs))
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
