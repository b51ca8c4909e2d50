package nodetags_test

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestAwkwardNamesAndValues: spaces, colons, slashes round-trip through the
// codec; a 200-character value cannot be a label: reported, never truncated,
// and the tag is left alone.
func TestAwkwardNamesAndValues(t *testing.T) {
	h := newHarness(t)
	h.resourceGroup("rg-odd")
	long := strings.Repeat("v", 200)
	vmID, pid := h.vm("rg-odd", "vm-odd", map[string]string{"Cost Center": "A/B: c", "path": "/var/lib/x", "long": long})
	h.node("odd", pid, nil, nil)
	h.sync("odd", nil)
	codec := tags.Codec{Prefix: tags.DefaultPrefix}
	label := func(name string) string {
		k, err := codec.LabelKey(name)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	value := func(v string) string {
		e, err := tags.EncodeValue(v)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	h.waitLabel("odd", label("Cost Center"), value("A/B: c"))
	h.waitLabel("odd", label("path"), value("/var/lib/x"))
	nts := h.passDone("odd", 1)
	if _, ok := h.labels("odd")[label("long")]; ok {
		t.Fatal("a 200-character value became a label (it must be skipped, not truncated)")
	}
	if !hasSkipped(nts.Status.Unrepresentable, "long") {
		t.Fatalf("status does not report the 200-character tag: %+v", nts.Status.Unrepresentable)
	}
	h.waitEvent("TagUnrepresentable", "odd")

	// A label whose tag name has a space reaches the cloud decoded.
	setLabel(h, "odd", label("Team Name"), value("blue team"))
	h.waitTag(vmID, "Team Name", "blue team")
	if got := h.tags(vmID)["long"]; got != long {
		t.Fatalf("the unrepresentable tag changed in the cloud: %q", got)
	}
}

// TestTagLimit: labels beyond Azure's 50 tags are not written, are reported,
// and are not deleted from the node; the first ones in name order fit.
func TestTagLimit(t *testing.T) {
	h := newHarness(t)
	h.resourceGroup("rg-limit")
	initial := map[string]string{}
	for i := range 48 {
		initial[fmt.Sprintf("t%02d", i)] = "x"
	}
	vmID, pid := h.vm("rg-limit", "vm-limit", initial)
	labels := map[string]string{}
	for _, n := range []string{"a1", "a2", "a3", "a4"} {
		labels["azure.tags/"+n] = "y"
	}
	h.node("limit", pid, labels, nil)
	h.sync("limit", nil)
	h.waitTag(vmID, "a1", "y")
	h.waitTag(vmID, "a2", "y")
	nts := h.passDone("limit", 1)
	got := h.tags(vmID)
	if len(got) != 50 {
		t.Fatalf("%d tags on the VM, want exactly the limit 50", len(got))
	}
	for _, n := range []string{"a3", "a4"} {
		if _, ok := got[n]; ok {
			t.Fatalf("tag %s written beyond the limit", n)
		}
		if !hasSkipped(nts.Status.Unrepresentable, n) {
			t.Fatalf("status does not report %s as skipped: %+v", n, nts.Status.Unrepresentable)
		}
		if h.labels("limit")["azure.tags/"+n] != "y" {
			t.Fatalf("label %s was removed from the node", n)
		}
	}
}

// TestReservedPrefixesNeverWritten: labels that would create tags with
// reserved prefixes are reported and never sent to ARM.
func TestReservedPrefixesNeverWritten(t *testing.T) {
	h := newHarness(t)
	vmID, pid := h.vmInGroup("rg-res", "vm-res", map[string]string{"env": "prod"})
	h.node("res", pid, map[string]string{"azure.tags/microsoft.owner": "x", "azure.tags/Azure-thing": "y", "azure.tags/team": "blue"}, nil)
	h.sync("res", nil)
	h.waitTag(vmID, "team", "blue")
	nts := h.passDone("res", 1)
	for _, n := range []string{"microsoft.owner", "Azure-thing"} {
		if _, ok := h.tags(vmID)[n]; ok {
			t.Fatalf("reserved tag %s was written", n)
		}
		if !hasSkipped(nts.Status.Unrepresentable, n) {
			t.Fatalf("reserved %s not reported: %+v", n, nts.Status.Unrepresentable)
		}
	}
	if h.cloud.Calls().CountStatus("Tags.UpdateAtScope", http.StatusBadRequest) != 0 {
		t.Fatal("a reserved name reached ARM and was refused there")
	}
	if h.labels("res")["azure.tags/microsoft.owner"] != "x" {
		t.Fatal("the reserved-prefix label was removed from the node")
	}
}

// TestCrossResourceGroupAndUnmanagedNodes: a node in another resource group
// (by providerID, and by label without providerID) is synced; on-prem nodes
// and nodes without a usable providerID are counted, never errors, and cost
// no cloud call.
func TestCrossResourceGroupAndUnmanagedNodes(t *testing.T) {
	h := newHarness(t)
	h.resourceGroup("rg-main")
	_, pid := h.vmInGroup("rg-other", "vm-cross", map[string]string{"env": "other"})
	h.vm("rg-other", "bylabel", map[string]string{"env": "labelled"})
	h.node("cross", pid, map[string]string{"kubernetes.azure.com/resource-group": "rg-other"}, nil)
	h.node("bylabel", "", map[string]string{"kubernetes.azure.com/resource-group": "rg-other"}, nil)
	h.node("onprem", "azure://onprem", map[string]string{"kubernetes.azure.com/managed": "false"}, nil)
	h.node("noid", "", nil, nil)
	h.node("aws", "aws:///eu-west-1a/i-0abc", nil, nil)
	h.sync("cross", nil)
	h.waitLabel("cross", "azure.tags/env", "other")
	h.waitLabel("bylabel", "azure.tags/env", "labelled")
	nts := h.passDone("cross", 5)
	if nts.Status.SyncedNodes != 2 || nts.Status.UnmanagedNodes != 3 || nts.Status.ErrorCount != 0 {
		t.Fatalf("status = synced %d, unmanaged %d, errors %d; want 2, 3, 0",
			nts.Status.SyncedNodes, nts.Status.UnmanagedNodes, nts.Status.ErrorCount)
	}
	for _, n := range []string{"onprem", "noid", "aws"} {
		for k := range h.labels(n) {
			if strings.HasPrefix(k, "azure.tags/") {
				t.Fatalf("unmanaged node %s got label %s", n, k)
			}
		}
	}
}

// TestResourceGroupFilter: only nodes in the listed groups (compared
// case-insensitively) are synced.
func TestResourceGroupFilter(t *testing.T) {
	h := newHarness(t)
	_, pidIn := h.vmInGroup("rg-in", "vm-in", map[string]string{"env": "in"})
	outID, pidOut := h.vmInGroup("rg-out", "vm-out", map[string]string{"env": "out"})
	h.node("in", pidIn, nil, nil)
	h.node("out", pidOut, map[string]string{"azure.tags/team": "x"}, nil)
	h.sync("filter", func(s *v1alpha1.NodeTagSyncSpec) { s.ResourceGroups = []v1alpha1.ResourceGroupName{"RG-IN"} })
	h.waitLabel("in", "azure.tags/env", "in")
	nts := h.passDone("filter", 2)
	if nts.Status.UnmanagedNodes != 1 {
		t.Fatalf("unmanaged = %d, want 1 (the node outside the filter)", nts.Status.UnmanagedNodes)
	}
	if _, ok := h.labels("out")["azure.tags/env"]; ok {
		t.Fatal("the node outside the resource-group filter was labelled")
	}
	if _, ok := h.tags(outID)["team"]; ok {
		t.Fatal("the VM outside the resource-group filter was tagged")
	}
}

// TestThrottleStormConverges: ARM answers 429 with a Retry-After longer
// than the SDK waits for itself, to reads and then to writes. The SDK gives
// up, so the controller's own requeue must honour the wait: no request of a
// throttled bucket leaves before the time ARM named, the status says the
// controller is throttled, the sync converges, and the requests stay within
// the client-side budget.
func TestThrottleStormConverges(t *testing.T) {
	const wait = 3 * time.Second // the harness's SDK waits at most 2 s
	budget := azure.RateLimit{ReadsPerSecond: 5, ReadBurst: 5, WritesPerSecond: 2, WriteBurst: 2}
	var mu sync.Mutex
	sent := map[string][]time.Time{} // "GET /virtualmachines", "PATCH /tags"
	h := newHarnessWithTransport(t, func(req *http.Request) {
		path := strings.ToLower(req.URL.Path)
		var key string
		switch {
		case req.Method == http.MethodGet && strings.HasSuffix(path, "/virtualmachines"):
			key = "list"
		case req.Method == http.MethodPatch && strings.HasSuffix(path, "/tags/default"):
			key = "write"
		default:
			return
		}
		mu.Lock()
		sent[key] = append(sent[key], time.Now())
		mu.Unlock()
	}, azure.WithRateLimit(budget))
	vmID, pid := h.vmInGroup("rg-429", "vm-429", map[string]string{"env": "prod"})
	h.cloud.AddFault(armsim.Fault{Operation: "VirtualMachines.List", Count: 2, Status: http.StatusTooManyRequests, RetryAfter: wait})
	h.cloud.AddFault(armsim.Fault{Operation: "Tags.UpdateAtScope", Count: 2, Status: http.StatusTooManyRequests, RetryAfter: wait})
	start := time.Now()
	h.node("storm", pid, map[string]string{"azure.tags/team": "blue"}, nil)
	h.sync("storm", nil)
	h.waitStatus("storm", "a throttled status", readyBecause("Throttled"))
	h.waitLabel("storm", "azure.tags/env", "prod")
	h.waitTag(vmID, "team", "blue")
	elapsed := time.Since(start)
	calls := h.cloud.Calls()
	if calls.CountStatus("VirtualMachines.List", http.StatusTooManyRequests) != 2 || calls.CountStatus("Tags.UpdateAtScope", http.StatusTooManyRequests) != 2 {
		t.Fatalf("the storm did not happen as set up: %+v", calls)
	}
	mu.Lock()
	for key, times := range sent {
		if len(times) < 3 {
			t.Fatalf("%d %s requests, want the 2 throttled ones and a successful one", len(times), key)
		}
		for i := 1; i < 3; i++ { // the requests after each of the two 429s
			if gap := times[i].Sub(times[i-1]); gap < wait-100*time.Millisecond {
				t.Fatalf("%s request %d left %s after a 429 that asked for %s", key, i+1, gap, wait)
			}
		}
	}
	mu.Unlock()
	var reads, writes int
	for _, op := range calls.Ops() {
		if isWrite(op) {
			writes += calls.Count(op)
		} else if !strings.HasPrefix(op, "Identity") {
			reads += calls.Count(op)
		}
	}
	maxReads := budget.ReadBurst + int(budget.ReadsPerSecond*elapsed.Seconds()) + 1
	maxWrites := budget.WriteBurst + int(budget.WritesPerSecond*elapsed.Seconds()) + 1
	if reads > maxReads || writes > maxWrites {
		t.Fatalf("%d reads and %d writes in %s exceed the budget (at most %d and %d)", reads, writes, elapsed, maxReads, maxWrites)
	}
}

// TestRestartMidSyncLosesNothing: cloud writes fail, the controller is
// stopped mid-way and a new one started: labels stay, tags arrive, bases are
// consistent.
func TestRestartMidSyncLosesNothing(t *testing.T) {
	h := newHarness(t)
	h.resourceGroup("rg-restart")
	var ids []string
	for i := range 3 {
		id, pid := h.vm("rg-restart", fmt.Sprintf("vm-r%d", i), map[string]string{"env": "prod"})
		ids = append(ids, id)
		h.node(fmt.Sprintf("restart-%d", i), pid, map[string]string{"azure.tags/team": fmt.Sprintf("t%d", i)}, nil)
	}
	h.cloud.AddFault(armsim.Fault{Operation: "Tags.UpdateAtScope", Status: http.StatusInternalServerError})
	h.sync("restart", nil)
	h.waitEvent("CloudWriteFailed", "restart")
	h.waitLabel("restart-2", "azure.tags/env", "prod")
	h.stop()
	h.cloud.ClearFaults()
	h.startController()
	for i, id := range ids {
		h.waitTag(id, "team", fmt.Sprintf("t%d", i))
		if got := h.labels(fmt.Sprintf("restart-%d", i))["azure.tags/team"]; got != fmt.Sprintf("t%d", i) {
			t.Fatalf("restart-%d lost its label: %q", i, got)
		}
	}
	nts := h.syncAndWait("restart")
	if nts.Status.ErrorCount != 0 || nts.Status.SyncedNodes != 3 {
		t.Fatalf("after the restart: errors %d, synced %d, want 0 and 3", nts.Status.ErrorCount, nts.Status.SyncedNodes)
	}
	for i := range ids {
		name := fmt.Sprintf("restart-%d", i)
		want := map[string]string{"env": "prod", "team": fmt.Sprintf("t%d", i)}
		if got := storedBase(h, name); !maps.Equal(got, want) {
			t.Fatalf("%s's stored base is %v, want %v (what both sides now hold)", name, got, want)
		}
	}
}

// storedBase reads a node's base annotation.
func storedBase(h *harness, name string) map[string]string {
	h.t.Helper()
	var n corev1.Node
	if err := h.c.Get(h.ctx, clientKey(name), &n); err != nil {
		h.t.Fatal(err)
	}
	base, err := tags.ParseBase(n.Annotations[v1alpha1.LastSyncedTagsAnnotation])
	if err != nil {
		h.t.Fatalf("%s's base annotation %q: %v", name, n.Annotations[v1alpha1.LastSyncedTagsAnnotation], err)
	}
	return base.Tags
}

// TestStaleETagRetriedWithoutClobbering: with If-Match writes, someone edits
// the VM between the controller's read and its write; ARM answers 412; the
// controller re-reads and writes again, keeping the other writer's tag.
func TestStaleETagRetriedWithoutClobbering(t *testing.T) {
	var h *harness
	var vmID atomic.Value
	var raced atomic.Bool
	racer := func(req *http.Request) {
		id, _ := vmID.Load().(string)
		if req.Method == http.MethodPatch && id != "" && strings.EqualFold(req.URL.Path, id) && raced.CompareAndSwap(false, true) {
			if err := h.cloud.SetTags(id, map[string]string{"other": "written meanwhile"}); err != nil {
				t.Error(err)
			}
		}
	}
	h = newHarnessWithTransport(t, racer, azure.WithWriteMethod(azure.WriteResourcePatch))
	id, pid := h.vmInGroup("rg-etag", "vm-etag", map[string]string{"env": "prod"})
	vmID.Store(id)
	h.node("etag", pid, map[string]string{"azure.tags/team": "blue"}, nil)
	h.sync("etag", nil)
	h.waitTag(id, "team", "blue")
	if !raced.Load() {
		t.Fatal("the concurrent edit never happened")
	}
	if got := h.cloud.Calls().CountStatus("VirtualMachines.Update", http.StatusPreconditionFailed); got == 0 {
		t.Fatal("ARM never answered 412: the write was not guarded by If-Match")
	}
	if got := h.tags(id)["other"]; got != "written meanwhile" {
		t.Fatalf("the other writer's tag was clobbered: %v", h.tags(id))
	}
	encoded, err := tags.EncodeValue("written meanwhile")
	if err != nil {
		t.Fatal(err)
	}
	h.waitLabel("etag", "azure.tags/other", encoded)
}

// TestInvalidSpecsRefused: the API server refuses bad specs with messages a
// user understands.
func TestInvalidSpecsRefused(t *testing.T) {
	h := &harness{t: t, ctx: t.Context(), c: acquirePlane(t).Client}
	bad := []struct {
		name   string
		mutate func(*v1alpha1.NodeTagSyncSpec)
		want   string
	}{
		{"reserved-prefix", func(s *v1alpha1.NodeTagSyncSpec) { s.LabelPrefix = ptrTo("node.kubernetes.io") }, "reserved by Kubernetes"},
		{"bad-prefix", func(s *v1alpha1.NodeTagSyncSpec) { s.LabelPrefix = ptrTo("Azure_Tags") }, "lower-case DNS subdomain"},
		{"short-resync", func(s *v1alpha1.NodeTagSyncSpec) { s.ResyncInterval = &metav1.Duration{Duration: 5 * time.Second} }, "at least 30s"},
		{"long-resync", func(s *v1alpha1.NodeTagSyncSpec) { s.ResyncInterval = &metav1.Duration{Duration: 48 * time.Hour} }, "at most 24h"},
		{"direction", func(s *v1alpha1.NodeTagSyncSpec) { s.Direction = "Sideways" }, "supported values"},
		{"policy", func(s *v1alpha1.NodeTagSyncSpec) { s.ConflictPolicy = "Newest" }, "supported values"},
		{"taints-one-way", func(s *v1alpha1.NodeTagSyncSpec) {
			s.SyncTaints, s.Direction = true, v1alpha1.DirectionCloudToNode
		}, "syncTaints exports taints as tags"},
		{"bad-rg", func(s *v1alpha1.NodeTagSyncSpec) { s.ResourceGroups = []v1alpha1.ResourceGroupName{"bad/rg"} }, "should match"},
		{"unknown-provider", func(s *v1alpha1.NodeTagSyncSpec) { s.Provider = "gcp" }, "supported values"},
		{"aws-reserved-prefix", func(s *v1alpha1.NodeTagSyncSpec) {
			s.Provider, s.LabelPrefix = v1alpha1.ProviderAWS, ptrTo("k8s.io")
		}, "reserved by Kubernetes"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			nts := build.NodeTagSync("invalid-"+b.name, build.NodeTagSyncSpec(b.mutate))
			err := h.c.Create(h.ctx, nts)
			if err == nil {
				_ = h.c.Delete(h.ctx, nts)
				t.Fatal("the API server accepted an invalid spec")
			}
			if !strings.Contains(err.Error(), b.want) {
				t.Fatalf("error %q does not say %q", err, b.want)
			}
		})
	}
	ok := build.NodeTagSync("valid-empty-prefix", build.LabelPrefix(""))
	if err := h.c.Create(h.ctx, ok); err != nil {
		t.Fatalf("an empty labelPrefix must be allowed: %v", err)
	}
	t.Cleanup(func() { cleanupObjects(t, h.c) })
	if ok.Spec.Direction != v1alpha1.DirectionTwoWay || ok.Spec.ResyncInterval == nil || ok.Spec.ResyncInterval.Duration != 5*time.Minute {
		t.Fatalf("defaults not applied: %+v", ok.Spec)
	}
	// On AWS, with scopes that are regions; an omitted labelPrefix stays
	// omitted (the controller resolves it by provider: aws.tags).
	onAWS := build.NodeTagSync("valid-aws", build.Provider(v1alpha1.ProviderAWS), build.ResourceGroups("us-east-1", "eu-west-1"))
	if err := h.c.Create(h.ctx, onAWS); err != nil {
		t.Fatalf("a NodeTagSync on AWS must be allowed: %v", err)
	}
	if onAWS.Spec.LabelPrefix != nil || onAWS.Spec.EffectiveLabelPrefix() != v1alpha1.AWSLabelPrefix || onAWS.Spec.Target != v1alpha1.TargetScaleSet {
		t.Fatalf("spec on AWS after defaulting: %+v, prefix %q", onAWS.Spec, onAWS.Spec.EffectiveLabelPrefix())
	}
	if ok.Spec.EffectiveLabelPrefix() != "" {
		t.Fatalf("an empty labelPrefix resolved to %q", ok.Spec.EffectiveLabelPrefix())
	}
}

func ptrTo[T any](v T) *T { return &v }

func hasSkipped(list []v1alpha1.SkippedTag, name string) bool {
	for _, s := range list {
		if s.Name == name || strings.HasSuffix(s.Name, "/"+name) {
			return true
		}
	}
	return false
}

func isWrite(op string) bool {
	return strings.HasSuffix(op, ".Update") || strings.HasSuffix(op, "UpdateAtScope") ||
		strings.HasSuffix(op, "CreateOrUpdateAtScope") || strings.HasSuffix(op, "DeleteAtScope")
}

// TestSyncTaints: with syncTaints, taints are exported as tags (one way),
// follow the taints' changes, and never come back as labels.
func TestSyncTaints(t *testing.T) {
	h := newHarness(t)
	vmID, pid := h.vmInGroup("rg-taint", "vm-taint", map[string]string{"env": "prod"})
	h.node("taint", pid, nil, nil)
	setTaints(h, "taint", `[{"key":"example.com/gpu","value":"true","effect":"NoSchedule"}]`)
	h.sync("taint", func(s *v1alpha1.NodeTagSyncSpec) { s.SyncTaints = true })
	h.waitStatus("taint", "the node synced by this NodeTagSync", func(nts *v1alpha1.NodeTagSync) string {
		if nts.Status.SyncedNodes != 1 {
			return fmt.Sprintf("status %+v", nts.Status)
		}
		return ""
	})
	h.waitTag(vmID, "taint:example.com:gpu", "true:NoSchedule")
	h.waitLabel("taint", "azure.tags/env", "prod")
	for k := range h.labels("taint") {
		if strings.Contains(k, "taint") {
			t.Fatalf("a taint tag came back as label %s", k)
		}
	}
	setTaints(h, "taint", `[]`)
	h.waitTag(vmID, "taint:example.com:gpu", absent)
	if h.tags(vmID)["env"] != "prod" {
		t.Fatalf("removing a taint touched other tags: %v", h.tags(vmID))
	}
}

// TestOverlappingSyncsOldestWins: two NodeTagSyncs selecting one node do not
// fight: the older syncs it, the newer counts it as not its own.
func TestOverlappingSyncsOldestWins(t *testing.T) {
	h := newHarness(t)
	_, pid := h.vmInGroup("rg-overlap", "vm-overlap", map[string]string{"env": "prod"})
	h.node("overlap", pid, nil, nil)
	h.sync("overlap-a", func(s *v1alpha1.NodeTagSyncSpec) { s.LabelPrefix = ptrTo("a.tags") })
	h.waitLabel("overlap", "a.tags/env", "prod")
	h.sync("overlap-b", func(s *v1alpha1.NodeTagSyncSpec) { s.LabelPrefix = ptrTo("b.tags") })
	nts := h.passDone("overlap-b", 1)
	if nts.Status.UnmanagedNodes != 1 || nts.Status.SyncedNodes != 0 {
		t.Fatalf("the newer NodeTagSync counts synced %d, unmanaged %d; want 0 and 1", nts.Status.SyncedNodes, nts.Status.UnmanagedNodes)
	}
	ready := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil || !strings.Contains(ready.Message, "0 nodes in sync, 1 unmanaged") || !strings.Contains(ready.Message, "1 of the unmanaged are synced by an older NodeTagSync") {
		t.Fatalf("Ready message %+v disagrees with the counts in status", ready)
	}
	if _, ok := h.labels("overlap")["b.tags/env"]; ok {
		t.Fatal("the newer NodeTagSync wrote labels on a node the older one syncs")
	}
}

// TestCloudReadFailureReported: when ARM cannot be read, nothing is written,
// the status says why, and the pass is retried once ARM answers again.
func TestCloudReadFailureReported(t *testing.T) {
	h := newHarness(t)
	_, pid := h.vmInGroup("rg-down", "vm-down", map[string]string{"env": "prod"})
	h.cloud.AddFault(armsim.Fault{Operation: "VirtualMachines.List", Status: http.StatusInternalServerError})
	h.node("down", pid, map[string]string{"azure.tags/team": "blue"}, nil)
	h.sync("down", nil)
	h.waitStatus("down", "a CloudReadFailed status", readyBecause("CloudReadFailed"))
	h.waitEvent("CloudReadFailed", "down")
	if h.writes() != 0 {
		t.Fatal("something was written while the cloud could not be read")
	}
	h.cloud.ClearFaults()
	h.waitLabel("down", "azure.tags/env", "prod")
}
