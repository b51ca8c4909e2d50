package nodetags_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// planes are the control planes the package's tests share. NodeTagSyncs
// are cluster-scoped and select every Node, so a test that runs a
// controller takes a plane to itself (planes.Acquire) with its own nodes,
// NodeTagSyncs, armsim and controller manager; tests run in parallel, two
// at a time.
var planes *testenv.Pool

func TestMain(m *testing.M) { testenv.MainPool(m, 2, func(p *testenv.Pool) { planes = p }) }

// acquirePlane runs t in parallel with the package's other tests on a
// control plane of its own.
func acquirePlane(t *testing.T) *testenv.Env {
	t.Parallel()
	return planes.Acquire(t)
}

const (
	sub     = armsimtest.SubscriptionID
	waitFor = 30 * time.Second
)

// harness is one test's cloud, controller and objects.
type harness struct {
	t        *testing.T
	ctx      context.Context
	kube     *testenv.Env
	c        client.Client
	cloud    *armsim.Server
	env      *armsimtest.Env
	stop     func()
	requests atomic.Int64
	opts     []azure.Option
	hook     func(*http.Request)
	// gates are this test's throttle gates, kept across controller restarts
	// (as one process keeps them) and never shared with another test.
	gates *azure.ThrottleGates
	// rec is the running reconciler; emitted counts the events it emitted.
	rec     *nodetags.Reconciler
	emitted *countingRecorder
	// audit receives the controller's audit records.
	audit *testenv.SyncBuffer
	// provider, when set, builds the controller's provider instead of the
	// Azure provider on armsim (the cross-cloud suite's AWS on moto).
	provider func() aProvider
	// eventOpts are the controller's event options (none: polling only).
	eventOpts operator.EventsOptions
}

// countingRecorder passes events to the real recorder (and so to the API
// server) and counts them by reason and object, including repeats the
// broadcaster would fold into one event's series.
type countingRecorder struct {
	*notify.Recorder
	mu     sync.Mutex
	counts map[string]int
}

func (c *countingRecorder) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	c.mu.Lock()
	if m, err := meta.Accessor(regarding); err == nil {
		c.counts[reason+"/"+m.GetName()]++
	}
	c.mu.Unlock()
	c.Recorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// count is how many events with reason were emitted about the object.
func (c *countingRecorder) count(reason, objectName string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[reason+"/"+objectName]
}

// newHarness starts armsim and a controller manager for one test.
func newHarness(t *testing.T, opts ...azure.Option) *harness {
	return newHarnessWithTransport(t, nil, opts...)
}

// newHarnessWithTransport is newHarness with a hook that sees every ARM
// request the controller sends before it leaves.
func newHarnessWithTransport(t *testing.T, hook func(*http.Request), opts ...azure.Option) *harness {
	t.Helper()
	return newHarnessWith(t, func(h *harness) { h.hook = hook }, opts...)
}

// newHarnessWith is newHarness with configure applied to the harness
// before the controller starts.
func newHarnessWith(t *testing.T, configure func(*harness), opts ...azure.Option) *harness {
	t.Helper()
	env := armsimtest.Start(t)
	kube := acquirePlane(t)
	h := &harness{t: t, ctx: context.Background(), kube: kube, c: kube.Client, cloud: env.Server, env: env, opts: opts,
		gates: azure.NewThrottleGates(), audit: &testenv.SyncBuffer{}}
	configure(h)
	h.startController()
	t.Cleanup(func() {
		h.stop()
		h.cleanupObjects()
		env.HTTPClient.CloseIdleConnections()
	})
	return h
}

// startController starts a fresh manager and provider (as after a restart).
func (h *harness) startController() {
	h.t.Helper()
	provider := h.azureProvider
	if h.provider != nil {
		provider = h.provider
	}
	h.startManager(provider())
}

// azureProvider builds the Azure provider on the test's armsim.
func (h *harness) azureProvider() aProvider {
	h.t.Helper()
	opts := append([]azure.Option{
		azure.WithCredential(h.env.Credential),
		azure.WithRegisterer(prometheus.NewRegistry()),
		azure.WithPollFrequency(10 * time.Millisecond),
		azure.WithThrottleGates(h.gates),
		azure.WithRetry(azure.Retry{MaxRetries: 5, RetryDelay: 20 * time.Millisecond, MaxRetryDelay: 2 * time.Second}),
	}, h.opts...)
	httpClient := h.env.HTTPClient
	if h.hook != nil {
		httpClient = h.env.HookedClient(h.hook)
	}
	provider, err := azure.NewProvider(h.ctx, azure.Config{
		ARMEndpoint:         h.cloud.URL(),
		ARMAudience:         h.cloud.URL(),
		DefaultSubscription: sub,
		HTTPClient:          httpClient,
	}, opts...)
	if err != nil {
		h.t.Fatalf("building the Azure provider: %v", err)
	}
	return provider
}

// startManager starts a controller manager running the nodetags controller
// on provider.
func (h *harness) startManager(provider aProvider) {
	h.t.Helper()
	// The controller starts as `tagsync run` starts it (the registry,
	// through operator.Build), with the real event recorder wrapped to
	// count what it emits.
	rec, err := notify.NewRecorder(h.kube.Config, h.kube.Scheme, "tagsync-nodetags")
	if err != nil {
		h.t.Fatal(err)
	}
	h.emitted = &countingRecorder{Recorder: rec, counts: map[string]int{}}
	mgr, err := operator.Build(h.ctx, h.kube.Config, operator.Options{
		MetricsAddr: "0", ProbeAddr: "0", Provider: provider, SkipNameValidation: true,
		Controllers: []string{nodetags.ControllerName},
		Recorder:    func(string) events.EventRecorder { return h.emitted },
		Audit:       audit.New(h.audit),
		Events:      h.eventOpts,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := mgr.Add(rec); err != nil {
		h.t.Fatal(err)
	}
	h.rec = mgr.Controllers[nodetags.ControllerName].(*nodetags.Reconciler)
	h.stop = testenv.StartManager(h.ctx, h.t, mgr)
}

// cleanupObjects deletes the test's Nodes and NodeTagSyncs and waits until
// they are gone: tests share the API server, and a NodeTagSync left behind
// would be older than the next test's and claim its nodes.
func (h *harness) cleanupObjects() {
	h.t.Helper()
	cleanupObjects(h.t, h.c)
}

// cleanupObjects deletes every Node and NodeTagSync and waits until none is
// left.
func cleanupObjects(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{&v1alpha1.NodeTagSync{}, &corev1.Node{}} {
		if err := c.DeleteAllOf(ctx, obj); err != nil {
			t.Errorf("cleaning up: deleting every %T: %v", obj, err)
		}
	}
	testenv.Eventually(t, waitFor, "the test's Nodes and NodeTagSyncs gone", func() string {
		var syncs v1alpha1.NodeTagSyncList
		var nodes corev1.NodeList
		if err := c.List(ctx, &syncs); err != nil {
			return err.Error()
		}
		if err := c.List(ctx, &nodes); err != nil {
			return err.Error()
		}
		if n := len(syncs.Items) + len(nodes.Items); n > 0 {
			return fmt.Sprintf("%d NodeTagSyncs and %d Nodes left", len(syncs.Items), len(nodes.Items))
		}
		return ""
	})
}

// sync creates a NodeTagSync with the given spec tweaks.
func (h *harness) sync(name string, mutate func(*v1alpha1.NodeTagSyncSpec)) *v1alpha1.NodeTagSync {
	h.t.Helper()
	nts := build.NodeTagSync(name, build.NodeTagSyncSpec(mutate))
	if err := h.c.Create(h.ctx, nts); err != nil {
		h.t.Fatalf("creating NodeTagSync %s: %v", name, err)
	}
	return nts
}

// syncNow asks the controller for a pass with fresh cloud reads and returns
// the request's value.
func (h *harness) syncNow(name string) string {
	h.t.Helper()
	req := fmt.Sprint(h.requests.Add(1))
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.SyncRequestAnnotation, req)
	nts := &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := h.c.Patch(h.ctx, nts, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		h.t.Fatal(err)
	}
	return req
}

// syncAndWait asks for a pass and waits for exactly that pass: the status
// says it served this request, so it cannot be an earlier pass's status.
func (h *harness) syncAndWait(name string) *v1alpha1.NodeTagSync {
	h.t.Helper()
	nts := &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: name}}
	testenv.RequestPass(h.t, h.c, nts, v1alpha1.SyncRequestAnnotation, testenv.LastSyncRequest, waitFor)
	return nts
}

// resourceGroup creates a resource group.
func (h *harness) resourceGroup(name string) {
	h.t.Helper()
	if _, err := h.cloud.CreateResourceGroup(sub, armsim.ResourceGroup{Name: name, Location: "westeurope"}); err != nil {
		h.t.Fatal(err)
	}
}

// scaleSet creates a Uniform scale set with n instances and returns its ID
// and the instances' providerIDs.
func (h *harness) scaleSet(rg, name string, n int, tags map[string]string) (string, []string) {
	h.t.Helper()
	id, err := h.cloud.CreateScaleSet(sub, rg, armsim.ScaleSet{Name: name, Location: "westeurope", Mode: armsim.Uniform, Tags: tags})
	if err != nil {
		h.t.Fatal(err)
	}
	ids, err := h.cloud.AddInstances(id, n)
	if err != nil {
		h.t.Fatal(err)
	}
	var pids []string
	for _, i := range ids {
		pids = append(pids, "azure://"+i)
	}
	return id, pids
}

// scaleSetOfNodes creates the resource group rg-<name>, a scale set "pool"
// of n instances tagged tags, and a Node <name>-<i> on each instance; it
// returns the scale set's ID.
func (h *harness) scaleSetOfNodes(name string, n int, tags map[string]string) string {
	h.t.Helper()
	h.resourceGroup("rg-" + name)
	id, pids := h.scaleSet("rg-"+name, "pool", n, tags)
	for i, pid := range pids {
		h.node(fmt.Sprintf("%s-%d", name, i), pid, nil, nil)
	}
	return id
}

// syncedScaleSetOfNodes is scaleSetOfNodes with the NodeTagSync <name>
// created and every Node labelled with the scale set's tags.
func (h *harness) syncedScaleSetOfNodes(name string, n int, tags map[string]string) string {
	h.t.Helper()
	id := h.scaleSetOfNodes(name, n, tags)
	h.sync(name, nil)
	for i := range n {
		for k, v := range tags {
			h.waitLabel(fmt.Sprintf("%s-%d", name, i), "azure.tags/"+k, v)
		}
	}
	return id
}

// labelFansOut starts from a synced scale set of n Nodes (env=prod), sets
// team=blue on the first Node and waits for the tag on the scale set and
// the label on every other Node. It returns the scale set's ID.
func (h *harness) labelFansOut(name string, n int) string {
	h.t.Helper()
	ssID := h.syncedScaleSetOfNodes(name, n, map[string]string{"env": "prod"})
	setLabel(h, name+"-0", "azure.tags/team", "blue")
	h.waitTag(ssID, "team", "blue")
	for i := 1; i < n; i++ {
		h.waitLabel(fmt.Sprintf("%s-%d", name, i), "azure.tags/team", "blue")
	}
	return ssID
}

// vmInGroup creates the resource group rg and a standalone VM in it, and
// returns the VM's ID and providerID.
func (h *harness) vmInGroup(rg, name string, tags map[string]string) (string, string) {
	h.t.Helper()
	h.resourceGroup(rg)
	return h.vm(rg, name, tags)
}

// vm creates a standalone VM and returns its ID and providerID.
func (h *harness) vm(rg, name string, tags map[string]string) (string, string) {
	h.t.Helper()
	id, err := h.cloud.CreateVM(sub, rg, armsim.VirtualMachine{Name: name, Tags: tags})
	if err != nil {
		h.t.Fatal(err)
	}
	return id, "azure://" + id
}

// node creates a Node.
func (h *harness) node(name, providerID string, labels map[string]string, base map[string]string) {
	h.t.Helper()
	n := build.Node(name, build.Labels(labels), build.ProviderID(providerID))
	if base != nil {
		build.Annotation(v1alpha1.LastSyncedTagsAnnotation, jsonObject(base))(n)
	}
	if err := h.c.Create(h.ctx, n); err != nil {
		h.t.Fatalf("creating node %s: %v", name, err)
	}
}

func jsonObject(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%q:%q", k, v))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// labels returns a Node's labels (nil when it does not exist).
func (h *harness) labels(name string) map[string]string {
	var n corev1.Node
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: name}, &n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		h.t.Fatal(err)
	}
	return n.Labels
}

// tags returns a resource's tags.
func (h *harness) tags(id string) map[string]string {
	t, err := h.cloud.Tags(id)
	if err != nil {
		h.t.Fatal(err)
	}
	return t
}

// eventually waits until cond returns "" (see testenv.Eventually).
func (h *harness) eventually(what string, cond func() string) {
	h.t.Helper()
	testenv.Eventually(h.t, waitFor, what, cond)
}

// waitLabel waits until the node's label has the value ("" with absent=true
// waits for it to be gone).
func (h *harness) waitLabel(node, key, value string) {
	h.t.Helper()
	h.waitValue("label on "+node, key, value, func() map[string]string { return h.labels(node) })
}

// waitTag waits until the resource's tag has the value (or is absent).
func (h *harness) waitTag(id, name, value string) {
	h.t.Helper()
	h.waitValue("tag on "+id, name, value, func() map[string]string { return h.tags(id) })
}

// waitValue waits until read()[key] is value, or is gone when value is
// absent.
func (h *harness) waitValue(what, key, value string, read func() map[string]string) {
	h.t.Helper()
	h.waitValueSaying(what, key, value, read, func() string { return "" })
}

// waitValueSaying is waitValue whose failure also says what say returns
// (e.g. the status of the object that should have written the value).
func (h *harness) waitValueSaying(what, key, value string, read func() map[string]string, say func() string) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%s %s=%s", what, key, value), func() string {
		all := read()
		got, ok := all[key]
		switch {
		case value == absent && ok:
			return fmt.Sprintf("still %q%s", got, say())
		case value != absent && (!ok || got != value):
			return fmt.Sprintf("is %q (present %v); all %v%s", got, ok, all, say())
		}
		return ""
	})
}

// statusOf says, for a failed wait, how the NodeTagSync name last
// reported: its counts, conflicts and Ready condition.
func (h *harness) statusOf(name string) func() string {
	return func() string {
		var nts v1alpha1.NodeTagSync
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: name}, &nts); err != nil {
			return "; NodeTagSync " + name + ": " + err.Error()
		}
		s := nts.Status
		ready := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReady)
		return fmt.Sprintf("; NodeTagSync %s: synced %d, errors %d, conflicts %v, Ready %+v", name, s.SyncedNodes, s.ErrorCount, s.Conflicts, ready)
	}
}

// absent stands for "no such label or tag" in waits.
const absent = "\x00absent"

// passDone waits until the NodeTagSync's status describes its current
// generation and sync request, after a pass that counted want nodes.
func (h *harness) passDone(name string, want int32) *v1alpha1.NodeTagSync {
	h.t.Helper()
	return h.waitStatus(name, "a finished pass of "+name, func(nts *v1alpha1.NodeTagSync) string {
		ready := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || nts.Status.ObservedGeneration != nts.Generation {
			return "no status for the current generation yet"
		}
		if got := nts.Status.SyncedNodes + nts.Status.UnmanagedNodes + nts.Status.ErrorCount; got != want {
			return fmt.Sprintf("status counts %d nodes, want %d: %+v", got, want, nts.Status)
		}
		return ""
	})
}

// waitStatus waits until check passes on the NodeTagSync name and returns
// it as check saw it.
func (h *harness) waitStatus(name, what string, check func(*v1alpha1.NodeTagSync) string) *v1alpha1.NodeTagSync {
	h.t.Helper()
	var nts v1alpha1.NodeTagSync
	h.eventually(what, func() string {
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: name}, &nts); err != nil {
			return err.Error()
		}
		return check(&nts)
	})
	return &nts
}

// readyBecause checks that Ready is False for reason.
func readyBecause(reason string) func(*v1alpha1.NodeTagSync) string {
	return func(nts *v1alpha1.NodeTagSync) string {
		if c := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason {
			return fmt.Sprintf("Ready = %+v", c)
		}
		return ""
	}
}

// events lists the events with reason about an object.
func (h *harness) events(reason, objectName string) []string {
	var list eventsv1.EventList
	if err := h.c.List(h.ctx, &list); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Name == objectName {
			out = append(out, e.Note)
		}
	}
	return out
}

func (h *harness) waitEvent(reason, objectName string) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("a %s event about %s", reason, objectName), func() string {
		if len(h.events(reason, objectName)) == 0 {
			return "none yet"
		}
		return ""
	})
}

func (h *harness) writes() int {
	c := h.cloud.Calls()
	n := 0
	for _, op := range c.Ops() {
		if strings.HasSuffix(op, ".Update") || strings.HasSuffix(op, "UpdateAtScope") || strings.HasSuffix(op, "CreateOrUpdateAtScope") || strings.HasSuffix(op, "DeleteAtScope") {
			n += c.Count(op)
		}
	}
	return n
}
