package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

func labelSync(mut func(*v1alpha1.LabelSyncProfileSpec)) *v1alpha1.LabelSyncProfile {
	o := &v1alpha1.LabelSyncProfile{Spec: v1alpha1.LabelSyncProfileSpec{
		HostSelector: metav1.LabelSelector{MatchLabels: map[string]string{"rack.example.com/sync": "true"}},
		Prefixes:     []string{"rack.example.com"},
	}}
	return withSpec(o, &o.Spec, mut)
}

func TestLabelSyncProfileAdmission(t *testing.T) {
	prefixes := func(p ...string) func(*v1alpha1.LabelSyncProfileSpec) {
		return func(s *v1alpha1.LabelSyncProfileSpec) { s.Prefixes = p }
	}
	resync := func(d string) func(*v1alpha1.LabelSyncProfileSpec) {
		return func(s *v1alpha1.LabelSyncProfileSpec) {
			parsed, err := time.ParseDuration(d)
			if err != nil {
				t.Fatal(err)
			}
			s.ResyncInterval = &metav1.Duration{Duration: parsed}
		}
	}
	const reserved = "is reserved: Kubernetes and the kubelet own the Node labels under kubernetes.io, k8s.io, kubelet.kubernetes.io and beta.kubernetes.io"
	const subdomain = "prefixes must be lower-case DNS subdomains such as rack.example.com"
	cases := []admissionCase{
		{"minimal", labelSync(nil), ""},
		{"all hosts", labelSync(func(s *v1alpha1.LabelSyncProfileSpec) { s.HostSelector = metav1.LabelSelector{} }), ""},
		{"several prefixes", labelSync(prefixes("my-prefix.foobar.io", "my-prefix.kubernetes.io", "zone.example", "a")), ""},
		{"other kubernetes.io subdomains", labelSync(prefixes("node-role.kubernetes.io", "topology.kubernetes.io", "team.k8s.io")), ""},
		{"no prefixes", labelSync(prefixes()), "spec.prefixes"},
		{"21 prefixes", labelSync(prefixes(strings.Split("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u", ",")...)), "must have at most 20 items"},
		{"duplicate prefix", labelSync(prefixes("rack.example.com", "rack.example.com")), "Duplicate value"},
		{"empty prefix", labelSync(prefixes("")), "spec.prefixes[0]"},
		{"prefix of 253", labelSync(prefixes(strings.Repeat("a.", 126) + "a")), ""},
		{"prefix of 254", labelSync(prefixes(strings.Repeat("a.", 126) + "ab")), "spec.prefixes[0]"},
		{"upper case", labelSync(prefixes("Rack.example.com")), `prefix "Rack.example.com": ` + subdomain},
		{"with slash", labelSync(prefixes("rack.example.com/")), `prefix "rack.example.com/": ` + subdomain},
		{"label key", labelSync(prefixes("rack.example.com/row")), subdomain},
		{"leading dot", labelSync(prefixes(".example.com")), subdomain},
		{"underscore", labelSync(prefixes("rack_1.example.com")), subdomain},
		{"selector with expressions", labelSync(func(s *v1alpha1.LabelSyncProfileSpec) {
			s.HostSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "rack.example.com/row", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}
		}), ""},
		{"resync 9s", labelSync(resync("9s")), "resyncInterval must be at least 10s"},
		{"resync 9.5s", labelSync(resync("9.5s")), "resyncInterval must be at least 10s"},
		{"resync 10s", labelSync(resync("10s")), ""},
		{"resync 1h30m", labelSync(resync("1h30m")), ""},
		{"resync 24h", labelSync(resync("24h")), ""},
		{"resync 25h", labelSync(resync("25h")), "resyncInterval must be at most 24h"},
		{"suspended", labelSync(func(s *v1alpha1.LabelSyncProfileSpec) { s.Suspend = true }), ""},
		{"deletionPolicy Retain", labelSync(func(s *v1alpha1.LabelSyncProfileSpec) { s.DeletionPolicy = v1alpha1.DeletionPolicyRetain }), ""},
		{"deletionPolicy Delete", labelSync(func(s *v1alpha1.LabelSyncProfileSpec) { s.DeletionPolicy = v1alpha1.DeletionPolicyDelete }), ""},
		{"deletionPolicy Orphan", labelSync(func(s *v1alpha1.LabelSyncProfileSpec) { s.DeletionPolicy = "Orphan" }), `spec.deletionPolicy: Unsupported value: "Orphan"`},
	}
	for _, p := range v1alpha1.ReservedLabelPrefixes {
		cases = append(cases, admissionCase{"reserved " + p, labelSync(prefixes("rack.example.com", p)), `prefix "` + p + `" ` + reserved})
	}
	run(t, cases)
}

// TestLabelSyncProfileResyncPattern: a resyncInterval that is not a Go
// duration is refused with the message that says what is expected (the
// typed client cannot send one, so it is sent unstructured).
func TestLabelSyncProfileResyncPattern(t *testing.T) {
	for _, bad := range []string{"soon", "1d", "-10s", "10"} {
		o := labelSync(nil)
		o.Name, o.Namespace = "pattern", ns
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("LabelSyncProfile"))
		if err := unstructured.SetNestedField(u.Object, bad, "spec", "resyncInterval"); err != nil {
			t.Fatal(err)
		}
		err = kube.Client.Create(context.Background(), u, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "resyncInterval must be a duration such as 30s, 5m or 1h30m") {
			t.Errorf("resyncInterval %q: got %v, want refused as not a duration", bad, err)
		}
	}
}

// TestLabelSyncProfileDefaults: a profile without resyncInterval gets 60s,
// without deletionPolicy Delete.
func TestLabelSyncProfileDefaults(t *testing.T) {
	o := labelSync(nil)
	o.Name, o.Namespace = "defaults", ns
	if err := kube.Client.Create(context.Background(), o, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if o.Spec.ResyncInterval == nil || o.Spec.ResyncInterval.Duration != v1alpha1.DefaultLabelResync {
		t.Fatalf("resyncInterval defaulted to %v, want %s", o.Spec.ResyncInterval, v1alpha1.DefaultLabelResync)
	}
	if got := o.Spec.Resync(); got != v1alpha1.DefaultLabelResync {
		t.Fatalf("Resync() = %s, want %s", got, v1alpha1.DefaultLabelResync)
	}
	if o.Spec.DeletionPolicy != v1alpha1.DeletionPolicyDelete || o.Spec.Retains() || o.Spec.Suspend {
		t.Fatalf("deletionPolicy defaulted to %q, suspend to %v; want Delete, not suspended", o.Spec.DeletionPolicy, o.Spec.Suspend)
	}
	for _, d := range []time.Duration{time.Second, 48 * time.Hour} {
		s := v1alpha1.LabelSyncProfileSpec{ResyncInterval: &metav1.Duration{Duration: d}}
		if got := s.Resync(); got != v1alpha1.DefaultLabelResync {
			t.Errorf("Resync() of %s = %s, want the default", d, got)
		}
	}
}

// TestLabelSyncProfileStatus: the status subresource takes a full status
// and refuses more than MaxHostProblems problems, an unknown wait reason and
// a problem reason that is not a CamelCase word.
func TestLabelSyncProfileStatus(t *testing.T) {
	ctx := context.Background()
	o := labelSync(nil)
	createStatusObject(ctx, t, o)
	now := metav1.Now()
	problems := make([]v1alpha1.HostProblem, v1alpha1.MaxHostProblems)
	for i := range problems {
		problems[i] = v1alpha1.HostProblem{Host: "host-" + itoa(i), Cluster: "metal/alpha", Node: "node-" + itoa(i),
			Reason: "NodeWriteFailed", Message: "patching node: forbidden"}
	}
	o.Status = v1alpha1.LabelSyncProfileStatus{
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "ClusterUnreachable",
			Message: "1 workload cluster could not be reached", LastTransitionTime: now}},
		ObservedGeneration: o.Generation,
		HostsMatched:       30, NodesInSync: 4, HostsPaused: 1, HostsWaiting: 5,
		Waiting: []v1alpha1.WaitingHosts{
			{Reason: v1alpha1.WaitNoConsumer, Count: 2, Hosts: []string{"host-a", "host-b"}},
			{Reason: v1alpha1.WaitClusterUnreachable, Count: 3, Hosts: []string{"host-c", "host-d", "host-e"}},
		},
		Problems: problems, MoreProblems: 3,
		LastSyncTime: &now, LastSyncRequest: "1",
	}
	if err := kube.Client.Status().Update(ctx, o); err != nil {
		t.Fatalf("a full status: %v", err)
	}
	tooMany := o.DeepCopy()
	tooMany.Status.Problems = append(tooMany.Status.Problems, problems[0])
	statusRefused(ctx, t, tooMany, "must have at most 20 items", "MaxHostProblems+1 problems")
	badWait := o.DeepCopy()
	badWait.Status.Waiting[0].Reason = "Sleeping"
	statusRefused(ctx, t, badWait, "status.waiting[0].reason", "an unknown wait reason")
	badReason := o.DeepCopy()
	badReason.Status.Problems[0].Reason = "node write failed"
	statusRefused(ctx, t, badReason, "status.problems[0].reason", "a reason with spaces")
}

// TestLabelSyncProfileSample: config/samples/tagsync_v1alpha1_labelsyncprofile.yaml
// is accepted as it is.
func TestLabelSyncProfileSample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(kube.RootDir, "config", "samples", "tagsync_v1alpha1_labelsyncprofile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p v1alpha1.LabelSyncProfile
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.Kind != "LabelSyncProfile" || len(p.Spec.Prefixes) == 0 {
		t.Fatalf("the sample is %+v", p)
	}
	p.Namespace = ns
	if err := kube.Client.Create(context.Background(), &p, client.DryRunAll); err != nil {
		t.Fatalf("the sample: %v", err)
	}
}
