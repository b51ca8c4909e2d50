package e2e_test

import (
	"fmt"
	"path/filepath"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
	"github.com/tagsync/tagsync/internal/testenv"
)

// The workload tags RBAC proof's objects.
const (
	// wtNS is the namespace of its claim and Ingress.
	wtNS = "wt-rbac"
	// wtPolicy is its WorkloadTagPolicy, over volumes and Ingresses.
	wtPolicy = "wt-rbac"
	// wtGroup is the IngressGroup its IngressClass's parameters name.
	wtGroup = "wt-rbac-group"
)

// workloadTagsSubject is the workload tags controller's part of the RBAC
// proof, on moto: a claim's EBS volume and the ALB of an Ingress whose
// IngressClass names IngressClassParams, both tagged from the namespace's
// label by one policy. Its pass lists every kind the controller watches,
// the IngressClasses (a pass over Ingresses) and gets the
// IngressClassParams (that class names them).
type workloadTagsSubject struct {
	*rbacFixture
	volume, alb string
}

func newWorkloadTagsSubject(f *rbacFixture) rbacSubject { return &workloadTagsSubject{rbacFixture: f} }

// installWorkloadTagsCRDs installs the CSI snapshot CRDs (from the module
// whose Go types the controller reads them with) and the AWS Load Balancer
// Controller's IngressClassParams (the minimal test CRD), so the
// controller watches the snapshots and reads the parameters.
func installWorkloadTagsCRDs(t testing.TB) {
	t.Helper()
	dir, err := testenv.ModuleDir("github.com/kubernetes-csi/external-snapshotter/client/v8")
	must(t, err)
	var crds []*unstructured.Unstructured
	for _, name := range []string{"snapshot.storage.k8s.io_volumesnapshots.yaml", "snapshot.storage.k8s.io_volumesnapshotcontents.yaml"} {
		rel, err := filepath.Rel(kube.RootDir, filepath.Join(dir, "config", "crd", name))
		must(t, err)
		crds = append(crds, readObjects(t, rel)...)
	}
	crds = append(crds, readObjects(t, "internal/controller/workloadtags/testdata/ingressclassparams.yaml")...)
	installCRDs(t, crds, schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshotContentList"},
		schema.GroupVersionKind{Group: "elbv2.k8s.aws", Version: "v1beta1", Kind: "IngressClassParamsList"})
}

// setup creates the volume and the ALB on moto, the namespace, claim,
// volume, IngressClass, parameters and Ingress, and the policy.
func (s *workloadTagsSubject) setup(t *testing.T) {
	out, err := ec2.NewFromConfig(s.moto.Config).CreateVolume(s.ctx, &ec2.CreateVolumeInput{
		AvailabilityZone: sdkaws.String(testenv.MotoRegion + "a"), Size: sdkaws.Int32(8),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeVolume, Tags: []ec2types.Tag{
			{Key: sdkaws.String("CSIVolumeName"), Value: sdkaws.String("pv-wt-rbac")}}}}})
	must(t, err)
	s.volume = *out.VolumeId
	s.alb = awstest.LoadBalancers(t, s.moto, 1, map[string]string{aws.IngressStackTag: wtGroup, "ingress.k8s.aws/resource": "LoadBalancer"})[0]

	create := createDeletedAtEnd(t, s.ctx, kube.Client)
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wtNS, Labels: map[string]string{"cost-center": "cc-7"}}})
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	create(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: wtNS, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: size}}})
	create(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-wt-rbac"},
		Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: s.volume}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: wtNS, Name: "data"}}})
	params := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"group": map[string]any{"name": wtGroup}}}}
	params.SetGroupVersionKind(schema.GroupVersionKind{Group: "elbv2.k8s.aws", Version: "v1beta1", Kind: "IngressClassParams"})
	params.SetName(wtGroup)
	create(params)
	apiGroup := "elbv2.k8s.aws"
	class := wtGroup
	create(&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: networkingv1.IngressClassSpec{Controller: "ingress.k8s.aws/alb",
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: &apiGroup, Kind: "IngressClassParams", Name: wtGroup}}})
	create(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: wtNS, Name: "store"},
		Spec: networkingv1.IngressSpec{IngressClassName: &class, DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}})
	create(&v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: wtPolicy},
		Spec: v1alpha1.WorkloadTagPolicySpec{Provider: v1alpha1.ProviderAWS,
			Resources:         []v1alpha1.WorkloadResource{v1alpha1.WorkloadPersistentVolume, v1alpha1.WorkloadIngress},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"cost-center": "cc-7"}},
			Tags:              []v1alpha1.WorkloadTag{{Key: "cost-center", Value: "${namespace.labels['cost-center']}"}}}})
}

// fullSync: the volume and the ALB tagged, the policy's status Ready, and
// its Wrote event in default.
func (s *workloadTagsSubject) fullSync(t *testing.T, _ *tagsyncProc) {
	for _, id := range []string{s.volume, s.alb} {
		eventually(t, id+" tagged", func() string {
			if g := awstest.Tags(t, s.moto, id); g["cost-center"] != "cc-7" {
				return fmt.Sprintf("tags %v", g)
			}
			return ""
		})
	}
	eventually(t, "WorkloadTagPolicy "+wtPolicy+" Ready=True (Tagged), 2 resources in sync", func() string {
		var p v1alpha1.WorkloadTagPolicy
		if err := kube.Client.Get(s.ctx, client.ObjectKey{Name: wtPolicy}, &p); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != workloadtags.ReasonTagged || p.Status.InSync != 2 {
			return fmt.Sprintf("status %+v", p.Status)
		}
		return ""
	})
	waitEvents(s.ctx, t, "default", workloadtags.ControllerName, wantEvent{regarding: wtPolicy, reason: workloadtags.ReasonWrote})
}

func (s *workloadTagsSubject) checks() []rbacCheck { return nil }

// trigger says what a run without the verb must do to need it. The
// kinds the controller watches are listed and watched by a fresh process;
// the IngressClasses and their parameters are read by a pass, and a fresh
// process passes a policy at once only when its status is not current
// (else at its next resync), so for those and the status the status is
// cleared first.
func (s *workloadTagsSubject) trigger(a *ablation) {
	switch a.resource {
	case "workloadtagpolicies/status", "ingressclasses", "ingressclassparams":
		a.prepare = clearStatus(s.ctx, kube.Client, &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: wtPolicy}})
	}
}
