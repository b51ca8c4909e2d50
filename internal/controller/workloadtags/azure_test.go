package workloadtags_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
	"github.com/tagsync/tagsync/internal/testenv"
)

// azureDisks is an armsim node resource group for the test's disks.
type azureDisks struct {
	t   *testing.T
	env *armsimtest.Env
	rg  string
}

func newAzureDisks(t *testing.T) *azureDisks {
	t.Helper()
	env := armsimtest.Start(t)
	d := &azureDisks{t: t, env: env, rg: "MC_rg_aks_eastus"}
	if _, err := env.Server.CreateResourceGroup(sub, armsim.ResourceGroup{Name: d.rg}); err != nil {
		t.Fatal(err)
	}
	return d
}

// id is the ARM ID of disk name (whether it exists or not).
func (d *azureDisks) id(name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/disks/%s", sub, d.rg, name)
}

// create creates disk name as the Azure Disk CSI driver does, with its
// creator tags and extra, and returns its ID.
func (d *azureDisks) create(name string, extra map[string]string) string {
	d.t.Helper()
	t := map[string]string{"k8s-azure-created-by": "kubernetes-azure-dd", "kubernetes.io-created-for-pv-name": "pv-" + name}
	for k, v := range extra {
		t[k] = v
	}
	id, err := d.env.Server.CreateResource(sub, d.rg, armsim.Resource{Type: armsim.TypeDisk, Name: name, Tags: t})
	if err != nil {
		d.t.Fatal(err)
	}
	return id
}

// tags are a disk's tags.
func (d *azureDisks) tags(id string) map[string]string {
	d.t.Helper()
	t, err := d.env.Server.Tags(id)
	if err != nil {
		d.t.Fatal(err)
	}
	return t
}

// count is how many calls of op armsim has served.
func (d *azureDisks) count(op string) int { return d.env.Server.Calls().Count(op) }

// waitTag waits until disk id carries key=value.
func (d *azureDisks) waitTag(id, key, value string) {
	d.t.Helper()
	testenv.Eventually(d.t, waitFor, fmt.Sprintf("%s=%s on %s", key, value, id), func() string {
		if got := d.tags(id)[key]; got != value {
			return fmt.Sprintf("%s=%q", key, got)
		}
		return ""
	})
}

// managed is the in-tree azureDisk kind of a managed disk.
var managed = corev1.AzureManagedDisk

// TestAzureDisks runs a policy over the managed disks of claims on armsim:
// it tags each disk from its claim and namespace in one Resource Graph
// read and one write per disk, leaves the creator's tags, other tags and
// an Azure Files share alone, writes nothing on an unchanged resync,
// retags a namespace's disks when its label changes, reverts an outside
// edit, releases (keeps) a key removed from the policy, finds a disk
// created after its volume, and leaves alone a key another policy wants
// otherwise.
func TestAzureDisks(t *testing.T) {
	disks := newAzureDisks(t)
	h := newHarness(t, azureOn(disks.env))
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	web := h.namespace("web", map[string]string{"cost-center": "cc-2"})
	d0 := disks.create("d0", map[string]string{"keep": "me"})
	d1 := disks.create("d1", nil)
	d2 := disks.create("d2", nil)
	outside := disks.create("outside", nil)
	h.claimVolume(shop, "data-0", map[string]string{"team": "payments"}, csi("disk.csi.azure.com", d0))
	h.claimVolume(shop, "data-1", nil, csi("disk.csi.azure.com", d1))
	h.claimVolume(web, "cache", nil, corev1.PersistentVolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d2", DataDiskURI: d2, Kind: &managed}})
	h.claimVolume(web, "files", nil, csi("file.csi.azure.com", "rg#account#share"))
	unselected := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-other"}}
	if err := h.c.Create(h.ctx, unselected); err != nil {
		t.Fatal(err)
	}
	h.claimVolume(unselected.Name, "x", nil, csi("disk.csi.azure.com", outside))

	p := h.policy("costs", v1alpha1.ProviderAzure,
		tag("cost-center", "${namespace.labels['cost-center']}"), tag("k8s-namespace", "${namespace}"),
		tag("k8s-pvc", "${name}"), tag("team", "${labels['team']}"))
	got := h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
	if s := got.Status; s.Resources != 3 || s.InSync != 3 || s.Shared != 1 || s.Pending != 0 || s.Failed != 0 {
		t.Errorf("status %+v, want 3 resources in sync and 1 shared", s)
	}
	want := map[string]map[string]string{
		d0: {"cost-center": "cc-1", "k8s-namespace": shop, "k8s-pvc": "data-0", "team": "payments", "keep": "me",
			"k8s-azure-created-by": "kubernetes-azure-dd", "kubernetes.io-created-for-pv-name": "pv-d0"},
		d1: {"cost-center": "cc-1", "k8s-namespace": shop, "k8s-pvc": "data-1",
			"k8s-azure-created-by": "kubernetes-azure-dd", "kubernetes.io-created-for-pv-name": "pv-d1"},
		d2: {"cost-center": "cc-2", "k8s-namespace": web, "k8s-pvc": "cache",
			"k8s-azure-created-by": "kubernetes-azure-dd", "kubernetes.io-created-for-pv-name": "pv-d2"},
		outside: {"k8s-azure-created-by": "kubernetes-azure-dd", "kubernetes.io-created-for-pv-name": "pv-outside"},
	}
	for id, w := range want {
		if g := disks.tags(id); fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s carries %v, want %v", id, g, w)
		}
	}
	if n := disks.count("Tags.UpdateAtScope"); n != 3 {
		t.Errorf("%d Tags API writes, want 3 (one per disk)", n)
	}
	ok := 0
	for _, r := range h.records() {
		if r.Result == audit.ResultOK {
			ok++
		}
	}
	if ok != 3 {
		t.Errorf("%d audit records of done writes, want 3", ok)
	}

	// An unchanged resync reads once and writes nothing. (A pass the
	// volumes' creation events started may overlap the one asked for:
	// then the window saw two, and is measured again.)
	testenv.Eventually(t, waitFor, "an unchanged resync alone", func() string {
		reads, writes := disks.count("ResourceGraph.Resources"), disks.count("Tags.UpdateAtScope")
		h.pass(p)
		if n := disks.count("Tags.UpdateAtScope") - writes; n != 0 {
			t.Errorf("an unchanged resync wrote %d times", n)
		}
		if n := disks.count("ResourceGraph.Resources") - reads; n != 1 {
			return fmt.Sprintf("%d Resource Graph queries, want 1", n)
		}
		return ""
	})

	// A namespace's label change retags its disks only.
	h.setNamespaceLabel(shop, "cost-center", "cc-9")
	disks.waitTag(d0, "cost-center", "cc-9")
	disks.waitTag(d1, "cost-center", "cc-9")
	if g := disks.tags(d2)["cost-center"]; g != "cc-2" {
		t.Errorf("another namespace's disk was retagged: cost-center=%s", g)
	}

	// An outside edit of a followed key is reverted by the first pass whose
	// read shows it (Resource Graph's index shows it after its delay).
	if err := disks.env.Server.SetTags(d2, map[string]string{"cost-center": "hacked"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitFor, "the outside edit reverted", func() string {
		h.pass(p)
		if g := disks.tags(d2)["cost-center"]; g != "cc-2" {
			return "cost-center=" + g
		}
		return ""
	})

	// A key removed from the policy is released: it stays on the disks.
	var cur v1alpha1.WorkloadTagPolicy
	if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(p), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Tags = cur.Spec.Tags[:3]
	if err := h.c.Update(h.ctx, &cur); err != nil {
		t.Fatal(err)
	}
	h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
	if g := disks.tags(d0)["team"]; g != "payments" {
		t.Errorf("a key removed from the policy was deleted: team=%q", g)
	}
	for _, r := range h.records() {
		if len(r.Deleted) > 0 {
			t.Errorf("a deletion was written: %+v", r)
		}
	}

	// A volume whose disk does not exist yet is pending, then tagged once
	// the disk exists.
	late := disks.id("late")
	h.claimVolume(shop, "late", nil, csi("disk.csi.azure.com", late))
	got = h.waitReady(p.Name, metav1.ConditionFalse, workloadtags.ReasonPartiallyTagged)
	if got.Status.Pending != 1 {
		t.Errorf("pending %d, want 1", got.Status.Pending)
	}
	disks.create("late", nil)
	disks.waitTag(late, "k8s-pvc", "late")
	h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)

	// Another policy that wants another value for a key: neither writes it,
	// both say so; when it goes, the conflict ends.
	rival := h.policy("rival", v1alpha1.ProviderAzure, tag("k8s-namespace", "ns-${namespace}"))
	for _, name := range []string{p.Name, rival.Name} {
		testenv.Eventually(t, waitFor, "Conflict on "+name, func() string {
			var o v1alpha1.WorkloadTagPolicy
			if err := h.c.Get(h.ctx, client.ObjectKey{Name: name}, &o); err != nil {
				return err.Error()
			}
			c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionConflict)
			if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "k8s-namespace") {
				return fmt.Sprintf("Conflict is %+v", c)
			}
			return ""
		})
	}
	if g := disks.tags(d0)["k8s-namespace"]; g != shop {
		t.Errorf("a contested key was rewritten: k8s-namespace=%s", g)
	}
	if err := h.c.Delete(h.ctx, rival); err != nil {
		t.Fatal(err)
	}
	h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
}

// TestPolicyValidation: admission refuses an unknown placeholder; a key
// the resources' creator owns is an invalid spec the status names.
func TestPolicyValidation(t *testing.T) {
	disks := newAzureDisks(t)
	h := newHarness(t, azureOn(disks.env))
	bad := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-bad"},
		Spec: v1alpha1.WorkloadTagPolicySpec{Tags: []v1alpha1.WorkloadTag{tag("team", "${pod}")}}}
	if err := h.c.Create(h.ctx, bad); err == nil || !strings.Contains(err.Error(), "placeholders are") {
		t.Errorf("an unknown placeholder was admitted: %v", err)
	}
	empty := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-empty"}}
	if err := h.c.Create(h.ctx, empty); err == nil || !strings.Contains(err.Error(), "a policy lists tags, presets or both") {
		t.Errorf("a policy with neither tags nor presets was admitted: %v", err)
	}
	badLabel := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-badlabel"},
		Spec: v1alpha1.WorkloadTagPolicySpec{Presets: []v1alpha1.WorkloadTagPreset{{Name: v1alpha1.PresetKubecost, Labels: []string{"it's"}}}}}
	if err := h.c.Create(h.ctx, badLabel); err == nil || !strings.Contains(err.Error(), "labels[0]") {
		t.Errorf("a preset label that is no label key was admitted: %v", err)
	}
	preset := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-preset"},
		Spec: v1alpha1.WorkloadTagPolicySpec{Presets: []v1alpha1.WorkloadTagPreset{{Name: v1alpha1.PresetKubecost, Cluster: "prod", Labels: []string{"team"}}}}}
	if err := h.c.Create(h.ctx, preset); err != nil {
		t.Errorf("a policy of presets alone was refused: %v", err)
	}
	good := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-good"},
		Spec: v1alpha1.WorkloadTagPolicySpec{Tags: []v1alpha1.WorkloadTag{tag("team", "x-${labels['team']}-$y")}}}
	if err := h.c.Create(h.ctx, good); err != nil {
		t.Errorf("a valid template was refused: %v", err)
	}
	p := h.policy("creator", v1alpha1.ProviderAzure, tag("k8s-azure-created-by", "me"))
	got := h.waitReady(p.Name, metav1.ConditionFalse, workloadtags.ReasonInvalidSpec)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "Azure CSI drivers") {
		t.Errorf("the message does not name the creator: %s", c.Message)
	}
	p2 := h.policy("aws", v1alpha1.ProviderAWS, tag("team", "a"))
	h.waitReady(p2.Name, metav1.ConditionFalse, workloadtags.ReasonProviderNotConfigured)
}

// service creates a Service of type LoadBalancer in ns with labels.
func (h *harness) service(ns, name string, labels map[string]string) {
	h.t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := h.c.Create(h.ctx, svc); err != nil {
		h.t.Fatal(err)
	}
}

// publicIP creates a public IP as the Azure cloud provider does for the
// Services named in service (k8s-azure-service, comma-joined when shared).
func (d *azureDisks) publicIP(name, service string) string {
	d.t.Helper()
	id, err := d.env.Server.CreateResource(sub, d.rg, armsim.Resource{Type: armsim.TypePublicIP, Name: name,
		Tags: map[string]string{"k8s-azure-service": service, "k8s-azure-cluster-name": "aks"}})
	if err != nil {
		d.t.Fatal(err)
	}
	return id
}

// TestAzureServices runs a policy over Services of type LoadBalancer: the
// public IP the cloud provider made for one Service is tagged from the
// Service and its namespace; an IP two Services share is reported and left
// alone, as are IPs of unselected namespaces and Services of other types;
// a Service whose IP is not made yet is pending until it is.
func TestAzureServices(t *testing.T) {
	disks := newAzureDisks(t)
	h := newHarness(t, azureOn(disks.env))
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	h.service(shop, "web", map[string]string{"team": "payments"})
	h.service(shop, "a", nil)
	h.service(shop, "b", nil)
	h.service(shop, "api", nil)
	web := disks.publicIP("ip-web", shop+"/web")
	shared := disks.publicIP("ip-shared", shop+"/a,"+shop+"/b")
	other := disks.publicIP("ip-other", "elsewhere/x")

	p := h.objectPolicy("svc", v1alpha1.ProviderAzure, v1alpha1.WorkloadService, "k8s-service")
	got := h.waitReady(p.Name, metav1.ConditionFalse, workloadtags.ReasonPartiallyTagged)
	if s := got.Status; s.Resources != 1 || s.InSync != 1 || s.Shared != 2 || s.Pending != 1 {
		t.Errorf("status %+v, want 1 resource in sync, 2 shared, 1 pending", s)
	}
	want := map[string]map[string]string{
		web:    {"k8s-azure-service": shop + "/web", "k8s-azure-cluster-name": "aks", "cost-center": "cc-1", "k8s-service": shop + "/web", "team": "payments"},
		shared: {"k8s-azure-service": shop + "/a," + shop + "/b", "k8s-azure-cluster-name": "aks"},
		other:  {"k8s-azure-service": "elsewhere/x", "k8s-azure-cluster-name": "aks"},
	}
	for id, w := range want {
		if g := disks.tags(id); fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s carries %v, want %v", id, g, w)
		}
	}
	api := disks.publicIP("ip-api", shop+"/api")
	disks.waitTag(api, "k8s-service", shop+"/api")
	h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
}

// TestAzureIngresses: on Azure the Ingresses of the Application Gateway
// Ingress Controller (its IngressClass, or the legacy class annotation)
// share the one Application Gateway it manages, and those of Application
// Gateway for Containers (the ALB Controller's IngressClass) its traffic
// controller: each is counted shared, nothing is written; another
// controller's Ingress is not the policy's.
func TestAzureIngresses(t *testing.T) {
	disks := newAzureDisks(t)
	h := newHarness(t, azureOn(disks.env))
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-agic"}, Spec: networkingv1.IngressClassSpec{Controller: "azure/application-gateway"}}
	if err := h.c.Create(h.ctx, class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.c.Delete(h.ctx, class) })
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	h.ingress(shop, "store", class.Name, nil)
	legacy := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: shop, Name: "legacy",
		Annotations: map[string]string{"kubernetes.io/ingress.class": "azure/application-gateway"}},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	if err := h.c.Create(h.ctx, legacy); err != nil {
		t.Fatal(err)
	}
	agc := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-alb"}, Spec: networkingv1.IngressClassSpec{Controller: "alb.networking.azure.io/alb-controller"}}
	if err := h.c.Create(h.ctx, agc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.c.Delete(h.ctx, agc) })
	h.ingress(shop, "front", agc.Name, map[string]string{"alb.networking.azure.io/alb-name": "alb-test", "alb.networking.azure.io/alb-namespace": "alb-infra"})
	h.ingress(shop, "nginx", "nginx", nil)
	p := h.objectPolicy("ing", v1alpha1.ProviderAzure, v1alpha1.WorkloadIngress, "k8s-ingress")
	got := h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonNoResources)
	if s := got.Status; s.Resources != 0 || s.Shared != 3 {
		t.Errorf("status %+v, want the 2 Ingresses of the Application Gateway and the one of Application Gateway for Containers shared and nothing tagged", s)
	}
	for _, r := range h.records() {
		t.Errorf("a write: %+v", r)
	}
}
