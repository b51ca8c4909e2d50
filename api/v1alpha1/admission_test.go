package v1alpha1_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv"
)

// kube is the control plane every test of this package shares.
var kube *testenv.Env

// ns is the namespace the tests create their objects in.
const ns = "admission"

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, func(env *testenv.Env) {
		kube = env
		err := kube.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil {
			panic(err)
		}
	}))
}

// admissionCase is an object and what the API server should say to it:
// want "" means accepted, otherwise a fragment of the refusal.
type admissionCase struct {
	name string
	obj  client.Object
	want string
}

// run creates each case's object (dry run: nothing is stored) and checks the
// API server accepts it or refuses it as invalid with the expected message.
func run(t *testing.T, cases []admissionCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := c.obj.DeepCopyObject().(client.Object)
			obj.SetNamespace(ns)
			if obj.GetName() == "" {
				obj.SetName("x")
			}
			err := kube.Client.Create(context.Background(), obj, client.DryRunAll)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused, want accepted: %v", err)
			case c.want == "":
			case err == nil:
				t.Fatalf("accepted, want refused with %q", c.want)
			case !apierrors.IsInvalid(err):
				t.Fatalf("refused with %v, want Invalid with %q", err, c.want)
			case !strings.Contains(err.Error(), c.want):
				t.Fatalf("refused with %q, want it to say %q", err, c.want)
			default:
				t.Logf("refused: %v", err)
			}
		})
	}
}

func cloudMeta(mut func(*v1alpha1.CloudMetadataSpec)) *v1alpha1.CloudMetadata {
	o := &v1alpha1.CloudMetadata{Spec: v1alpha1.CloudMetadataSpec{
		Classifiers: map[string]string{"kubernetes.io_cluster.demo-7lpkm": "owned"},
	}}
	return withSpec(o, &o.Spec, mut)
}

func azureMeta(mut func(*v1alpha1.AzureMetadataSpec)) *v1alpha1.AzureMetadata {
	o := &v1alpha1.AzureMetadata{Spec: v1alpha1.AzureMetadataSpec{
		Opcode:       v1alpha1.OpcodeUpdate,
		ResourceTags: map[string]string{"env": "prod", "cost-center": "eng-42"},
	}}
	return withSpec(o, &o.Spec, mut)
}

func awsMeta(mut func(*v1alpha1.AWSMetadataSpec)) *v1alpha1.AWSMetadata {
	o := &v1alpha1.AWSMetadata{Spec: v1alpha1.AWSMetadataSpec{
		Opcode:       v1alpha1.OpcodeUpdate,
		ResourceTags: map[string]string{"env": "prod", "cost-center": "eng-42"},
	}}
	return withSpec(o, &o.Spec, mut)
}

// withSpec applies mut, when given, to spec (o's) and returns o.
func withSpec[O, S any](o O, spec *S, mut func(*S)) O {
	if mut != nil {
		mut(spec)
	}
	return o
}

// createStatusObject creates o in ns as "status", deleted when the test
// ends.
func createStatusObject(ctx context.Context, t *testing.T, o client.Object) {
	t.Helper()
	o.SetName("status")
	o.SetNamespace(ns)
	if err := kube.Client.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Client.Delete(context.Background(), o) })
}

// statusRefused fails t unless the API server refuses o's status (a dry
// run) with an error naming want; what describes o's status.
func statusRefused(ctx context.Context, t *testing.T, o client.Object, want, what string) {
	t.Helper()
	if err := kube.Client.Status().Update(ctx, o, client.DryRunAll); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: got %v, want refused", what, err)
	}
}

// tags returns n tags named t0, t1, ...
func tags(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m["t"+itoa(i)] = "v"
	}
	return m
}

// names returns n tag names k0, k1, ...
func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "k" + itoa(i)
	}
	return out
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + itoa(i%10)
}

func TestCloudMetadataAdmission(t *testing.T) {
	classifiers := func(m map[string]string) func(*v1alpha1.CloudMetadataSpec) {
		return func(s *v1alpha1.CloudMetadataSpec) { s.Classifiers = m }
	}
	syncEvery := func(d string) func(*v1alpha1.CloudMetadataSpec) {
		return func(s *v1alpha1.CloudMetadataSpec) { s.ControllerConfig.SyncEvery = d }
	}
	run(t, []admissionCase{
		{"minimal", cloudMeta(nil), ""},
		{"no classifiers", cloudMeta(classifiers(nil)), "spec.classifiers: Required value"},
		{"empty classifiers", cloudMeta(classifiers(map[string]string{})), "should have at least 1 properties"},
		{"10 classifiers", cloudMeta(classifiers(tags(10))), ""},
		{"11 classifiers", cloudMeta(classifiers(tags(11))), "spec.classifiers: Too many: 11: must have at most 10 items"},
		{"wildcard name", cloudMeta(classifiers(map[string]string{"kubernetes.io_cluster.*": "owned"})), "classifiers match a tag name and value exactly: wildcards such as * are not supported"},
		{"wildcard value", cloudMeta(classifiers(map[string]string{"env": "prod*"})), "wildcards such as * are not supported"},
		{"empty name", cloudMeta(classifiers(map[string]string{"": "owned"})), "classifier tag names must be 1 to 512 characters long"},
		{"name of 512", cloudMeta(classifiers(map[string]string{strings.Repeat("n", 512): "owned"})), ""},
		{"name of 513", cloudMeta(classifiers(map[string]string{strings.Repeat("n", 513): "owned"})), "classifier tag names must be 1 to 512 characters long"},
		{"value of 256", cloudMeta(classifiers(map[string]string{"env": strings.Repeat("v", 256)})), ""},
		{"value of 257", cloudMeta(classifiers(map[string]string{"env": strings.Repeat("v", 257)})), "classifier tag values must be at most 256 characters long"},
		{"empty value", cloudMeta(classifiers(map[string]string{"env": ""})), ""},
		{"syncEvery soon", cloudMeta(syncEvery("soon")), "syncEvery must be a duration such as 90s, 10m or 1h30m"},
		{"syncEvery 30s", cloudMeta(syncEvery("30s")), "syncEvery must be at least 1m"},
		{"syncEvery 59.9s", cloudMeta(syncEvery("59.9s")), "syncEvery must be at least 1m"},
		{"syncEvery 1m", cloudMeta(syncEvery("1m")), ""},
		{"syncEvery 1h30m", cloudMeta(syncEvery("1h30m")), ""},
		{"syncEvery 24h", cloudMeta(syncEvery("24h")), ""},
		{"syncEvery 25h", cloudMeta(syncEvery("25h")), "syncEvery must be at most 24h"},
		{"strict", cloudMeta(func(s *v1alpha1.CloudMetadataSpec) { s.ControllerConfig.Limit = v1alpha1.LimitStrict }), ""},
		{"bad limit", cloudMeta(func(s *v1alpha1.CloudMetadataSpec) { s.ControllerConfig.Limit = "POLICY_APPLY_ALL" }),
			`supported values: "POLICY_APPLY_PARTIAL", "POLICY_APPLY_STRICT"`},
		{"both refs", cloudMeta(func(s *v1alpha1.CloudMetadataSpec) {
			s.CloudProvider.AzureRef = &v1alpha1.LocalObjectRef{Name: "demo-azure"}
			s.CloudProvider.AWSRef = &v1alpha1.LocalObjectRef{Name: "demo.aws"}
		}), ""},
		{"bad ref name", cloudMeta(func(s *v1alpha1.CloudMetadataSpec) {
			s.CloudProvider.AzureRef = &v1alpha1.LocalObjectRef{Name: "Demo_Azure"}
		}), "name must be an object name"},
		{"empty ref name", cloudMeta(func(s *v1alpha1.CloudMetadataSpec) {
			s.CloudProvider.AWSRef = &v1alpha1.LocalObjectRef{}
		}), "spec.cloudProvider.awsRef.name"},
		{"suspended, upsert-only", cloudMeta(func(s *v1alpha1.CloudMetadataSpec) {
			s.Suspend, s.DeletionPolicy = true, v1alpha1.DeletionPolicyRetain
		}), ""},
		{"bad deletionPolicy", cloudMeta(func(s *v1alpha1.CloudMetadataSpec) { s.DeletionPolicy = "Keep" }),
			`supported values: "Delete", "Retain"`},
	})
}

func TestAzureMetadataAdmission(t *testing.T) {
	resourceTags := func(m map[string]string) func(*v1alpha1.AzureMetadataSpec) {
		return func(s *v1alpha1.AzureMetadataSpec) { s.ResourceTags = m }
	}
	tag := func(name, value string) func(*v1alpha1.AzureMetadataSpec) {
		return resourceTags(map[string]string{name: value})
	}
	const reserved = "Azure reserves tag names starting with microsoft, azure or windows (in any case)"
	const forbidden = `Azure tag names may not contain any of < > % & \ ? / ;`
	cases := []admissionCase{
		{"update", azureMeta(nil), ""},
		{"add", azureMeta(func(s *v1alpha1.AzureMetadataSpec) { s.Opcode = v1alpha1.OpcodeAdd }), ""},
		{"delete whatever value", azureMeta(func(s *v1alpha1.AzureMetadataSpec) {
			s.Opcode = v1alpha1.OpcodeDelete
			s.ResourceTags = map[string]string{"env": "", "cost-center": "eng-42"}
		}), ""},
		{"bad opcode", azureMeta(func(s *v1alpha1.AzureMetadataSpec) { s.Opcode = "merge" }), `supported values: "add", "update", "delete"`},
		{"no opcode", azureMeta(func(s *v1alpha1.AzureMetadataSpec) { s.Opcode = "" }), "spec.opcode"},
		{"empty name", azureMeta(tag("", "x")), "tag names may not be empty"},
		{"name of 512", azureMeta(tag(strings.Repeat("n", 512), "x")), ""},
		{"name of 513", azureMeta(tag(strings.Repeat("n", 513), "x")), "Azure tag names must be at most 512 characters long"},
		{"value of 256", azureMeta(tag("env", strings.Repeat("v", 256))), ""},
		{"value of 257", azureMeta(tag("env", strings.Repeat("v", 257))), "Azure tag values must be at most 256 characters long"},
		{"50 tags", azureMeta(resourceTags(tags(50))), ""},
		{"51 tags", azureMeta(resourceTags(tags(51))), "spec.resourceTags: Too many: 51: must have at most 50 items"},
		{"kubernetes ownership tag", azureMeta(tag("kubernetes.io_cluster.demo-7lpkm", "owned")), ""},
		{"unicode name", azureMeta(tag("Kostenstelle-Ü", "ä")), ""},
		{"name containing azure", azureMeta(tag("my-azure-env", "x")), ""},
		{"name containing microsoft", azureMeta(tag("not.microsoft", "x")), ""},
		{"ignoreTags 50", azureMeta(func(s *v1alpha1.AzureMetadataSpec) { s.IgnoreTags = names(50) }), ""},
		{"ignoreTags 51", azureMeta(func(s *v1alpha1.AzureMetadataSpec) { s.IgnoreTags = names(51) }), "must have at most 50 items"},
		{"ignoreTags empty name", azureMeta(func(s *v1alpha1.AzureMetadataSpec) { s.IgnoreTags = []string{""} }), "spec.ignoreTags[0]"},
		{"ignoreTags other tags", azureMeta(func(s *v1alpha1.AzureMetadataSpec) { s.IgnoreTags = []string{"owner", "created-by"} }), ""},
		{"tag both written and ignored", azureMeta(func(s *v1alpha1.AzureMetadataSpec) { s.IgnoreTags = []string{"owner", "env"} }),
			`tag "env" is both in resourceTags and ignoreTags`},
		{"tag both written and ignored, other case", azureMeta(func(s *v1alpha1.AzureMetadataSpec) { s.IgnoreTags = []string{"Cost-Center"} }),
			`tag "Cost-Center" is both in resourceTags and ignoreTags (Azure tag names ignore case)`},
		{"subscriptions", azureMeta(func(s *v1alpha1.AzureMetadataSpec) {
			s.Subscriptions = []string{"00000000-0000-0000-0000-000000000000", "0A1B2C3D-4E5F-6789-ABCD-EF0123456789"}
		}), ""},
		{"bad subscription", azureMeta(func(s *v1alpha1.AzureMetadataSpec) { s.Subscriptions = []string{"my-subscription"} }),
			"subscriptions must be Azure subscription IDs"},
		{"subscription GUID in braces", azureMeta(func(s *v1alpha1.AzureMetadataSpec) {
			s.Subscriptions = []string{"{00000000-0000-0000-0000-000000000000}"}
		}), "spec.subscriptions"},
		{"subscription GUID one short", azureMeta(func(s *v1alpha1.AzureMetadataSpec) {
			s.Subscriptions = []string{"00000000-0000-0000-0000-00000000000"}
		}), "subscriptions must be Azure subscription IDs"},
		{"21 subscriptions", azureMeta(func(s *v1alpha1.AzureMetadataSpec) {
			for i := range 21 {
				s.Subscriptions = append(s.Subscriptions, "00000000-0000-0000-0000-0000000000"+itoa(10+i))
			}
		}), "must have at most 20 items"},
	}
	for _, name := range []string{"microsoft.env", "Microsoft-owner", "MICROSOFT", "azure-env", "Azure_region", "AZURE", "windows-version", "Windows", "WiNdOwS.x"} {
		cases = append(cases, admissionCase{"reserved " + name, azureMeta(tag(name, "x")), `tag name "` + name + `": ` + reserved})
	}
	for _, name := range []string{"a<b", "a>b", "50%", "r&d", `a\b`, "why?", "kubernetes.io/cluster/demo", "a;b"} {
		cases = append(cases, admissionCase{"forbidden " + name, azureMeta(tag(name, "x")), `tag name "` + name + `": ` + forbidden})
	}
	run(t, cases)
}

func TestAWSMetadataAdmission(t *testing.T) {
	resourceTags := func(m map[string]string) func(*v1alpha1.AWSMetadataSpec) {
		return func(s *v1alpha1.AWSMetadataSpec) { s.ResourceTags = m }
	}
	tag := func(key, value string) func(*v1alpha1.AWSMetadataSpec) {
		return resourceTags(map[string]string{key: value})
	}
	const reserved = "AWS reserves tag keys starting with aws: (in any case)"
	const charset = "AWS tag keys and values may only contain letters, digits, spaces and + - = . _ : / @"
	regions := func(r ...string) func(*v1alpha1.AWSMetadataSpec) {
		return func(s *v1alpha1.AWSMetadataSpec) { s.Regions = r }
	}
	cases := []admissionCase{
		{"update", awsMeta(nil), ""},
		{"delete whatever value", awsMeta(func(s *v1alpha1.AWSMetadataSpec) {
			s.Opcode = v1alpha1.OpcodeDelete
			s.ResourceTags = map[string]string{"env": ""}
		}), ""},
		{"bad opcode", awsMeta(func(s *v1alpha1.AWSMetadataSpec) { s.Opcode = "Add" }), `supported values: "add", "update", "delete"`},
		{"empty key", awsMeta(tag("", "x")), "tag keys may not be empty"},
		{"key of 128", awsMeta(tag(strings.Repeat("k", 128), "x")), ""},
		{"key of 129", awsMeta(tag(strings.Repeat("k", 129), "x")), "AWS tag keys must be at most 128 characters long"},
		{"key of 128 letters in 256 bytes", awsMeta(tag(strings.Repeat("é", 128), "x")), ""},
		{"value of 256", awsMeta(tag("env", strings.Repeat("v", 256))), ""},
		// The schema bounds values (AWSTagValue), before any rule runs.
		{"value of 257", awsMeta(tag("env", strings.Repeat("v", 257))), "spec.resourceTags.env: Too long: may not be more than 256"},
		{"value of 256 letters in 512 bytes", awsMeta(tag("env", strings.Repeat("é", 256))), ""},
		{"50 tags", awsMeta(resourceTags(tags(50))), ""},
		{"51 tags", awsMeta(resourceTags(tags(51))), "spec.resourceTags: Too many: 51: must have at most 50 items"},
		{"every allowed punctuation", awsMeta(tag("kubernetes.io/cluster/demo_1 +-=.:@", "a b+c-d=e.f_g:h/i@j")), ""},
		{"unicode letters, digits and spaces", awsMeta(tag("Kostenstelle Ü 環境 ٣", "Größe\u00a0groß ２")), ""},
		{"key containing aws", awsMeta(tag("my-aws:x", "x")), ""},
		{"key aws without colon", awsMeta(tag("awsx", "x")), ""},
		{"forbidden character in key", awsMeta(tag("env!", "prod")), `tag "env!": ` + charset},
		{"forbidden character in value", awsMeta(tag("env", "prod#1")), `tag "env": ` + charset},
		{"tab in value", awsMeta(tag("env", "a\tb")), charset},
		{"Azure-only character", awsMeta(tag("a%b", "x")), charset},
		{"ignoreTags 51", awsMeta(func(s *v1alpha1.AWSMetadataSpec) { s.IgnoreTags = names(51) }), "must have at most 50 items"},
		{"tag both written and ignored", awsMeta(func(s *v1alpha1.AWSMetadataSpec) { s.IgnoreTags = []string{"cost-center"} }),
			`tag "cost-center" is both in resourceTags and ignoreTags`},
		// AWS keys are case-sensitive: Env and env are two tags.
		{"ignored tag of another case", awsMeta(func(s *v1alpha1.AWSMetadataSpec) { s.IgnoreTags = []string{"Env"} }), ""},
		{"regions", awsMeta(regions("us-east-1", "eu-central-2", "us-gov-west-1", "ap-southeast-1", "cn-north-1", "us-iso-east-1", "us-isob-east-1")), ""},
		{"bad region", awsMeta(regions("us-east-1", "useast1")), "regions must be AWS region codes such as us-east-1, eu-central-2 or us-gov-west-1"},
		{"upper-case region", awsMeta(regions("US-EAST-1")), "regions must be AWS region codes"},
		{"availability zone", awsMeta(regions("us-east-1a")), "regions must be AWS region codes"},
	}
	for _, key := range []string{"aws:cloudformation:stack-name", "AWS:x", "Aws:x", "aWs:"} {
		cases = append(cases, admissionCase{"reserved " + key, awsMeta(tag(key, "x")), `tag key "` + key + `": ` + reserved})
	}
	run(t, cases)
}

// TestDefaults: a CloudMetadata without controllerConfig gets the default
// limit policy and sync interval, and deletionPolicy Delete.
func TestDefaults(t *testing.T) {
	o := cloudMeta(nil)
	o.Name, o.Namespace = "defaults", ns
	if err := kube.Client.Create(context.Background(), o, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if got := o.Spec.ControllerConfig; got.Limit != v1alpha1.LimitPartial || got.SyncEvery != v1alpha1.DefaultSyncEvery {
		t.Fatalf("controllerConfig defaulted to %+v, want limit %s and syncEvery %s", got, v1alpha1.LimitPartial, v1alpha1.DefaultSyncEvery)
	}
	if got := o.Spec.ControllerConfig.SyncInterval(); got != v1alpha1.DefaultSyncInterval {
		t.Fatalf("SyncInterval() = %s, want %s", got, v1alpha1.DefaultSyncInterval)
	}
	if o.Spec.DeletionPolicy != v1alpha1.DeletionPolicyDelete || !o.Spec.Deletes() {
		t.Fatalf("deletionPolicy defaulted to %q, want %s", o.Spec.DeletionPolicy, v1alpha1.DeletionPolicyDelete)
	}

	o = cloudMeta(func(s *v1alpha1.CloudMetadataSpec) { s.ControllerConfig.SyncEvery = "1h" })
	o.Name, o.Namespace = "defaults", ns
	if err := kube.Client.Create(context.Background(), o, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if got := o.Spec.ControllerConfig; got.Limit != v1alpha1.LimitPartial || got.SyncEvery != "1h" {
		t.Fatalf("controllerConfig with syncEvery 1h defaulted to %+v, want limit %s and syncEvery 1h", got, v1alpha1.LimitPartial)
	}
}

// TestStatus: the status subresource takes a full status, and refuses more
// than MaxFailures failures and a reason that is not a CamelCase word.
func TestStatus(t *testing.T) {
	ctx := context.Background()
	o := azureMeta(nil)
	createStatusObject(ctx, t, o)

	now := metav1.Now()
	failures := make([]v1alpha1.ResourceFailure, v1alpha1.MaxFailures)
	for i := range failures {
		failures[i] = v1alpha1.ResourceFailure{
			Resource: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm" + itoa(i),
			Tags:     []string{"env"}, Reason: "TagLimitExceeded", Message: "the resource has 50 tags already",
		}
	}
	o.Status = v1alpha1.ProviderMetadataStatus{
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionApproved, Status: metav1.ConditionTrue, Reason: "Referenced", Message: "demo-cluster", LastTransitionTime: now},
			{Type: v1alpha1.ConditionApplied, Status: metav1.ConditionFalse, Reason: "Failures", LastTransitionTime: now},
			{Type: v1alpha1.ConditionPolicy, Status: metav1.ConditionFalse, Reason: "TagsLeftOut", LastTransitionTime: now},
			{Type: v1alpha1.ConditionRequest, Status: metav1.ConditionTrue, Reason: "Valid", LastTransitionTime: now},
		},
		ObservedGeneration: o.Generation,
		ResourceTags:       map[string]string{"env": "prod"},
		LastSyncTime:       &now,
		Matched:            30, InSync: 5, Failed: 25,
		Failures:      failures,
		MoreFailures:  5,
		CloudMetadata: "demo-cluster",
	}
	if err := kube.Client.Status().Update(ctx, o); err != nil {
		t.Fatalf("a full status: %v", err)
	}

	tooMany := o.DeepCopy()
	tooMany.Status.Failures = append(tooMany.Status.Failures, failures[0])
	statusRefused(ctx, t, tooMany, "must have at most 20 items", "MaxFailures+1 failures")
	badReason := o.DeepCopy()
	badReason.Status.Failures[0].Reason = "tag limit exceeded"
	statusRefused(ctx, t, badReason, "status.failures[0].reason", "a reason with spaces")
}

// TestSample: config/samples/tagsync_v1alpha1_cloudmetadata.yaml is
// accepted as it is, and holds one object of each kind.
func TestSample(t *testing.T) {
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(kube.RootDir, "config", "samples", "tagsync_v1alpha1_cloudmetadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const sampleNS = "sample"
	if err := kube.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sampleNS}}); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if u.Object == nil {
			continue
		}
		u.SetNamespace(sampleNS)
		if err := kube.Client.Create(ctx, &u); err != nil {
			t.Fatalf("the sample's %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		kinds[u.GetKind()]++
	}
	if kinds["CloudMetadata"] != 1 || kinds["AzureMetadata"] != 1 || kinds["AWSMetadata"] != 1 || len(kinds) != 3 {
		t.Fatalf("the sample holds %v, want one CloudMetadata, AzureMetadata and AWSMetadata", kinds)
	}

	// The CloudMetadata references the other two, in its namespace.
	var cm v1alpha1.CloudMetadata
	var list v1alpha1.CloudMetadataList
	if err := kube.Client.List(ctx, &list, client.InNamespace(sampleNS)); err != nil || len(list.Items) != 1 {
		t.Fatalf("listing the sample's CloudMetadata: %v (%d)", err, len(list.Items))
	}
	cm = list.Items[0]
	if cm.Spec.Classifiers["kubernetes.io_cluster.demo-7lpkm"] != "owned" {
		t.Errorf("the sample's classifiers are %v, want kubernetes.io_cluster.demo-7lpkm=owned among them", cm.Spec.Classifiers)
	}
	refs := cm.Spec.CloudProvider
	if refs.AzureRef == nil || refs.AWSRef == nil {
		t.Fatalf("the sample's CloudMetadata references %+v, want both clouds", refs)
	}
	var az v1alpha1.AzureMetadata
	if err := kube.Client.Get(ctx, client.ObjectKey{Namespace: sampleNS, Name: refs.AzureRef.Name}, &az); err != nil {
		t.Errorf("the AzureMetadata the sample references: %v", err)
	}
	var aws v1alpha1.AWSMetadata
	if err := kube.Client.Get(ctx, client.ObjectKey{Namespace: sampleNS, Name: refs.AWSRef.Name}, &aws); err != nil {
		t.Errorf("the AWSMetadata the sample references: %v", err)
	}
	for kind, got := range map[string]map[string]string{"AzureMetadata": az.Spec.ResourceTags, "AWSMetadata": aws.Spec.ResourceTags} {
		if got["env"] != "prod" || got["cost-center"] != "eng-42" {
			t.Errorf("the sample's %s writes %v, want env=prod and cost-center=eng-42", kind, got)
		}
	}
}
