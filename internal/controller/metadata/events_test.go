package metadata_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/cloudchangetest"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
)

// newEventsHarness starts a metadata controller that takes cloud changes
// from hub, with one source that is up, on armsim and the extra providers.
func newEventsHarness(t *testing.T, extra ...cloud.Provider) (*harness, *cloudchange.Hub, *cloudchangetest.Source) {
	hub := cloudchange.NewHub(cloudchange.HubOptions{ResyncInterval: 2 * time.Hour, HealthEvery: 20 * time.Millisecond})
	src := cloudchangetest.NewSource(t.Name())
	h := newHarnessWith(t, func(h *harness) {
		h.eventOpts = operator.EventsOptions{Hub: hub, Sources: []operator.EventSource{operator.BuiltSource(src)}}
	}, extra...)
	return h, hub, src
}

// applied creates an estate classified for infra and a CloudMetadata
// <infra> (with its AzureMetadata) that adds env=prod to it, and waits
// until it is applied.
func (h *harness) applied(infra string) []string {
	h.t.Helper()
	e := h.estate(infra, 1)
	h.azureMetadata(infra+"-tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.cloudMetadata(infra, infra+"-tags", "", map[string]string{classifierOf(infra): "owned"})
	h.waitReady(infra, metav1.ConditionTrue)
	return e.ResourceIDs()
}

// armOps counts the calls of each operation since the last ResetCalls.
func (h *harness) armOps(ops ...string) map[string]int {
	out := map[string]int{}
	calls := h.az.Server.Calls()
	for _, op := range ops {
		if n := calls.Count(op); n > 0 {
			out[op] = n
		}
	}
	return out
}

const (
	opGraph = "ResourceGraph.Resources"
	opRead  = "Tags.GetAtScope"
)

func TestAChangeRunsAPassOfTheObjectsThatMatchedTheResource(t *testing.T) {
	h, hub, _ := newEventsHarness(t)
	a := h.applied("evt-a")
	h.applied("evt-b")
	if err := h.az.Server.DeleteTags(a[0], "env"); err != nil {
		t.Fatal(err)
	}
	h.az.Server.ResetCalls()
	start := time.Now()
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", a[0], "edit-1", nil)); err != nil {
		t.Fatal(err)
	}
	t.Logf("change to the end of its targeted pass: %s", time.Since(start))
	// Done when evt-a's targeted pass ended: the tag is back, after one
	// read of the resource and no discovery (evt-b ran no pass).
	if got := h.tags(a[0])["env"]; got != "prod" {
		t.Errorf("env=%q on %s after the change's pass, want prod", got, a[0])
	}
	if got := h.armOps(opGraph, opRead); fmt.Sprint(got) != fmt.Sprint(map[string]int{opRead: 1}) {
		t.Errorf("ARM reads for a change of a matched resource: %v, want one read", got)
	}
	if got := h.auditRecords(); len(got) == 0 || got[len(got)-1].Resource != a[0] {
		t.Errorf("the targeted write was not audited last: %+v", got)
	}

	// A burst of changes of resources of evt-a: one pass, one read each.
	for _, id := range a[:2] {
		if err := h.az.Server.DeleteTags(id, "env"); err != nil {
			t.Fatal(err)
		}
	}
	h.az.Server.ResetCalls()
	var burst []cloudchange.Change
	for i := range 50 {
		for _, id := range a[:2] {
			burst = append(burst, cloudchangetest.Write("azure", id, fmt.Sprintf("burst-%d-%s", i, id), nil))
		}
	}
	if err := cloudchangetest.Publish(t, hub, waitFor, burst...); err != nil {
		t.Fatal(err)
	}
	if got := h.armOps(opGraph, opRead); fmt.Sprint(got) != fmt.Sprint(map[string]int{opRead: 2}) {
		t.Errorf("ARM reads for 100 changes of 2 resources: %v, want one read each", got)
	}
	for _, id := range a[:2] {
		if got := h.tags(id)["env"]; got != "prod" {
			t.Errorf("env=%q on %s after the burst's pass, want prod", got, id)
		}
	}

	// The change tagsync's own write caused: one read, no write.
	h.az.Server.ResetCalls()
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", a[0], "own-write", nil)); err != nil {
		t.Fatal(err)
	}
	if got := h.armOps(opGraph, opRead); fmt.Sprint(got) != fmt.Sprint(map[string]int{opRead: 1}) || h.writes() != 0 {
		t.Errorf("the change of tagsync's own write: reads %v, %d writes; want one read and no write", got, h.writes())
	}

	// A redelivery, a state change and a deletion of an unknown resource
	// cost nothing.
	h.az.Server.ResetCalls()
	state := cloudchangetest.Write("azure", a[0], "state-1", nil)
	state.Kind = cloudchange.KindState
	gone := cloudchangetest.Write("azure", a[0]+"-gone", "delete-1", nil)
	gone.Kind = cloudchange.KindDelete
	for _, c := range []cloudchange.Change{cloudchangetest.Write("azure", a[0], "edit-1", nil), state, gone} {
		if err := cloudchangetest.Publish(t, hub, waitFor, c); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.armOps(opGraph, opRead); len(got) != 0 || h.writes() != 0 {
		t.Errorf("a duplicate, a state change and an unknown deletion read %v and wrote %d times", got, h.writes())
	}
}

func TestManyChangedResourcesRunAFullPassInstead(t *testing.T) {
	h, hub, _ := newEventsHarness(t)
	e := h.estate("evt-many", 4)
	h.azureMetadata("evt-many-tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.cloudMetadata("evt-many", "evt-many-tags", "", map[string]string{classifierOf("evt-many"): "owned"})
	h.waitReady("evt-many", metav1.ConditionTrue)
	ids := e.ResourceIDs()
	if len(ids) <= metadata.AlwaysTargetedReads {
		t.Fatalf("the estate has %d resources, want more than %d", len(ids), metadata.AlwaysTargetedReads)
	}
	var changes []cloudchange.Change
	for i, id := range ids {
		if err := h.az.Server.DeleteTags(id, "env"); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, cloudchangetest.Write("azure", id, fmt.Sprintf("many-%d", i), nil))
	}
	fallbacks := testenv.Counter(t, "tagsync_metadata_targeted_fallbacks_total", map[string]string{"cloudmetadata": "evt-many"})
	h.az.Server.ResetCalls()
	if err := cloudchangetest.Publish(t, hub, waitFor, changes...); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if got := h.tags(id)["env"]; got != "prod" {
			t.Errorf("env=%q on %s after the changes' pass, want prod", got, id)
		}
	}
	got := h.armOps(opGraph, opRead)
	t.Logf("ARM reads for %d changed resources: %v", len(ids), got)
	if got[opRead] != 0 || got[opGraph] == 0 || got[opGraph] >= len(ids) {
		t.Errorf("ARM reads for %d changed resources: %v, want a discovery (fewer requests than resources) and no read by ID", len(ids), got)
	}
	if n := testenv.Counter(t, "tagsync_metadata_targeted_fallbacks_total", map[string]string{"cloudmetadata": "evt-many"}); n != fallbacks+1 {
		t.Errorf("%v targeted passes gave way to a full pass, want 1", n-fallbacks)
	}
}

func TestAnUnknownResourceIsReadOnceToSeeWhetherItIsClassified(t *testing.T) {
	h, hub, _ := newEventsHarness(t)
	h.applied("evt-new")
	disk, err := h.az.Server.CreateResource(sub, "rg-evt-new", armsim.Resource{Type: armsim.TypeDisk, Name: "late"})
	if err != nil {
		t.Fatal(err)
	}

	// Unclassified: one read, no pass, no write.
	h.az.Server.ResetCalls()
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", disk, "late-1", nil)); err != nil {
		t.Fatal(err)
	}
	if got := h.armOps(opGraph, opRead); fmt.Sprint(got) != fmt.Sprint(map[string]int{opRead: 1}) || h.writes() != 0 {
		t.Errorf("an unclassified resource's change: reads %v, %d writes; want one read and no write", got, h.writes())
	}

	// It gains the classifier: one read, then the object's pass tags it.
	if err := h.az.Server.SetTags(disk, map[string]string{classifierOf("evt-new"): "owned"}); err != nil {
		t.Fatal(err)
	}
	h.az.Server.ResetCalls()
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", disk, "late-2", nil)); err != nil {
		t.Fatal(err)
	}
	if got := h.tags(disk)["env"]; got != "prod" {
		t.Errorf("env=%q on the newly classified disk after the change's pass, want prod", got)
	}
	if got := h.armOps(opGraph, opRead); fmt.Sprint(got) != fmt.Sprint(map[string]int{opGraph: 1, opRead: 1}) {
		t.Errorf("ARM reads for a newly classified resource: %v, want one read and one discovery", got)
	}

	// A change that carries the tags (AWS) needs no read.
	h.az.Server.ResetCalls()
	other := disk + "-other"
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", other, "tagged-1", map[string]string{"unrelated": "x"})); err != nil {
		t.Fatal(err)
	}
	if got := h.armOps(opGraph, opRead); len(got) != 0 {
		t.Errorf("a change carrying unclassified tags read %v", got)
	}

	// A resource in a subscription no object searches is not read.
	h.az.Server.ResetCalls()
	far := "/subscriptions/00000000-0000-4000-8000-00000000beef/resourceGroups/rg-far/providers/Microsoft.Compute/disks/far"
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", far, "far-1", nil)); err != nil {
		t.Fatal(err)
	}
	if got := h.armOps(opGraph, opRead); len(got) != 0 {
		t.Errorf("a change in a subscription no object searches read %v", got)
	}
}

func TestWhileASourceIsDownCloudMetadataPollsAtItsInterval(t *testing.T) {
	h, _, src := newEventsHarness(t)
	h.applied("evt-health")
	eventsCondition := func(status metav1.ConditionStatus, reason, message string) {
		t.Helper()
		eventually(t, "Events "+string(status), func() string {
			var cm v1alpha1.CloudMetadata
			if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "evt-health"}, &cm); err != nil {
				return err.Error()
			}
			return cloudchangetest.CheckCondition(cm.Status.Conditions, status, reason, message)
		})
	}
	eventsCondition(metav1.ConditionTrue, v1alpha1.ReasonEventsOn, "polling every 2h0m0s")
	src.Set(cloudchange.Health{Reason: "subscription deleted"})
	eventsCondition(metav1.ConditionFalse, v1alpha1.ReasonEventSourceDown, src.Name()+": subscription deleted")
	src.Set(cloudchange.Health{Up: true})
	eventsCondition(metav1.ConditionTrue, v1alpha1.ReasonEventsOn, "polling every 2h0m0s")
}

// TestAFailedStatusWriteIsFollowedByAFullPass: a resource gains the
// classifier, and its change arrives while the API server refuses the
// AzureMetadata's status writes. The full pass it brings writes nothing
// (the new resource's held tags cannot be recorded) and its status write
// fails. That pass must not count as served: its retry is a full pass
// again, and once status writes are let through it tags the resource,
// long before the safety-net interval (2 h here).
func TestAFailedStatusWriteIsFollowedByAFullPass(t *testing.T) {
	h, hub, _ := newEventsHarness(t)
	h.applied("evt-sw")
	disk, err := h.az.Server.CreateResource(sub, "rg-evt-sw", armsim.Resource{Type: armsim.TypeDisk, Name: "late",
		Tags: map[string]string{classifierOf("evt-sw"): "owned"}})
	if err != nil {
		t.Fatal(err)
	}
	unrefuse := h.refuseStatusWrites()
	hub.Publish([]cloudchange.Change{cloudchangetest.Write("azure", disk, "late-sw", nil)}, func(error) {})
	h.waitEvent(metadata.ReasonTagsNotApplied, "evt-sw-tags", metadata.ReasonNotRecorded)
	if got := h.tags(disk)["env"]; got != "" {
		t.Fatalf("env=%q written while the held tags could not be recorded", got)
	}
	unrefuse()
	eventually(t, "the new resource tagged once status writes are let through", func() string {
		if got := h.tags(disk)["env"]; got != "prod" {
			return fmt.Sprintf("env=%q", got)
		}
		return ""
	})
}

// gatedReads is an Azure provider whose reads of one resource
// (ReadClassified) wait, while the gate is closed, until it opens; entered
// receives each read that waits.
type gatedReads struct {
	*azure.Provider
	closed  atomic.Bool
	open    chan struct{}
	entered chan string
}

func (g *gatedReads) ReadClassified(ctx context.Context, id string) (cloud.Classified, error) {
	if g.closed.Load() {
		select {
		case g.entered <- id:
		default:
		}
		select {
		case <-g.open:
		case <-ctx.Done():
			return cloud.Classified{}, ctx.Err()
		}
	}
	return g.Provider.ReadClassified(ctx, id)
}

// TestAFullProbeQueueFallsBackToAFullPass: the reads of unknown
// resources wait in a queue as bounded as the hub's; a change that finds
// it full is not queued, and the objects searching its resource's scope
// run a full pass instead, which tags the resource if it is now
// classified, without waiting for the reads ahead of it.
func TestAFullProbeQueueFallsBackToAFullPass(t *testing.T) {
	const capacity = 3
	hub := cloudchange.NewHub(cloudchange.HubOptions{Capacity: capacity, ResyncInterval: 2 * time.Hour, HealthEvery: 20 * time.Millisecond})
	src := cloudchangetest.NewSource(t.Name())
	gate := &gatedReads{open: make(chan struct{}), entered: make(chan string, 1)}
	h := newHarnessWith(t, func(h *harness) {
		h.eventOpts = operator.EventsOptions{Hub: hub, Sources: []operator.EventSource{operator.BuiltSource(src)}}
		h.wrapAzure = func(p *azure.Provider) cloud.Provider {
			gate.Provider = p
			return gate
		}
	})
	h.applied("evt-probeq")
	disk := func(name string, tags map[string]string) string {
		id, err := h.az.Server.CreateResource(sub, "rg-evt-probeq", armsim.Resource{Type: armsim.TypeDisk, Name: name, Tags: tags})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	var unknown []cloudchange.Change
	for i := range capacity + 1 {
		unknown = append(unknown, cloudchangetest.Write("azure", disk(fmt.Sprintf("unknown-%d", i), nil), fmt.Sprintf("unknown-%d", i), nil))
	}
	classified := disk("classified", map[string]string{classifierOf("evt-probeq"): "owned"})
	overflows := testenv.Counter(t, "tagsync_metadata_probe_overflows_total", nil)

	// The first read waits at the gate; the queue behind it fills up.
	gate.closed.Store(true)
	t.Cleanup(func() { close(gate.open) })
	hub.Publish(unknown[:capacity], nil)
	select {
	case <-gate.entered:
	case <-time.After(waitFor):
		t.Fatal("no read of an unknown resource started")
	}
	// One more fits; the classified disk's change does not.
	hub.Publish([]cloudchange.Change{unknown[capacity], cloudchangetest.Write("azure", classified, "classified-1", nil)}, nil)
	testenv.Eventually(t, waitFor, "the classified disk tagged by a full pass while the reads wait", func() string {
		if got := h.tags(classified)["env"]; got != "prod" {
			return fmt.Sprintf("env=%q on the classified disk, probe overflows %v", got,
				testenv.Counter(t, "tagsync_metadata_probe_overflows_total", nil)-overflows)
		}
		return ""
	})
	if n := testenv.Counter(t, "tagsync_metadata_probe_overflows_total", nil) - overflows; n < 1 {
		t.Errorf("probe overflows counted: %v, want at least 1", n)
	}
}

// TestANewlyClassifiedResourceIsTaggedDespiteIndexLag: Resource Graph shows
// a tag change 30 s after it (its tail). A resource gains the classifier
// and its change arrives: the full pass the change brings does not find it
// in Resource Graph yet, so it takes the resource as the change's read
// left it and tags it at once, not at the next full pass (2 h here).
func TestANewlyClassifiedResourceIsTaggedDespiteIndexLag(t *testing.T) {
	h, hub, _ := newEventsHarness(t)
	h.applied("evt-lag")
	disk, err := h.az.Server.CreateResource(sub, "rg-evt-lag", armsim.Resource{Type: armsim.TypeDisk, Name: "late"})
	if err != nil {
		t.Fatal(err)
	}
	h.az.Server.SetGraphIndexDelay(30 * time.Second)
	if err := h.az.Server.SetTags(disk, map[string]string{classifierOf("evt-lag"): "owned"}); err != nil {
		t.Fatal(err)
	}
	freshened := testenv.Counter(t, "tagsync_metadata_freshened_total", map[string]string{"cloudmetadata": "evt-lag"})
	start := time.Now()
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", disk, "lag-1", nil)); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if ok, _ := h.az.Server.GraphShows(disk); ok {
		t.Fatalf("Resource Graph shows the classifier after %v: the test needs it not to", took)
	}
	if got := h.tags(disk)["env"]; got != "prod" {
		t.Fatalf("env=%q on the newly classified disk %v after its change, while Resource Graph does not show it yet; want prod", got, took)
	}
	if took > 10*time.Second {
		t.Errorf("the change took %v to be served, want seconds", took)
	}
	if n := testenv.Counter(t, "tagsync_metadata_freshened_total", map[string]string{"cloudmetadata": "evt-lag"}); n != freshened+1 {
		t.Errorf("freshened_total rose by %v, want 1", n-freshened)
	}
	t.Logf("newly classified resource tagged %v after its change with a 30 s index delay", took)
}

// TestAChangeBeforeTheFirstPassWaitsForIt: a change that arrives before any
// object's first full pass (a start, a new leader) is kept until a pass has
// indexed its resource. Here an outside edit of an owned tag is made while
// Resource Graph lags 30 s, so the first full pass's search still shows the
// tag as it was: the kept change is routed once that pass has indexed the
// resource, and its targeted pass reads and reverts it, rather than the
// next full pass (2 h here).
func TestAChangeBeforeTheFirstPassWaitsForIt(t *testing.T) {
	h, hub, _ := newEventsHarness(t)
	ids := h.estate("evt-early", 1).ResourceIDs()
	h.seedTags(map[string]string{"env": "prod"}, ids...)
	h.az.Server.SetGraphIndexDelay(30 * time.Second)
	h.setTags(ids[0], map[string]string{"env": "dev"})
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", ids[0], "early-1", nil)); err != nil {
		t.Fatal(err)
	}
	h.azureMetadata("evt-early-tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.cloudMetadata("evt-early", "evt-early-tags", "", map[string]string{classifierOf("evt-early"): "owned"})
	h.waitReady("evt-early", metav1.ConditionTrue)
	eventually(t, "the edit made before the first pass reverted", func() string {
		if got := h.tags(ids[0])["env"]; got != "prod" {
			return fmt.Sprintf("env=%q", got)
		}
		return ""
	})
	if ok, _ := h.az.Server.GraphShows(ids[0]); ok {
		t.Errorf("Resource Graph shows the edit already: the first pass's search could have found it")
	}
}

// TestAChangeBeforeTheReferencesResolveWaitsForThem: the change arrives
// before any pass; the CloudMetadata's first pass cannot resolve its
// reference yet (its AzureMetadata is not there), so it indexes none of
// its resources. The change waits for the pass that does, and the edit is
// reverted then, not at the next resync.
func TestAChangeBeforeTheReferencesResolveWaitsForThem(t *testing.T) {
	h, hub, _ := newEventsHarness(t)
	ids := h.estate("evt-unresolved", 1).ResourceIDs()
	h.seedTags(map[string]string{"env": "prod"}, ids...)
	h.az.Server.SetGraphIndexDelay(30 * time.Second)
	h.setTags(ids[0], map[string]string{"env": "dev"})
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", ids[0], "unresolved-1", nil)); err != nil {
		t.Fatal(err)
	}
	h.cloudMetadata("evt-unresolved", "evt-unresolved-tags", "", map[string]string{classifierOf("evt-unresolved"): "owned"})
	h.waitReady("evt-unresolved", metav1.ConditionFalse)
	h.azureMetadata("evt-unresolved-tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.waitReady("evt-unresolved", metav1.ConditionTrue)
	eventually(t, "the edit made before the references resolved reverted", func() string {
		if got := h.tags(ids[0])["env"]; got != "prod" {
			return fmt.Sprintf("env=%q", got)
		}
		return ""
	})
	if ok, _ := h.az.Server.GraphShows(ids[0]); ok {
		t.Errorf("Resource Graph shows the edit already: a full pass's search could have found it")
	}
}
