package metadata_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// kube is the control plane shared by the package's tests; each test has
// its own namespace, cloud and controller manager (watching only that
// namespace), so tests run in parallel.
var kube *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, func(env *testenv.Env) { kube = env }) }

const (
	sub     = armsimtest.SubscriptionID
	waitFor = 60 * time.Second
)

var namespaces atomic.Int64

// harness is one test's namespace, clouds and controller.
type harness struct {
	t     *testing.T
	ctx   context.Context
	c     client.Client
	ns    string
	az    *armsimtest.Env
	extra []cloud.Provider
	audit *auditSink
	stop  func()
	// cached reads through the controller manager's cache, with its
	// field indexes.
	cached client.Client
	// other is a second namespace the controller also watches ("" if none).
	other string
	// eventOpts are the controller's event options (none: polling only).
	eventOpts operator.EventsOptions
	// wrapAzure, if set, wraps the Azure provider the controller uses.
	wrapAzure func(*azure.Provider) cloud.Provider
	// own, when set, records the Azure provider's writes (their echoes).
	own *cloud.OwnWrites
}

// auditSink is the harness's audit log: a buffer that can be made to fail,
// as a full disk does.
type auditSink struct {
	testenv.SyncBuffer
	// left is how many more records it takes; negative: any number.
	left atomic.Int64
}

// Write takes a record while any are left.
func (s *auditSink) Write(p []byte) (int, error) {
	if s.left.Load() == 0 {
		return 0, errors.New("no space left on device")
	}
	if len(p) > 0 {
		s.left.Add(-1)
	}
	return s.SyncBuffer.Write(p)
}

// takeRecords makes the sink take n more records (negative: any number)
// and fail after.
func (s *auditSink) takeRecords(n int64) { s.left.Store(n) }

// newHarness makes a namespace, starts armsim and the metadata controller
// with the Azure provider on it and the extra providers given; the test
// runs in parallel with the others (each has its own namespace).
func newHarness(t *testing.T, extra ...cloud.Provider) *harness {
	t.Helper()
	return newHarnessWith(t, func(*harness) {}, extra...)
}

// newHarnessWith is newHarness with configure applied to the harness
// before the controller starts.
func newHarnessWith(t *testing.T, configure func(*harness), extra ...cloud.Provider) *harness {
	t.Helper()
	t.Parallel()
	ns := fmt.Sprintf("md-%d-%d", time.Now().UnixNano()%1e6, namespaces.Add(1))
	h := &harness{t: t, ctx: context.Background(), c: kube.Client, ns: ns, az: armsimtest.Start(t),
		extra: extra, audit: &auditSink{}}
	h.audit.takeRecords(-1)
	configure(h)
	if err := h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	h.startController()
	t.Cleanup(func() {
		h.stop()
		h.az.HTTPClient.CloseIdleConnections()
	})
	return h
}

// startController starts a fresh provider and manager (as after a restart).
func (h *harness) startController() {
	h.t.Helper()
	mgr, err := operator.Build(h.ctx, kube.Config, operator.Options{
		MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Providers:   append([]cloud.Provider{h.azure()}, h.extra...),
		Controllers: []string{metadata.ControllerName},
		Namespaces:  h.namespaces(),
		Audit:       audit.New(h.audit),
		Events:      h.eventOpts,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.stop = testenv.StartManager(h.ctx, h.t, mgr)
	h.cached = mgr.GetClient()
}

// azure is the Azure provider the controller uses: azureProvider, wrapped
// by wrapAzure if set.
func (h *harness) azure() cloud.Provider {
	az := h.azureProvider()
	if h.wrapAzure != nil {
		return h.wrapAzure(az)
	}
	return az
}

// azureProvider is an Azure provider on the test's armsim.
func (h *harness) azureProvider() *azure.Provider {
	h.t.Helper()
	az, err := azure.NewProvider(h.ctx, azure.Config{ARMEndpoint: h.az.Server.URL(), ARMAudience: h.az.Server.URL(),
		DefaultSubscription: sub, HTTPClient: h.az.HTTPClient},
		azure.WithCredential(h.az.Credential), azure.WithRegisterer(prometheus.NewRegistry()),
		azure.WithPollFrequency(10*time.Millisecond), azure.WithThrottleGates(azure.NewThrottleGates()),
		azure.WithRetry(azure.Retry{MaxRetries: 5, RetryDelay: 20 * time.Millisecond, MaxRetryDelay: 2 * time.Second}),
		azure.WithOwnWrites(h.own))
	if err != nil {
		h.t.Fatal(err)
	}
	return az
}

// newEstateHarness is newHarness with an estate classified for infra
// (perType resources of each type), and the IDs of its resources and
// group.
func newEstateHarness(t *testing.T, infra string, perType int) (*harness, armsimtest.ClusterEstate, []string) {
	t.Helper()
	h := newHarness(t)
	e := h.estate(infra, perType)
	return h, e, allIDs(e)
}

// namespaces are the namespaces the test's controller watches.
func (h *harness) namespaces() []string {
	if h.other == "" {
		return []string{h.ns}
	}
	return []string{h.ns, h.other}
}

// estate seeds a cluster estate classified with kubernetes.io_cluster.<infra>=owned.
func (h *harness) estate(infra string, perType int) armsimtest.ClusterEstate {
	h.t.Helper()
	e := armsimtest.ClusterEstate{Infra: infra, PerType: perType, Tags: map[string]string{classifierOf(infra): "owned"}}
	if err := e.Seed(h.az.Server); err != nil {
		h.t.Fatal(err)
	}
	return e
}

// classifierOf is the Azure owned-tag name of an infra.
func classifierOf(infra string) string { return "kubernetes.io_cluster." + infra }

// create creates obj in the test's namespace.
func (h *harness) create(obj client.Object) {
	h.t.Helper()
	obj.SetNamespace(h.ns)
	if err := h.c.Create(h.ctx, obj); err != nil {
		h.t.Fatalf("create %s: %v", obj.GetName(), err)
	}
}

// azureMetadata creates an AzureMetadata.
func (h *harness) azureMetadata(name string, op v1alpha1.Opcode, resourceTags map[string]string, ignore ...string) *v1alpha1.AzureMetadata {
	o := build.AzureMetadata(name, build.Opcode(op), build.ResourceTags(resourceTags), build.IgnoreTags(ignore...))
	h.create(o)
	return o
}

// cloudMetadata creates a CloudMetadata referencing an AzureMetadata.
func (h *harness) cloudMetadata(name, azureRef string, limit v1alpha1.LimitPolicy, classifiers map[string]string) *v1alpha1.CloudMetadata {
	o := build.CloudMetadata(name, build.Classifiers(classifiers), build.Limit(limit))
	if azureRef != "" {
		build.AzureRef(azureRef)(o)
	}
	h.create(o)
	return o
}

// pass asks for one pass over the CloudMetadata and waits for exactly it.
func (h *harness) pass(name string) *v1alpha1.CloudMetadata {
	h.t.Helper()
	return testenv.Pass(h.t, h.c, &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}}, waitFor)
}

// waitReady waits until the CloudMetadata's Ready condition has status want
// for its current generation, and returns it.
func (h *harness) waitReady(name string, want metav1.ConditionStatus) *v1alpha1.CloudMetadata {
	h.t.Helper()
	return h.waitReadyWhere(name, want, "", func(*v1alpha1.CloudMetadata) bool { return true })
}

// waitReadyWhere is waitReady until ok accepts the status too (what says
// which pass it is: a pass that met a passing problem first also reports
// Ready=False).
func (h *harness) waitReadyWhere(name string, want metav1.ConditionStatus, what string, ok func(*v1alpha1.CloudMetadata) bool) *v1alpha1.CloudMetadata {
	h.t.Helper()
	cm := &v1alpha1.CloudMetadata{}
	testenv.Eventually(h.t, waitFor, "CloudMetadata "+name+" Ready="+string(want)+what, func() string {
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, cm); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(cm.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != want || cm.Status.ObservedGeneration != cm.Generation || !ok(cm) {
			return fmt.Sprintf("status %+v", cm.Status)
		}
		return ""
	})
	return cm
}

// waitServed waits until a pass has served the AzureMetadata's current
// generation (its Applied condition says so).
func (h *harness) waitServed(name string) {
	h.t.Helper()
	eventually(h.t, "a pass serving AzureMetadata "+name, func() string {
		o := h.azureStatus(name)
		c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionApplied)
		if c == nil || c.ObservedGeneration != o.Generation || o.Status.ObservedGeneration != o.Generation {
			return fmt.Sprintf("generation %d, status %+v", o.Generation, o.Status)
		}
		return ""
	})
}

// read reads the named object of the test's namespace into o.
func read[O client.Object](h *harness, name string, o O) O {
	h.t.Helper()
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, o); err != nil {
		h.t.Fatal(err)
	}
	return o
}

// azureStatus reads an AzureMetadata.
func (h *harness) azureStatus(name string) *v1alpha1.AzureMetadata {
	h.t.Helper()
	return read(h, name, &v1alpha1.AzureMetadata{})
}

// setTags sets tags on an armsim resource as an outside writer would,
// keeping its other tags.
func (h *harness) setTags(id string, set map[string]string) {
	h.t.Helper()
	if err := h.az.Server.SetTags(id, set); err != nil {
		h.t.Fatal(err)
	}
}

// seedTags sets tags on armsim resources as if they had been set long
// before: it waits until Resource Graph shows them (its indexing delay).
func (h *harness) seedTags(set map[string]string, ids ...string) {
	h.t.Helper()
	for _, id := range ids {
		h.setTags(id, set)
	}
	h.indexed(ids...)
}

// indexed waits until Resource Graph shows the latest tags of ids.
func (h *harness) indexed(ids ...string) {
	h.t.Helper()
	eventually(h.t, "Resource Graph showing the tags of "+strings.Join(ids, ", "), func() string {
		for _, id := range ids {
			if ok, err := h.az.Server.GraphShows(id); err != nil || !ok {
				return fmt.Sprintf("%s not indexed yet (%v)", id, err)
			}
		}
		return ""
	})
}

// update changes an object with fn, retrying on conflicts.
func (h *harness) update(obj client.Object, fn func()) {
	h.t.Helper()
	testenv.Update(h.ctx, h.t, h.c, obj, fn)
}

// tags reads a resource's tags from armsim.
func (h *harness) tags(id string) map[string]string {
	h.t.Helper()
	t, err := h.az.Server.Tags(id)
	if err != nil {
		h.t.Fatalf("tags of %s: %v", id, err)
	}
	return t
}

// writes is how many tag writes armsim has served.
func (h *harness) writes() int {
	c := h.az.Server.Calls()
	return c.Count("Tags.UpdateAtScope") + c.Count("Tags.CreateOrUpdateAtScope") + c.Count("Tags.DeleteAtScope")
}

// auditRecords parses the audit log's results (not the pending records).
func (h *harness) auditRecords() []audit.Record {
	h.t.Helper()
	var out []audit.Record
	for _, r := range h.auditLines() {
		if r.Result != audit.ResultPending {
			out = append(out, r)
		}
	}
	return out
}

// auditLines parses every line of the audit log, pending records included.
func (h *harness) auditLines() []audit.Record {
	h.t.Helper()
	return testenv.AuditRecords(h.t, h.audit.String())
}

// allIDs are the estate's resource and group IDs.
func allIDs(e armsimtest.ClusterEstate) []string {
	return append(e.ResourceIDs(), e.GroupIDs()...)
}

// eventually is testenv.Eventually with the suite's deadline.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	testenv.Eventually(t, waitFor, what, cond)
}
