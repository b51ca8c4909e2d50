package workloadtags_test

import (
	"fmt"
	"maps"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
	"github.com/tagsync/tagsync/internal/testenv"
)

// createVolume creates an EBS volume as the EBS CSI driver does, with its
// creator tags, and returns its ID.
func createVolume(t *testing.T, c *ec2.Client, pv string) string {
	t.Helper()
	out, err := c.CreateVolume(t.Context(), &ec2.CreateVolumeInput{AvailabilityZone: sdkaws.String(testenv.MotoRegion + "a"), Size: sdkaws.Int32(8),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeVolume, Tags: []ec2types.Tag{
			{Key: sdkaws.String("CSIVolumeName"), Value: sdkaws.String(pv)},
			{Key: sdkaws.String("ebs.csi.aws.com/cluster"), Value: sdkaws.String("true")}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return *out.VolumeId
}

// TestAWSVolumes runs a policy over the EBS volumes of claims on moto
// (behind the AWS fidelity layer): volumes that need the same tags are
// written in one CreateTags, an in-tree volume ID (aws://zone/vol-...) is
// understood, an EFS share is reported as shared, an unchanged resync
// reads once and writes nothing, and a namespace's label change retags
// its volumes in one call.
func TestAWSVolumes(t *testing.T) {
	moto := testenv.StartMoto(t)
	var provider *aws.Provider
	h := newHarness(t, func(*harness) cloud.Provider { provider = awstest.Provider(t, moto); return provider })
	ec2c := ec2.NewFromConfig(moto.Config)
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	web := h.namespace("web", map[string]string{"cost-center": "cc-2"})
	v0, v1, v2 := createVolume(t, ec2c, "pv-0"), createVolume(t, ec2c, "pv-1"), createVolume(t, ec2c, "pv-2")
	h.claimVolume(shop, "data-0", nil, csi("ebs.csi.aws.com", v0))
	h.claimVolume(shop, "data-1", nil, corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{
		VolumeID: "aws://" + testenv.MotoRegion + "a/" + v1}})
	h.claimVolume(web, "cache", nil, csi("ebs.csi.aws.com", v2))
	h.claimVolume(web, "shared", nil, csi("efs.csi.aws.com", "fs-0123456789abcdef0"))

	// Created suspended until a pass has seen every volume: on a loaded
	// machine the controller's cache may show the volumes over several
	// passes, and the batching asserted below is of one pass.
	p := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-costs"},
		Spec: v1alpha1.WorkloadTagPolicySpec{Provider: v1alpha1.ProviderAWS, Suspend: true,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tagsync-test": h.run}},
			Tags:              []v1alpha1.WorkloadTag{tag("cost-center", "${namespace.labels['cost-center']}"), tag("k8s-namespace", "${namespace}")}}}
	if err := h.c.Create(h.ctx, p); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitFor, "a suspended pass seeing the 3 volumes", func() string {
		got := h.pass(p)
		if got.Status.Resources != 3 || got.Status.Shared != 1 {
			return fmt.Sprintf("status %+v", got.Status)
		}
		return ""
	})
	if n := provider.Calls()["ec2:CreateTags"]; n != 0 {
		t.Fatalf("a suspended policy wrote: %d CreateTags", n)
	}
	if err := h.c.Patch(h.ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))); err != nil {
		t.Fatal(err)
	}
	got := h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
	if s := got.Status; s.Resources != 3 || s.InSync != 3 || s.Shared != 1 {
		t.Errorf("status %+v, want 3 resources in sync and 1 shared", s)
	}
	for id, w := range map[string]map[string]string{
		v0: {"cost-center": "cc-1", "k8s-namespace": shop, "CSIVolumeName": "pv-0", "ebs.csi.aws.com/cluster": "true"},
		v1: {"cost-center": "cc-1", "k8s-namespace": shop, "CSIVolumeName": "pv-1", "ebs.csi.aws.com/cluster": "true"},
		v2: {"cost-center": "cc-2", "k8s-namespace": web, "CSIVolumeName": "pv-2", "ebs.csi.aws.com/cluster": "true"},
	} {
		if g := awstest.Tags(t, moto, id); fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s carries %v, want %v", id, g, w)
		}
	}
	if n := provider.Calls()["ec2:CreateTags"]; n != 2 {
		t.Errorf("%d CreateTags calls, want 2 (one per namespace: its volumes need the same tags)", n)
	}

	writes := provider.Calls()["ec2:CreateTags"]
	testenv.Eventually(t, waitFor, "an unchanged resync alone", func() string {
		reads := provider.Calls()["ec2:DescribeVolumes"]
		h.pass(p)
		if n := provider.Calls()["ec2:CreateTags"] - writes; n != 0 {
			t.Errorf("an unchanged resync sent %d CreateTags", n)
		}
		if n := provider.Calls()["ec2:DescribeVolumes"] - reads; n != 1 {
			return fmt.Sprintf("%d DescribeVolumes, want 1", n)
		}
		return ""
	})

	h.setNamespaceLabel(shop, "cost-center", "cc-9")
	testenv.Eventually(t, waitFor, "the shop volumes retagged", func() string {
		for _, id := range []string{v0, v1} {
			if g := awstest.Tags(t, moto, id)["cost-center"]; g != "cc-9" {
				return fmt.Sprintf("%s has cost-center=%s", id, g)
			}
		}
		// The provider counts a call once its answer is back, after moto
		// shows the tags.
		if provider.Calls()["ec2:CreateTags"] == writes {
			return "the write is not counted yet"
		}
		return ""
	})
	if n := provider.Calls()["ec2:CreateTags"] - writes; n != 1 {
		t.Errorf("the namespace change took %d CreateTags, want 1", n)
	}
	if g := awstest.Tags(t, moto, v2)["cost-center"]; g != "cc-2" {
		t.Errorf("another namespace's volume was retagged: %s", g)
	}
}

// TestAWSServices runs a policy over Services of type LoadBalancer on moto:
// the load balancer the AWS cloud provider made for one Service
// (kubernetes.io/service-name) and the one the AWS Load Balancer Controller
// made for another (service.k8s.aws/stack) are tagged through the Tagging
// API, the creators' own tags kept; a Service whose load balancer is not
// made yet is pending until it is; a load balancer of an unselected
// namespace is left alone.
func TestAWSServices(t *testing.T) {
	moto := testenv.StartMoto(t)
	var provider *aws.Provider
	h := newHarness(t, func(*harness) cloud.Provider { provider = awstest.Provider(t, moto); return provider })
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	h.service(shop, "web", map[string]string{"team": "payments"})
	h.service(shop, "api", nil)
	h.service(shop, "late", nil)
	cluster := map[string]string{"kubernetes.io/cluster/c1": "owned"}
	web := awstest.LoadBalancers(t, moto, 1, merge(cluster, map[string]string{aws.ServiceNameTag: shop + "/web"}))[0]
	api := awstest.LoadBalancers(t, moto, 1, map[string]string{aws.ServiceStackTag: shop + "/api", "elbv2.k8s.aws/cluster": "c1"})[0]
	other := awstest.LoadBalancers(t, moto, 1, merge(cluster, map[string]string{aws.ServiceNameTag: "elsewhere/x"}))[0]

	p := h.objectPolicy("svc", v1alpha1.ProviderAWS, v1alpha1.WorkloadService, "k8s-service")
	got := h.waitReady(p.Name, metav1.ConditionFalse, workloadtags.ReasonPartiallyTagged)
	if s := got.Status; s.Resources != 2 || s.InSync != 2 || s.Pending != 1 {
		t.Errorf("status %+v, want 2 resources in sync and 1 pending", s)
	}
	for id, w := range map[string]map[string]string{
		web:   merge(cluster, map[string]string{aws.ServiceNameTag: shop + "/web", "cost-center": "cc-1", "k8s-service": shop + "/web", "team": "payments"}),
		api:   {aws.ServiceStackTag: shop + "/api", "elbv2.k8s.aws/cluster": "c1", "cost-center": "cc-1", "k8s-service": shop + "/api"},
		other: merge(cluster, map[string]string{aws.ServiceNameTag: "elsewhere/x"}),
	} {
		if g := awstest.Tags(t, moto, id); fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s carries %v, want %v", id, g, w)
		}
	}
	if n := provider.Calls()["tag:TagResources"]; n != 2 {
		t.Errorf("%d TagResources calls, want 2 (the two load balancers need different tags)", n)
	}

	late := awstest.LoadBalancers(t, moto, 1, merge(cluster, map[string]string{aws.ServiceNameTag: shop + "/late"}))[0]
	testenv.Eventually(t, waitFor, "the late Service's load balancer tagged", func() string {
		if g := awstest.Tags(t, moto, late)["k8s-service"]; g != shop+"/late" {
			return fmt.Sprintf("k8s-service=%q", g)
		}
		return ""
	})
	h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
}

// merge returns a's and b's entries in one new map.
func merge(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// ingress creates an Ingress in ns of class, with annotations.
func (h *harness) ingress(ns, name, class string, annotations map[string]string) {
	h.t.Helper()
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: networkingv1.IngressSpec{IngressClassName: &class, DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	if err := h.c.Create(h.ctx, ing); err != nil {
		h.t.Fatal(err)
	}
}

// TestAWSIngresses runs a policy over Ingresses on moto: the ALB the AWS
// Load Balancer Controller made for an Ingress (ingress.k8s.aws/stack =
// namespace/name) is tagged for it; the ALB of an IngressGroup two
// Ingresses share is reported and left alone; an Ingress of a class whose
// IngressClassParams names a group is found by that group's stack; an
// Ingress of another controller's class is not the policy's.
func TestAWSIngresses(t *testing.T) {
	moto := testenv.StartMoto(t)
	h := newHarness(t, func(*harness) cloud.Provider { return awstest.Provider(t, moto) })
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-alb"}, Spec: networkingv1.IngressClassSpec{Controller: "ingress.k8s.aws/alb"}}
	if err := h.c.Create(h.ctx, class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.c.Delete(h.ctx, class) })
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	h.ingress(shop, "store", class.Name, nil)
	h.ingress(shop, "a", class.Name, map[string]string{"alb.ingress.kubernetes.io/group.name": h.run + "-shared"})
	h.ingress(shop, "b", class.Name, map[string]string{"alb.ingress.kubernetes.io/group.name": h.run + "-shared"})
	h.ingress(shop, "nginx", "nginx", nil)
	grouped := h.groupedClass(h.run + "-grouped")
	h.ingress(shop, "solo", grouped, nil)
	lbc := map[string]string{"elbv2.k8s.aws/cluster": "c1", "ingress.k8s.aws/resource": "LoadBalancer"}
	store := awstest.LoadBalancers(t, moto, 1, merge(lbc, map[string]string{aws.IngressStackTag: shop + "/store"}))[0]
	solo := awstest.LoadBalancers(t, moto, 1, merge(lbc, map[string]string{aws.IngressStackTag: h.run + "-grouped"}))[0]
	shared := awstest.LoadBalancers(t, moto, 1, merge(lbc, map[string]string{aws.IngressStackTag: h.run + "-shared"}))[0]

	p := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-ing"},
		Spec: v1alpha1.WorkloadTagPolicySpec{Provider: v1alpha1.ProviderAWS,
			Resources:         []v1alpha1.WorkloadResource{v1alpha1.WorkloadIngress},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tagsync-test": h.run}},
			Tags:              []v1alpha1.WorkloadTag{tag("cost-center", "${namespace.labels['cost-center']}"), tag("k8s-ingress", "${namespace}/${name}")}}}
	if err := h.c.Create(h.ctx, p); err != nil {
		t.Fatal(err)
	}
	got := h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
	if s := got.Status; s.Resources != 2 || s.InSync != 2 || s.Shared != 2 {
		t.Errorf("status %+v, want 2 ALBs in sync and 2 Ingresses sharing one", s)
	}
	if g := awstest.Tags(t, moto, solo); g["k8s-ingress"] != shop+"/solo" {
		t.Errorf("the ALB of the IngressGroup its class's IngressClassParams names (one Ingress in it) carries %v", g)
	}
	if g := awstest.Tags(t, moto, store); g["k8s-ingress"] != shop+"/store" || g["cost-center"] != "cc-1" || g["ingress.k8s.aws/stack"] != shop+"/store" {
		t.Errorf("%s carries %v", store, g)
	}
	if g := awstest.Tags(t, moto, shared); fmt.Sprint(g) != fmt.Sprint(merge(lbc, map[string]string{aws.IngressStackTag: h.run + "-shared"})) {
		t.Errorf("the IngressGroup's ALB was tagged: %v", g)
	}
}

// groupedClass creates an IngressClass of the AWS Load Balancer Controller
// whose IngressClassParams put its Ingresses in the IngressGroup group,
// and returns its name.
func (h *harness) groupedClass(group string) string {
	h.t.Helper()
	params := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"group": map[string]any{"name": group}}}}
	params.SetGroupVersionKind(schema.GroupVersionKind{Group: "elbv2.k8s.aws", Version: "v1beta1", Kind: "IngressClassParams"})
	params.SetName(group + "-params")
	apiGroup := "elbv2.k8s.aws"
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: group}, Spec: networkingv1.IngressClassSpec{Controller: "ingress.k8s.aws/alb",
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: &apiGroup, Kind: "IngressClassParams", Name: params.GetName()}}}
	for _, o := range []client.Object{params, class} {
		if err := h.c.Create(h.ctx, o); err != nil {
			h.t.Fatal(err)
		}
		h.t.Cleanup(func() { _ = h.c.Delete(h.ctx, o) })
	}
	return class.Name
}
