package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestPlanShowsWhatAWorkloadTagPolicyWrites: on the plan estate, a claim's
// volume is disk d2 (env=demo) and a policy tags it with its namespace's
// cost-center and the claim's name; plan shows those two additions on d2
// and nothing else for the policy, and the controller then writes exactly
// them.
func TestPlanShowsWhatAWorkloadTagPolicyWrites(t *testing.T) {
	e := newPlanEstate(t)
	ctx := t.Context()
	c := e.kube.Client
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"cost-center": "cc-1"}}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, Resources: corev1.VolumeResourceRequirements{Requests: size}}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data"}, Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: rwo,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.azure.com", VolumeHandle: diskBase + "d2"}},
			ClaimRef:               &corev1.ObjectReference{Namespace: "shop", Name: "data"}}},
		&v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: "costs"}, Spec: v1alpha1.WorkloadTagPolicySpec{Tags: []v1alpha1.WorkloadTag{
			{Key: "billing", Value: "${namespace.labels['cost-center']}"}, {Key: "claim", Value: "${namespace}/${name}"}}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	plan := e.planJSON(t, "costs")
	if len(plan.WorkloadTagPolicies) != 1 {
		t.Fatalf("plan shows %d WorkloadTagPolicies, want 1: %+v", len(plan.WorkloadTagPolicies), plan)
	}
	w := plan.WorkloadTagPolicies[0]
	if len(w.Resources) != 1 || !strings.EqualFold(w.Resources[0].ID, diskBase+"d2") {
		t.Fatalf("plan: %+v, want one write on d2", w)
	}
	var got []string
	for _, ch := range w.Resources[0].Changes {
		got = append(got, ch.Op+ch.Name+"="+*ch.After)
	}
	if strings.Join(got, ",") != "+billing=cc-1,+claim=shop/data" {
		t.Errorf("plan writes %v on d2", got)
	}
	text, _, _ := runPlanCLI(ctx, append(e.azureFlags(t), "--kubeconfig="+e.kubeconfig, "costs")...)
	for _, want := range []string{"WorkloadTagPolicy costs", `+ billing = "cc-1"`, `+ claim = "shop/data"`} {
		if !strings.Contains(text, want) {
			t.Errorf("plan's text does not say %q:\n%s", want, text)
		}
	}

	url := e.sim.Server.URL()
	az, err := azure.NewProvider(ctx, azure.Config{ARMEndpoint: url, ARMAudience: url, DefaultSubscription: planSub,
		HTTPClient: e.sim.HTTPClient}, azure.WithCredential(e.sim.Credential), azure.WithRegisterer(prometheus.NewRegistry()),
		azure.WithPollFrequency(10*time.Millisecond), azure.WithThrottleGates(azure.NewThrottleGates()))
	if err != nil {
		t.Fatal(err)
	}
	log := &testenv.SyncBuffer{}
	mgr, err := operator.Build(ctx, e.kube.Config, operator.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Providers: []cloud.Provider{az}, Controllers: []string{workloadtags.ControllerName}, Audit: audit.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, mgr, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	testenv.Eventually(t, planWait, "the policy's pass", func() string {
		var p v1alpha1.WorkloadTagPolicy
		if err := c.Get(ctx, client.ObjectKey{Name: "costs"}, &p); err != nil {
			return err.Error()
		}
		if p.Status.InSync != 1 {
			return "not in sync yet"
		}
		return ""
	})
	tg, err := e.sim.Server.Tags(diskBase + "d2")
	if err != nil {
		t.Fatal(err)
	}
	if tg["billing"] != "cc-1" || tg["claim"] != "shop/data" || tg["env"] != "demo" {
		t.Errorf("the controller left d2 with %v", tg)
	}
	var done int
	for _, r := range testenv.AuditRecords(t, log.String()) {
		if r.Result == audit.ResultOK {
			done++
			if len(r.Set) != 2 || len(r.Deleted) != 0 {
				t.Errorf("the controller wrote %+v, plan showed 2 additions", r)
			}
		}
	}
	if done != 1 {
		t.Errorf("%d writes done, plan showed 1", done)
	}
}
