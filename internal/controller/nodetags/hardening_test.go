package nodetags_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestResyncIntervalNotADuration: a resyncInterval that is not a duration
// is refused with a message that says what a duration looks like.
func TestResyncIntervalNotADuration(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tagsync.io/v1alpha1", "kind": "NodeTagSync",
		"metadata": map[string]any{"name": "soon"},
		"spec":     map[string]any{"resyncInterval": "soon"},
	}}
	c := acquirePlane(t).Client
	err := c.Create(t.Context(), u)
	if err == nil {
		_ = c.Delete(t.Context(), u)
		t.Fatal("the API server accepted resyncInterval: soon")
	}
	if !strings.Contains(err.Error(), "must be a duration such as 90s, 5m or 1h30m") {
		t.Fatalf("error %q does not say what a duration looks like", err)
	}
}

// TestLongEventNotesArrive: events about a 300-character tag name and about
// a 40-tag initial sync stay within the API server's note limit, so they are
// stored (an over-long note is refused and the event lost).
func TestLongEventNotesArrive(t *testing.T) {
	h := newHarness(t)
	h.resourceGroup("rg-long")
	longName := strings.Repeat("n", 300)
	many := map[string]string{longName: "v"}
	for i := range 40 {
		many[fmt.Sprintf("tag-%02d-%s", i, strings.Repeat("x", 40))] = strings.Repeat("v", 40)
	}
	_, pid := h.vm("rg-long", "vm-long", many)
	h.node("long", pid, nil, nil)
	h.sync("long", nil)
	h.waitLabel("long", "azure.tags/tag-39-"+strings.Repeat("x", 40), strings.Repeat("v", 40))
	h.waitEvent("LabelsSynced", "long")
	h.waitEvent("TagUnrepresentable", "long")
	for _, reason := range []string{"LabelsSynced", "TagUnrepresentable"} {
		for _, note := range h.events(reason, "long") {
			if len(note) > notify.MaxNoteBytes {
				t.Fatalf("%s note has %d bytes", reason, len(note))
			}
		}
	}
	// 40 labels: the first eight named, the rest counted.
	if note := h.events("LabelsSynced", "long")[0]; !strings.Contains(note, "set 40: ") || !strings.HasSuffix(note, " and 32 more)") {
		t.Fatalf("the LabelsSynced note does not summarise the 40 labels as counts and the first names: %q", note)
	}
}

// TestInvalidSpecReportedOnce: a NodeTagSync the controller cannot use is
// reported once, not again on every Node change in the cluster.
func TestInvalidSpecReportedOnce(t *testing.T) {
	h := newHarness(t)
	h.node("churn", "", map[string]string{"a": "0"}, nil)
	h.sync("badglob", func(s *v1alpha1.NodeTagSyncSpec) { s.IncludeTags = []v1alpha1.TagPattern{"["} })
	h.waitEvent("InvalidSpec", "badglob")
	for i := range 5 {
		setLabel(h, "churn", "a", fmt.Sprint(i+1))
	}
	// A valid NodeTagSync's pass after the churn proves the Node events
	// have been processed (passes run one at a time, in event order).
	h.sync("after-churn", func(s *v1alpha1.NodeTagSyncSpec) {
		s.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "5"}}
	})
	h.syncAndWait("after-churn")
	h.syncAndWait("badglob")
	if n := h.emitted.count("InvalidSpec", "badglob"); n != 1 {
		t.Fatalf("InvalidSpec emitted %d times, want once", n)
	}
	var nts v1alpha1.NodeTagSync
	if err := h.c.Get(h.ctx, clientKey("badglob"), &nts); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Reason != "InvalidSpec" {
		t.Fatalf("Ready = %+v, want InvalidSpec", c)
	}
}

// TestFilterExcludingEverythingWarns: includeTags and excludeTags that leave
// no tag in scope give a Warning and say so in the Ready message.
func TestFilterExcludingEverythingWarns(t *testing.T) {
	h := newHarness(t)
	h.sync("nothing", func(s *v1alpha1.NodeTagSyncSpec) {
		s.IncludeTags = []v1alpha1.TagPattern{"cost*"}
		s.ExcludeTags = []v1alpha1.TagPattern{"c*"}
	})
	h.waitEvent("SpecWarning", "nothing")
	nts := h.syncAndWait("nothing")
	if c := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionReady); c == nil || !strings.Contains(c.Message, "exclude every tag") {
		t.Fatalf("Ready = %+v, want it to say the filters exclude every tag", c)
	}
}

// TestDeletedObjectsAreForgotten: the reconciler's per-NodeTagSync and
// per-Node bookkeeping does not outlive the objects.
func TestDeletedObjectsAreForgotten(t *testing.T) {
	h := newHarness(t)
	_, pid := h.vmInGroup("rg-forget", "vm-forget", map[string]string{"env": "prod"})
	h.node("forget", pid, nil, nil)
	h.sync("forget", nil)
	h.waitLabel("forget", "azure.tags/env", "prod")
	h.rec.NotePending("forget", "1") // as if a write were in flight
	if s, n := h.rec.Tracked(); s != 1 || n == 0 {
		t.Fatalf("tracked %d syncs and %d nodes before deletion, want 1 and some", s, n)
	}
	if err := h.c.Delete(h.ctx, nodeObject("forget")); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(h.ctx, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "forget"}}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the deleted objects forgotten", func() string {
		if s, n := h.rec.Tracked(); s != 0 || n != 0 {
			return fmt.Sprintf("still tracking %d syncs and %d nodes", s, n)
		}
		return ""
	})
}

// TestOneUnreadableResourceGroup: a resource group the controller may not
// read does not stop the others; the status names it.
func TestOneUnreadableResourceGroup(t *testing.T) {
	h := newHarness(t)
	_, openPID := h.vmInGroup("rg-open", "vm-open", map[string]string{"env": "prod"})
	_, lockedPID := h.vmInGroup("rg-locked", "vm-locked", map[string]string{"env": "prod"})
	h.cloud.AddFault(armsim.Fault{Scope: "/subscriptions/" + sub + "/resourceGroups/rg-locked", Status: http.StatusForbidden, Code: "AuthorizationFailed"})
	h.node("open", openPID, nil, nil)
	h.node("locked", lockedPID, nil, nil)
	h.sync("partial", nil)
	h.waitLabel("open", "azure.tags/env", "prod")
	nts := h.passDone("partial", 2)
	if nts.Status.SyncedNodes != 1 || nts.Status.ErrorCount != 1 {
		t.Fatalf("synced %d, errors %d, want 1 and 1", nts.Status.SyncedNodes, nts.Status.ErrorCount)
	}
	c := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionDegraded)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(strings.ToLower(c.Message), "rg-locked") {
		t.Fatalf("Degraded = %+v, want it to name rg-locked", c)
	}
	h.waitEvent("CloudReadFailed", "partial")
	if _, ok := h.labels("locked")["azure.tags/env"]; ok {
		t.Fatal("the node of the unreadable group got labels")
	}
	// The alert's series is set from the first pass on, no success needed.
	if v := testenv.Counter(t, "tagsync_nodetags_failing", map[string]string{"nodetagsync": "partial"}); v != 1 {
		t.Fatalf("tagsync_nodetags_failing = %v after a failing first pass, want 1", v)
	}
	h.cloud.ClearFaults()
	h.waitLabel("locked", "azure.tags/env", "prod")
	h.eventually("tagsync_nodetags_failing back to 0", func() string {
		if v := testenv.Counter(t, "tagsync_nodetags_failing", map[string]string{"nodetagsync": "partial"}); v != 0 {
			return fmt.Sprintf("failing = %v", v)
		}
		return ""
	})
}

// TestLongRetryAfterHonoured: when ARM asks for 100 s of silence, longer
// than the SDK's retry ceiling, no further request reaches that
// subscription's bucket however often a pass is asked for; the status says
// the controller is throttled.
func TestLongRetryAfterHonoured(t *testing.T) {
	var mu sync.Mutex
	var lists []time.Time
	h := newHarnessWithTransport(t, func(req *http.Request) {
		if req.Method == http.MethodGet && strings.HasSuffix(strings.ToLower(req.URL.Path), "/virtualmachines") {
			mu.Lock()
			lists = append(lists, time.Now())
			mu.Unlock()
		}
	})
	_, pid := h.vmInGroup("rg-quiet", "vm-quiet", map[string]string{"env": "prod"})
	h.cloud.AddFault(armsim.Fault{Operation: "VirtualMachines.List", Status: http.StatusTooManyRequests, RetryAfter: 100 * time.Second})
	h.node("quiet", pid, nil, nil)
	h.sync("quiet", nil)
	h.eventually("a throttled status", func() string {
		var nts v1alpha1.NodeTagSync
		if err := h.c.Get(h.ctx, clientKey("quiet"), &nts); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || !strings.Contains(c.Message, "throttled") {
			return fmt.Sprintf("Degraded = %+v", c)
		}
		return ""
	})
	for range 3 {
		h.syncAndWait("quiet")
	}
	mu.Lock()
	n := len(lists)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d VM list requests left the controller within the 100 s Retry-After, want 1", n)
	}
}

// TestPendingTaint: a node registered with the pending taint loses it in the
// same write that gives it its labels; a node tagsync cannot sync, and one
// no NodeTagSync selects, keep it and are reported.
func TestPendingTaint(t *testing.T) {
	h := newHarness(t)
	_, pid := h.vmInGroup("rg-pending", "vm-pending", map[string]string{"env": "prod"})
	pending := build.NoSchedule(v1alpha1.NodeTagsPendingTaintKey, "true")
	other := build.NoSchedule("dedicated", "gpu")
	h.taintedNode("fresh", pid, nil, pending, other)
	h.taintedNode("onprem", "", map[string]string{"pool": "p", "kubernetes.azure.com/managed": "false"}, pending)
	h.taintedNode("stray", "", map[string]string{"pool": "other"}, pending)
	h.sync("pending", func(s *v1alpha1.NodeTagSyncSpec) {
		s.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "pool", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"other"}}}}
	})
	h.eventually("the pending taint gone from fresh", func() string {
		n := h.getNode("fresh")
		if hasTaint(n, v1alpha1.NodeTagsPendingTaintKey) {
			return "still tainted"
		}
		if n.Labels["azure.tags/env"] != "prod" {
			return "the taint went before the labels came"
		}
		if !hasTaint(n, "dedicated") {
			return "another taint was removed too"
		}
		return ""
	})
	h.waitEvent("NodePending", "onprem")
	h.waitEvent("NodePending", "stray")
	nts := h.syncAndWait("pending")
	for _, name := range []string{"onprem", "stray"} {
		if !hasTaint(h.getNode(name), v1alpha1.NodeTagsPendingTaintKey) {
			t.Fatalf("%s lost the pending taint although tagsync cannot sync it", name)
		}
	}
	if c := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionReady); c == nil || !strings.Contains(c.Message, "keep the "+v1alpha1.NodeTagsPendingTaintKey) {
		t.Fatalf("Ready = %+v, want it to count the nodes kept pending", c)
	}
}

// taintedNode creates a Node with taints.
func (h *harness) taintedNode(name, providerID string, labels map[string]string, taints ...corev1.Taint) {
	h.t.Helper()
	n := build.Node(name, build.Labels(labels), build.ProviderID(providerID), build.Taints(taints...))
	if err := h.c.Create(h.ctx, n); err != nil {
		h.t.Fatalf("creating node %s: %v", name, err)
	}
}

// getNode reads a Node.
func (h *harness) getNode(name string) *corev1.Node {
	h.t.Helper()
	var n corev1.Node
	if err := h.c.Get(h.ctx, clientKey(name), &n); err != nil {
		h.t.Fatal(err)
	}
	return &n
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
