package nodetags

import tagmetrics "github.com/tagsync/tagsync/internal/metrics"

const metrics = tagmetrics.Subsystem(ControllerName)

var (
	passesTotal = metrics.Counter("passes_total",
		"Sync passes by NodeTagSync, whether the cloud was read fresh, and result (ok: every node synced; error: the cloud read failed, a scope could not be read, or a node or cloud write failed).", "nodetagsync", "fresh", "result")
	passDuration = metrics.Histogram("pass_duration_seconds",
		"Duration of a sync pass over every in-scope node.", 0.005, 14, "nodetagsync")
	nodesGauge = metrics.Gauge("nodes",
		"Nodes by state after the last pass (synced, unmanaged, error, pending).", "nodetagsync", "state")
	conflictsGauge       = metrics.Gauge("conflicts", "Tags currently in conflict between cloud and nodes.", "nodetagsync")
	unrepresentableGauge = metrics.Gauge("unrepresentable", "Tags or labels that cannot be carried to the other side.", "nodetagsync")
	writesTotal          = metrics.Counter("writes_total", "Writes by side (cloud, node) and result (ok, error).", "nodetagsync", "side", "result")
	wipesTotal           = metrics.Counter("wipes_total", "Wholesale rewrites of a resource's tags detected.", "nodetagsync")
	restoredTotal        = metrics.Counter("tags_restored_total",
		"Synced tags that vanished from a resource without a person's intent (a platform's rewrite) and were put back from the labels.", "nodetagsync")
	nodeEchoesTotal = metrics.Counter("node_echoes_total",
		"Node updates that were exactly the controller's own writes: they triggered no pass.")
	deletionsHeldGauge = metrics.Gauge("deletions_held",
		"Tag deletions the last pass held back as a mass deletion, waiting for approval (tagsync.io/approve-deletions).", "nodetagsync")
	retainedGauge = metrics.Gauge("deletions_retained",
		"Tag and label deletions the last pass kept because the NodeTagSync's deletionPolicy is Retain.", "nodetagsync")
	approvalsTotal = metrics.Counter("deletion_approvals_total",
		"Held mass deletions a person approved and a pass then wrote.", "nodetagsync")
	failingGauge = metrics.Gauge("failing",
		"1 while the NodeTagSync's last full pass failed (the cloud read, a scope, or a node or cloud write), 0 since one succeeded; set by every full pass, the first included.", "nodetagsync")
	lastSuccessGauge = metrics.Gauge("last_success_timestamp_seconds",
		"When the NodeTagSync's last pass with result ok ended (Unix seconds).", "nodetagsync")
	targetedPassesTotal = metrics.Counter("targeted_passes_total",
		"Passes over the nodes of cloud resources that changed (events), by NodeTagSync and result (ok, error).", "nodetagsync", "result")
)
