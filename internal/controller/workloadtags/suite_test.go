package workloadtags_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
)

// planes are the control planes the package's tests share. Policies,
// PersistentVolumes and Namespaces are cluster-scoped, so a test takes a
// plane to itself (its own armsim or moto and controller manager); tests
// run in parallel, two at a time. Each test's namespaces carry a label of
// its own, which its policies select.
var planes *testenv.Pool

// TestMain starts the planes with the CSI snapshot API's CRDs, from the
// module whose Go types the controller reads them with, and a minimal CRD
// of the AWS Load Balancer Controller's IngressClassParams (testdata).
func TestMain(m *testing.M) {
	dir, err := testenv.ModuleDir("github.com/kubernetes-csi/external-snapshotter/client/v8")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	crds := filepath.Join(dir, "config", "crd")
	opts := testenv.Options{ExtraCRDDirs: []string{
		filepath.Join(crds, "snapshot.storage.k8s.io_volumesnapshots.yaml"),
		filepath.Join(crds, "snapshot.storage.k8s.io_volumesnapshotcontents.yaml"),
		"internal/controller/workloadtags/testdata/ingressclassparams.yaml"}}
	testenv.MainPoolWith(m, 2, opts, func(p *testenv.Pool) { planes = p })
}

const (
	sub     = armsimtest.SubscriptionID
	waitFor = 60 * time.Second
)

var tests atomic.Int64

// harness is one test's plane, cloud and controller.
type harness struct {
	t    *testing.T
	ctx  context.Context
	kube *testenv.Env
	c    client.Client
	// run labels the test's namespaces (tagsync-test=<run>).
	run   string
	audit *testenv.SyncBuffer
	stop  func()
}

// newHarness takes a plane and starts the workload tags controller on
// provider.
func newHarness(t *testing.T, provider func(*harness) cloud.Provider, opts ...func(*operator.Options)) *harness {
	t.Helper()
	t.Parallel()
	kube := planes.Acquire(t)
	h := &harness{t: t, ctx: context.Background(), kube: kube, c: kube.Client,
		run: fmt.Sprintf("wt%d-%d", time.Now().UnixNano()%1e6, tests.Add(1)), audit: &testenv.SyncBuffer{}}
	h.start(provider, opts...)
	t.Cleanup(func() {
		h.stop()
		if err := h.c.DeleteAllOf(h.ctx, &v1alpha1.WorkloadTagPolicy{}); err != nil {
			t.Errorf("cleaning up the policies: %v", err)
		}
	})
	return h
}

// start builds and starts a manager running the controller on provider.
func (h *harness) start(provider func(*harness) cloud.Provider, opts ...func(*operator.Options)) {
	h.t.Helper()
	o := operator.Options{
		MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Providers:   []cloud.Provider{provider(h)},
		Controllers: []string{workloadtags.ControllerName},
		Audit:       audit.New(h.audit),
	}
	for _, f := range opts {
		f(&o)
	}
	mgr, err := operator.Build(h.ctx, h.kube.Config, o)
	if err != nil {
		h.t.Fatal(err)
	}
	h.stop = testenv.StartManager(h.ctx, h.t, mgr)
}

// restart stops the manager and starts another, with no memory of the
// first (as a new leader or a restarted process), on provider.
func (h *harness) restart(provider func(*harness) cloud.Provider, opts ...func(*operator.Options)) {
	h.t.Helper()
	h.stop()
	h.start(provider, opts...)
}

// azureOn returns an Azure provider on env.
func azureOn(env *armsimtest.Env) func(*harness) cloud.Provider {
	return func(h *harness) cloud.Provider {
		p, err := azure.NewProvider(h.ctx, azure.Config{ARMEndpoint: env.Server.URL(), ARMAudience: env.Server.URL(),
			DefaultSubscription: sub, HTTPClient: env.HTTPClient},
			azure.WithCredential(env.Credential), azure.WithRegisterer(prometheus.NewRegistry()),
			azure.WithPollFrequency(10*time.Millisecond), azure.WithThrottleGates(azure.NewThrottleGates()),
			azure.WithRetry(azure.Retry{MaxRetries: 5, RetryDelay: 20 * time.Millisecond, MaxRetryDelay: 2 * time.Second}))
		if err != nil {
			h.t.Fatal(err)
		}
		return p
	}
}

// namespace creates a namespace of the test (name prefixed with its run)
// with labels, and returns its name.
func (h *harness) namespace(name string, labels map[string]string) string {
	h.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-" + name, Labels: map[string]string{"tagsync-test": h.run}}}
	for k, v := range labels {
		ns.Labels[k] = v
	}
	if err := h.c.Create(h.ctx, ns); err != nil {
		h.t.Fatal(err)
	}
	return ns.Name
}

// setNamespaceLabel sets (or with "" removes) a label of a namespace.
func (h *harness) setNamespaceLabel(ns, key, value string) {
	h.t.Helper()
	var o corev1.Namespace
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: ns}, &o); err != nil {
		h.t.Fatal(err)
	}
	before := o.DeepCopy()
	if value == "" {
		delete(o.Labels, key)
	} else {
		o.Labels[key] = value
	}
	if err := h.c.Patch(h.ctx, &o, client.MergeFrom(before)); err != nil {
		h.t.Fatal(err)
	}
}

// claimVolume creates a claim in ns with labels, and a PersistentVolume
// bound to it whose source is src; it returns the volume's name.
func (h *harness) claimVolume(ns, name string, labels map[string]string, src corev1.PersistentVolumeSource) string {
	h.t.Helper()
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: size}}}
	if err := h.c.Create(h.ctx, pvc); err != nil {
		h.t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: src, ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name}}}
	if err := h.c.Create(h.ctx, pv); err != nil {
		h.t.Fatal(err)
	}
	return pv.Name
}

// csi is a CSI volume source.
func csi(driver, handle string) corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}}
}

// policy creates a policy selecting the test's namespaces.
func (h *harness) policy(name string, provider v1alpha1.Provider, tags ...v1alpha1.WorkloadTag) *v1alpha1.WorkloadTagPolicy {
	h.t.Helper()
	p := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-" + name},
		Spec: v1alpha1.WorkloadTagPolicySpec{Provider: provider, Tags: tags,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tagsync-test": h.run}}}}
	if err := h.c.Create(h.ctx, p); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// tag is a WorkloadTag.
func tag(key, value string) v1alpha1.WorkloadTag { return v1alpha1.WorkloadTag{Key: key, Value: value} }

// waitReady waits until the policy's Ready condition has status and
// reason for its current generation, and returns the policy.
func (h *harness) waitReady(name string, status metav1.ConditionStatus, reason string) *v1alpha1.WorkloadTagPolicy {
	h.t.Helper()
	var p v1alpha1.WorkloadTagPolicy
	testenv.Eventually(h.t, waitFor, fmt.Sprintf("policy %s Ready=%s (%s)", name, status, reason), func() string {
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: name}, &p); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.ObservedGeneration != p.Generation || c.Status != status || c.Reason != reason {
			return fmt.Sprintf("Ready is %+v", c)
		}
		return ""
	})
	return &p
}

// pass asks for one pass over the policy and returns it as that pass left it.
func (h *harness) pass(p *v1alpha1.WorkloadTagPolicy) *v1alpha1.WorkloadTagPolicy {
	h.t.Helper()
	return testenv.Pass(h.t, h.c, &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: p.Name}}, waitFor)
}

// records are the audit log's records so far.
func (h *harness) records() []audit.Record { return testenv.AuditRecords(h.t, h.audit.String()) }
