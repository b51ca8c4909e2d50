package cli

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// estate creates in ns a CloudMetadata with an AzureMetadata and an
// AWSMetadata, and a NodeTagSync named after ns, each with a status that
// has problems, and returns them.
func estate(t *testing.T, env *testenv.Env, ns string) (*v1alpha1.NodeTagSync, *v1alpha1.AzureMetadata) {
	t.Helper()
	ctx := context.Background()
	now := metav1.Now()
	nts := build.NodeTagSync(ns)
	cm := build.CloudMetadata("cluster", build.Namespace(ns), build.Classifiers(map[string]string{"kubernetes.io_cluster.demo": "owned"}),
		build.AzureRef("azure"), build.AWSRef("aws"))
	az := build.AzureMetadata("azure", build.Namespace(ns), build.Opcode(v1alpha1.OpcodeAdd),
		build.ResourceTags(map[string]string{"env": "demo", "cost-center": "eng-42"}))
	aws := build.AWSMetadata("aws", build.Namespace(ns), build.Opcode(v1alpha1.OpcodeUpdate),
		build.ResourceTags(map[string]string{"env": "demo"}), build.IgnoreTags("owner"))
	for _, o := range []client.Object{nts, cm, az, aws} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), nts) })
	cond := func(typ string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, LastTransitionTime: now}
	}
	cloud := "dev"
	nts.Status = v1alpha1.NodeTagSyncStatus{SyncedNodes: 10, UnmanagedNodes: 1, ConflictCount: 1, LastFullSyncTime: &now,
		Conditions: []metav1.Condition{cond("Ready", "True", "Synced", "ok"), cond("Degraded", "True", "Conflicts", "1 tag conflict")},
		Conflicts: []v1alpha1.TagConflict{{Resource: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/batch",
			Nodes: []string{"batch-0", "batch-1"}, Tag: "env", CloudValue: &cloud, NodeValues: []string{"qa", "perf"}}}}
	cm.Status = v1alpha1.CloudMetadataStatus{Matched: 9, InSync: 8, Failed: 1, LastSyncTime: &now,
		Conditions: []metav1.Condition{cond("Ready", "False", "PartiallyApplied", "1 resource failed"),
			cond("Suspended", "False", "NotSuspended", "not suspended"),
			cond("DeletionsHeld", "True", "MassDeletion", "4 tag deletion(s) on 2 resource(s) held for approval. To write them once, run: "+
				"kubectl annotate cloudmetadata cluster -n "+ns+" tagsync.io/approve-deletions=0a1b2c3d4e5f --overwrite. Held: disks/os-1 (env,team)")}}
	az.Status = v1alpha1.ProviderMetadataStatus{Matched: 9, InSync: 8, Failed: 1, MoreFailures: 2, CloudMetadata: "cluster",
		Conditions: []metav1.Condition{cond("Approved", "True", "Valid", "ok"), cond("Applied", "False", "TagTaken", "1 resource keeps another env")},
		Failures: []v1alpha1.ResourceFailure{{Resource: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/os-0",
			Tags: []string{"env"}, Reason: "TagTaken", Message: `env is "prod" there`}}}
	for _, o := range []client.Object{nts, cm, az} {
		if err := env.Client.Status().Update(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return nts, az
}

func TestStatusTable(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	nts, _ := estate(t, env, ns)
	out, errOut, err := runCLI(context.Background(), "status", "--kubeconfig", kc, "-n", ns)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{
		"NODETAGSYNC", nts.Name + " ", "CLOUDMETADATA",
		"azuremetadata/azure   add      True       False     -        -         9         8         1        cost-center,env   -",
		"awsmetadata/aws       update   -          -         -        -         0         0         0        env               owner",
		"CloudMetadata " + ns + "/cluster", "Ready=False", "PartiallyApplied",
		"DeletionsHeld=True", "MassDeletion", "tagsync.io/approve-deletions=0a1b2c3d4e5f --overwrite",
		"NodeTagSync " + nts.Name, "Degraded=True",
		"virtualMachineScaleSets/batch", "batch-0=qa, batch-1=perf",
		"disks/os-0", "TagTaken", `env is "prod" there`, "(2 more)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Suspended=False") {
		t.Errorf("a CloudMetadata that is not suspended is listed as a problem:\n%s", out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes in output that is no terminal:\n%q", out)
	}
	if strings.Contains(out, "NAMESPACE") {
		t.Errorf("a NAMESPACE column without -A:\n%s", out)
	}
}

func TestStatusAllNamespaces(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	out, _, err := runCLI(context.Background(), "status", "--kubeconfig", kc, "-A")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "NAMESPACE") || !strings.Contains(out, ns+" ") {
		t.Errorf("-A shows no NAMESPACE column with %s:\n%s", ns, out)
	}
}

func TestStatusJSONAndYAML(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	nts, _ := estate(t, env, ns)
	for _, format := range []string{"json", "yaml"} {
		out, _, err := runCLI(context.Background(), "status", "--kubeconfig", kc, "-n", ns, "-o", format)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Kind  string
			Items []struct {
				Kind, APIVersion string
				Metadata         metav1.ObjectMeta
				Status           map[string]any
			}
		}
		if err := yaml.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, out)
		}
		got := map[string]bool{}
		for _, it := range list.Items {
			got[it.Kind+"/"+it.Metadata.Name] = it.APIVersion == "tagsync.io/v1alpha1" && it.Metadata.ManagedFields == nil
		}
		for _, want := range []string{"NodeTagSync/" + nts.Name, "CloudMetadata/cluster", "AzureMetadata/azure", "AWSMetadata/aws"} {
			if !got[want] {
				t.Errorf("-o %s: %s missing, or without apiVersion or with managedFields: %v", format, want, got)
			}
		}
		if list.Kind != "List" {
			t.Errorf("-o %s: kind %q, want List", format, list.Kind)
		}
		if format == "json" && !json.Valid([]byte(out)) {
			t.Errorf("-o json is not JSON:\n%s", out)
		}
	}
}

func TestStatusWatchSeesAChange(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	_, az := estate(t, env, ns)
	ctx, cancel := context.WithCancel(context.Background())
	out := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- executeTo(ctx, out, io.Discard, []*cobra.Command{NewStatusCommand()}, "status", "--kubeconfig", kc, "-n", ns, "--watch")
	}()
	testenv.Eventually(t, 30*time.Second, "the first status", func() string {
		if !strings.Contains(out.String(), "azuremetadata/azure") {
			return "not shown yet:\n" + out.String()
		}
		return ""
	})
	az.Status.InSync, az.Status.Failed = 9, 0
	az.Status.Failures, az.Status.MoreFailures = nil, 0
	if err := env.Client.Status().Update(context.Background(), az); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the status shown again with the change", func() string {
		if !strings.Contains(out.String(), "9         9         0") {
			return "not shown yet:\n" + out.String()
		}
		return ""
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("--watch ended with %v after Ctrl-C", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("--watch did not end after its context")
	}
}

// TestStatusToleratesAMissingCRD removes the LabelSyncProfile CRD for the
// test (and puts it back): status shows the rest.
func TestStatusToleratesAMissingCRD(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("labelsyncprofiles.tagsync.io")
	if err := env.Client.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(env.RootDir, "config", "crd", "bases", "tagsync.io_labelsyncprofiles.yaml")}})
		if err != nil {
			t.Errorf("putting the LabelSyncProfile CRD back: %v", err)
		}
	})
	testenv.Eventually(t, 30*time.Second, "the CRD gone", func() string {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: crd.GetName()}, crd.DeepCopy()); err == nil {
			return "still there"
		}
		return ""
	})
	out, errOut, err := runCLI(ctx, "status", "--kubeconfig", kc, "-n", ns)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "azuremetadata/azure") || strings.Contains(out, "LABELSYNCPROFILE") {
		t.Errorf("without the LabelSyncProfile CRD:\n%s", out)
	}
}

func TestStatusEmptyNamespace(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	out, errOut, err := runCLI(context.Background(), "status", "--kubeconfig", kc, "-n", ns, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"kind": "List"`) {
		t.Errorf("-o json of an empty namespace: %s %s", out, errOut)
	}
}

// TestStatusProblemsAreConditionsOutOfTheirHealthyState: a profile whose
// Conflict, Suspended and DeletionsHeld are False lists no problem; each
// of them True is one, as Ready False is.
func TestStatusProblemsAreConditionsOutOfTheirHealthyState(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: "R"}
	}
	profile := func(name string, conds ...metav1.Condition) v1alpha1.LabelSyncProfile {
		return v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "metal", Name: name},
			Status: v1alpha1.LabelSyncProfileStatus{Conditions: conds}}
	}
	r := statusReport{Profiles: []v1alpha1.LabelSyncProfile{
		profile("calm", cond(v1alpha1.ConditionReady, "True"), cond(v1alpha1.ConditionConflict, "False"),
			cond(v1alpha1.ConditionSuspended, "False"), cond(v1alpha1.ConditionDeletionsHeld, "False")),
		profile("held", cond(v1alpha1.ConditionReady, "False"), cond(v1alpha1.ConditionConflict, "True"),
			cond(v1alpha1.ConditionSuspended, "True"), cond(v1alpha1.ConditionDeletionsHeld, "True")),
	}}
	var got []string
	for _, row := range r.problemTable().rows {
		got = append(got, row[0]+" "+row[1])
	}
	want := "LabelSyncProfile metal/held Ready=False,LabelSyncProfile metal/held Conflict=True," +
		"LabelSyncProfile metal/held Suspended=True,LabelSyncProfile metal/held DeletionsHeld=True"
	if strings.Join(got, ",") != want {
		t.Fatalf("problems %q, want %q", got, want)
	}
}

// TestStatusShowsWorkloadTagPolicies: a policy has its row with its counts,
// and its unhealthy conditions are problems.
func TestStatusShowsWorkloadTagPolicies(t *testing.T) {
	r := statusReport{Workloads: []v1alpha1.WorkloadTagPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "costs"},
		Status: v1alpha1.WorkloadTagPolicyStatus{Resources: 3, InSync: 1, Pending: 1, Shared: 2, Failed: 1,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: "False", Reason: "PartiallyTagged"},
				{Type: v1alpha1.ConditionConflict, Status: "True", Reason: v1alpha1.ReasonContestedKeys}}}}}}
	rows := r.workloadTable(time.Now()).rows
	if len(rows) != 1 || strings.Join(rows[0][:8], " ") != "costs azure False 3 1 1 2 1" {
		t.Errorf("rows %q", rows)
	}
	var got []string
	for _, row := range r.problemTable().rows {
		got = append(got, row[0]+" "+row[1])
	}
	if strings.Join(got, ",") != "WorkloadTagPolicy costs Ready=False,WorkloadTagPolicy costs Conflict=True" {
		t.Errorf("problems %q", got)
	}
}
