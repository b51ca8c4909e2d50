package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestPortalEditReachesLabelsThroughEventGrid runs `tagsync run` with the
// Event Grid webhook (plain HTTP on loopback, shared secret) against armsim,
// whose event subscription delivers to it; the NodeTagSync reports the
// Events condition True. It polls its two scale sets once an hour, so
// within the test only an event can explain a label change. A delivery
// without the key is refused (401) and changes nothing: a scale set whose
// tag was edited without an event keeps its labels. A portal edit of the
// other scale set then reaches its Nodes' labels through one targeted
// pass, with no polling pass (a full pass that reads the cloud), at most
// one ARM read in between (the changed scale set's) and no ARM write. The
// watch events of the targeted pass's own Node writes are recognised as
// their echoes and trigger no pass.
func TestPortalEditReachesLabelsThroughEventGrid(t *testing.T) {
	ctx := context.Background()
	cleanupSyncObjects(t)
	arm := armsimtest.Start(t, armsimtest.WithRetrySchedule(100*time.Millisecond))
	edited, silent := seedEventPools(t, arm)
	must(t, kube.Client.Create(ctx, build.NodeTagSync("events", build.ResyncInterval(time.Hour))))

	p, hook := startWithHook(t, "tagsync (events)", func(hook string) []string {
		return webhookArgs(t, arm, "nodetags", hook, "--zap-log-level=debug")
	})
	waitNodeTagSync(ctx, t, "events", "the initial sync, events on", func(st v1alpha1.NodeTagSyncStatus) bool { return readyWithEvents(st, 4) })
	endpoint := "http://" + hook + "/eventgrid"

	// A tag edit nobody delivers, then a delivery of it without the key.
	must(t, arm.Server.SetTags(silent, map[string]string{"env": "forged"}))
	if status := deliverWithoutKey(t, endpoint, arm.SubscriptionID, silent); status != http.StatusUnauthorized && status != http.StatusForbidden {
		t.Fatalf("a delivery without the key: HTTP %d, want 401 or 403", status)
	}
	if n := p.metric(t, "tagsync_eventgrid_refused_total"); n != 1 {
		t.Errorf("the webhook counts %v refused deliveries, want 1", n)
	}

	arm.Subscribe(t, "tagsync", armsimtest.WebHook(endpoint+"?key="+eventsKey))
	polls := p.metric(t, "tagsync_nodetags_passes_total", `fresh="true"`)
	fullPasses := p.metric(t, "tagsync_nodetags_passes_total")
	echoes := p.metric(t, "tagsync_nodetags_node_echoes_total")
	before := arm.Server.Calls()
	start := time.Now()
	must(t, arm.Server.SetTags(edited, map[string]string{"env": "staging"}))
	eventually(t, "the portal edit on the Nodes of "+edited, func() string {
		return labelsAre(t, edited, "staging")
	})
	took := time.Since(start)
	calls := callsSince(before, arm.Server.Calls())
	t.Logf("portal edit → labels in %s; ARM calls in between: %v", took.Round(time.Millisecond), calls)
	// The pass counts itself once its Node writes are made: the labels
	// can be seen a moment before.
	eventually(t, "the targeted pass counted", func() string {
		if n := p.metric(t, "tagsync_nodetags_targeted_passes_total", `result="ok"`); n < 1 {
			return fmt.Sprintf("%v targeted passes, want at least 1", n)
		}
		return ""
	})
	if n := p.metric(t, "tagsync_nodetags_passes_total", `fresh="true"`); n != polls {
		t.Errorf("%v full passes read the cloud after the edit, want none (the NodeTagSync polls hourly)", n-polls)
	}
	if total := sumCalls(calls); total > 1 {
		t.Errorf("%d ARM calls between the edit and the labels (%v), want at most 1 (a read of the changed scale set)", total, calls)
	}
	if msg := labelsAre(t, silent, "prod"); msg != "" {
		t.Errorf("the scale set whose edit was delivered without the key: %s", msg)
	}
	eventually(t, "the echoes of the 2 Node writes", func() string {
		if n := p.metric(t, "tagsync_nodetags_node_echoes_total"); n < echoes+2 {
			return fmt.Sprintf("%v echoes recognised", n-echoes)
		}
		return ""
	})
	if n := p.metric(t, "tagsync_nodetags_passes_total"); n != fullPasses {
		t.Errorf("%v full passes after the edit, want none: the Node writes' echoes need no pass", n-fullPasses)
	}
	p.stop(t)
}

// TestAnOutsideEditIsRevertedWithOneReadThroughEventGrid runs `tagsync run`
// with the metadata controller and the Event Grid webhook against armsim.
// An outside edit that removes a tag the CloudMetadata adds reaches it as
// an event and is reverted by one targeted pass: one read of the edited
// resource and one write. The event of that write (its echo: it carries
// the correlation ID tagsync sent) is not routed back to the metadata
// controller, so it costs no second read.
func TestAnOutsideEditIsRevertedWithOneReadThroughEventGrid(t *testing.T) {
	ctx := context.Background()
	const ns = "events-metadata"
	ensureNamespace(ctx, t, ns)
	arm := armsimtest.Start(t, armsimtest.WithRetrySchedule(100*time.Millisecond))
	estate := armsimtest.ClusterEstate{Infra: "evmd", PerType: 1, Tags: map[string]string{"kubernetes.io_cluster.evmd": "owned"}}
	must(t, estate.Seed(arm.Server))
	p, hook := startWithHook(t, "tagsync (metadata events)", func(hook string) []string { return webhookArgs(t, arm, "metadata", hook) })

	addTagsToEstate(ctx, t, ns, "evmd", arm.SubscriptionID, map[string]string{"env": "prod"}, estate.Tags)
	ids := estate.ResourceIDs()
	eventually(t, "env=prod on the estate", func() string { return envIs(t, arm, ids, "prod") })

	arm.Subscribe(t, "tagsync", armsimtest.WebHook("http://"+hook+"/eventgrid?key="+eventsKey))
	echoes := p.metric(t, "tagsync_events_changes_own_write_total", `controller="metadata"`)
	before := arm.Server.Calls()
	must(t, arm.Server.DeleteTags(ids[0], "env"))
	eventually(t, "the outside edit of "+ids[0]+" reverted, and its write's echo kept from the writer", func() string {
		if msg := envIs(t, arm, ids[:1], "prod"); msg != "" {
			return msg
		}
		if n := p.metric(t, "tagsync_events_changes_own_write_total", `controller="metadata"`); n < echoes+1 {
			return "the echo of the revert was not recognised yet"
		}
		return ""
	})
	calls := callsSince(before, arm.Server.Calls())
	t.Logf("ARM calls from the outside edit to the revert's echo: %v", calls)
	want := map[string]int{"Tags.GetAtScope": 1, "Tags.UpdateAtScope": 1}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("ARM calls for one outside edit: %v, want %v (one read, one write; none for the echo)", calls, want)
	}
	p.stop(t)
}

// webhookArgs are the flags of one `tagsync run` of controllers against
// arm, without leader election, with the Event Grid webhook at hook (the
// shared secret eventsKey), and extra.
func webhookArgs(t *testing.T, arm *armsimtest.Env, controllers, hook string, extra ...string) []string {
	t.Helper()
	args := []string{"--kubeconfig=" + writeKubeconfig(t, ""), "--controllers=" + controllers, "--leader-elect=false",
		"--events-webhook-bind-address=" + hook, "--events-webhook-secret-file=" + tempFile(t, "events-secret", eventsKey+"\n")}
	return append(append(args, extra...), armsimFlags(t, arm)...)
}

// envIs returns "" when every resource of ids carries env=value in armsim,
// else the first that does not.
func envIs(t *testing.T, arm *armsimtest.Env, ids []string, value string) string {
	t.Helper()
	for _, id := range ids {
		tg, err := arm.Server.Tags(id)
		must(t, err)
		if tg["env"] != value {
			return fmt.Sprintf("%s has env=%q, want %q", id, tg["env"], value)
		}
	}
	return ""
}

// readyWithEvents reports a Ready NodeTagSync with n synced Nodes whose
// Events condition says cloud changes drive its passes.
func readyWithEvents(st v1alpha1.NodeTagSyncStatus, n int) bool {
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionEvents {
			return c.Status == metav1.ConditionTrue && readyWith(st, n)
		}
	}
	return false
}

// seedEventPools creates two scale sets (env=prod) of two instances each
// and their Nodes, and returns the scale sets' IDs.
func seedEventPools(t *testing.T, arm *armsimtest.Env) (a, b string) {
	t.Helper()
	s, sub := arm.Server, arm.SubscriptionID
	_, err := s.CreateResourceGroup(sub, armsim.ResourceGroup{Name: "MC_events", Location: "westeurope"})
	must(t, err)
	var ids []string
	for _, name := range []string{"pool-a", "pool-b"} {
		id, err := s.CreateScaleSet(sub, "MC_events", armsim.ScaleSet{Name: name, Location: "westeurope", Tags: map[string]string{"env": "prod"}})
		must(t, err)
		instances, err := s.AddInstances(id, 2)
		must(t, err)
		for i, inst := range instances {
			must(t, kube.Client.Create(context.Background(), &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: map[string]string{"pool": name}},
				Spec:       corev1.NodeSpec{ProviderID: "azure://" + inst}}))
		}
		ids = append(ids, id)
	}
	return ids[0], ids[1]
}

// labelsAre returns "" when every Node of the scale set (named after it,
// labelled pool=<name>) has the env label value, else what differs.
func labelsAre(t *testing.T, scaleSet, value string) string {
	t.Helper()
	key, err := tags.Codec{Prefix: tags.DefaultPrefix}.LabelKey("env")
	must(t, err)
	name := scaleSet[strings.LastIndex(scaleSet, "/")+1:]
	var nodes corev1.NodeList
	must(t, kube.Client.List(context.Background(), &nodes))
	found := 0
	for _, n := range nodes.Items {
		if n.Labels["pool"] != name {
			continue
		}
		if found++; n.Labels[key] != value {
			return fmt.Sprintf("Node %s has %s=%q, want %q", n.Name, key, n.Labels[key], value)
		}
	}
	if found == 0 {
		return "no Nodes of " + name
	}
	return ""
}

// eventsKey is the shared secret Event Grid's deliveries carry.
const eventsKey = "e2e-events-shared-secret-0123456789"

// deliverWithoutKey posts an Event Grid delivery of a write to resource,
// as Event Grid would but without the key, and returns the status.
func deliverWithoutKey(t *testing.T, endpoint, subscription, resource string) int {
	t.Helper()
	body := fmt.Sprintf(`[{"id": "forged-0001", "topic": "/subscriptions/%s", "subject": %q,
		"eventType": "Microsoft.Resources.ResourceWriteSuccess", "eventTime": %q, "dataVersion": "2", "metadataVersion": "1",
		"data": {"resourceUri": %q, "operationName": "Microsoft.Compute/virtualMachineScaleSets/write", "status": "Succeeded"}}]`,
		subscription, resource, time.Now().UTC().Format(time.RFC3339Nano), resource)
	resp, err := http.Post(endpoint, "application/json", strings.NewReader(body))
	must(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// callsSince returns the ARM requests (token requests excluded) served
// between two snapshots, by operation.
func callsSince(before, after armsim.Calls) map[string]int {
	out := map[string]int{}
	for _, op := range after.Ops() {
		if n := after.Count(op) - before.Count(op); n > 0 && !strings.HasPrefix(op, "Identity.") {
			out[op] = n
		}
	}
	return out
}

// sumCalls adds up request counts.
func sumCalls(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}
