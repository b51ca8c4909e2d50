package nodetags

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// Prediction is what the next pass of a NodeTagSync would write, planned
// by the pass's own code (decide, settle, memberUpdate) without writing
// anything: each resource's cloud write is assumed to succeed as planned.
type Prediction struct {
	// Resources are the resources whose tags would change or that have
	// something to report (conflicts, skipped tags, a wipe), by ID.
	Resources []ResourceWrite
	// Nodes are the Nodes that would be patched, by name.
	Nodes []NodeWrite
	// Unmanaged are the selected Nodes the pass would not sync, and why.
	Unmanaged []Unsynced
	// Claimed counts selected Nodes an older NodeTagSync syncs.
	Claimed int
	// Managed counts the Nodes planned (synced with a resource), written
	// or not.
	Managed int
	// Failed are the cloud scopes that could not be read: their Nodes are
	// in Unmanaged with the error.
	Failed []cloud.ScopeError
	// Held is the mass deletion the pass would hold back for approval (nil:
	// none); its deletions are not in Resources.
	Held *v1alpha1.HeldDeletions
}

// ResourceWrite is the cloud side of one resource's plan.
type ResourceWrite struct {
	// ID is the resource ID as the cloud spells it.
	ID string
	// Before are the resource's tags as read.
	Before tags.Set
	// Patch is the write (empty when the tags stay as they are).
	Patch tags.Patch
	// Conflicts are tags the resource's Nodes disagree on (not written).
	Conflicts []tags.AggregateConflict
	// Skipped are tags that cannot become labels or do not fit the cloud's
	// rules (not written).
	Skipped []tags.Skipped
	// Wiped is set when all synced tags vanished at once (a platform
	// rewrite): reported, and repaired from the labels under TwoWay.
	Wiped bool
	// Nodes are the Nodes that sync with the resource.
	Nodes []string
}

// NodeWrite is the patch of one Node.
type NodeWrite struct {
	// Name is the Node's name; Resource the resource it syncs with.
	Name, Resource string
	// Labels are the label edits.
	Labels tags.LabelChanges
	// Before holds the current values of the labels Labels changes or
	// deletes (absent: the label is new).
	Before map[string]string
	// Base is the new v1alpha1.LastSyncedTagsAnnotation value; "" when it stays.
	Base string
	// ReleaseTaint is set when the pending taint goes.
	ReleaseTaint bool
	// Conflicts are the Node's unresolved tag conflicts (nothing written
	// for them).
	Conflicts []tags.Conflict
}

// Unsynced is a selected Node the pass would not sync.
type Unsynced struct {
	// Name is the Node's name; Reason says why.
	Name, Reason string
}

// Predict computes what the next pass of nts would write. syncs are every
// NodeTagSync of the cluster (an older one that selects a Node syncs it) and
// nodes every Node; neither is modified. The only cloud call is the pass's
// bulk read (Provider.Snapshot, fresh). It returns the spec's error when
// nts is invalid: such a NodeTagSync writes nothing.
func Predict(ctx context.Context, nts *v1alpha1.NodeTagSync, syncs []v1alpha1.NodeTagSync, nodes []*corev1.Node,
	providers cloud.Providers) (Prediction, error) {
	cfg, err := configFor(nts, providers)
	if err != nil {
		return Prediction{}, &SpecError{Err: err}
	}
	var selected []*cachedNode
	for _, n := range nodes {
		if c := trim(n); cfg.selector.Matches(nodeLabels{c}) {
			selected = append(selected, c)
		}
	}
	all := append([]v1alpha1.NodeTagSync(nil), syncs...)
	items, claimed := withoutClaimed(selected, olderClaimants(validSyncsOf(all, providers), nts))
	snap, err := cfg.provider.Snapshot(ctx, cloudNodes(items), cloud.ReadOptions{
		Target: cfg.target, Fresh: true, Scopes: cfg.resourceGroups,
	})
	if err != nil {
		return Prediction{}, err
	}
	out := Prediction{Claimed: claimed, Failed: snap.Failed}
	pl := planPass(planInput{cfg: cfg, generation: nts.Generation}, items, snap)
	for _, u := range pl.unsynced {
		out.Unmanaged = append(out.Unmanaged, Unsynced{u.node.Name, u.reason})
	}
	h := holdWrites(cfg, pl.plans, guardInput{carriers: carriers(cfg, pl.placed, snap)}, approval(nts, nts.Status.DeletionsHeld, time.Now()))
	if h.record != nil && !h.approved {
		out.Held = h.record
	}
	results := resultsOf(pl.plans)
	for _, r := range results {
		out.predictResource(cfg, r)
	}
	// The members' copies of their shared resource's tags (an Auto Scaling
	// group's instances), after the shared resources' predicted writes.
	for _, w := range planMemberWrites(cfg, pl, results, snap) {
		out.Resources = append(out.Resources, ResourceWrite{ID: w.resource.ID, Before: w.resource.Tags, Patch: w.patch,
			Skipped: w.skipped, Nodes: w.nodes})
	}
	slices.SortFunc(out.Resources, func(a, b ResourceWrite) int {
		return strings.Compare(cloud.CanonicalID(a.ID), cloud.CanonicalID(b.ID))
	})
	return out, nil
}

// SpecError is a NodeTagSync spec the controller refuses (it then writes
// nothing), or one naming a cloud that is not configured.
type SpecError struct{ Err error }

// Error returns the spec's problem.
func (e *SpecError) Error() string { return e.Err.Error() }

// Unwrap returns the spec's problem.
func (e *SpecError) Unwrap() error { return e.Err }

// predictResource finishes one decided resource's plan as the pass does,
// with the cloud write assumed to succeed as planned.
func (out *Prediction) predictResource(cfg syncConfig, plan *resourceResult) {
	res, members := plan.resource, plan.members
	if !plan.proposed.IsEmpty() {
		after := cloud.Resource{ID: res.ID, Tags: plan.proposed.Apply(cfg.nameCase(), res.Tags)}
		plan.settle(cfg, after, nil)
	}
	plan.finish(cfg.nameCase())
	rw := ResourceWrite{ID: res.ID, Before: res.Tags, Patch: plan.proposed, Conflicts: plan.aggConflicts,
		Skipped: append(append([]tags.Skipped(nil), plan.cloudSkipped...), plan.limitSkipped...), Wiped: plan.wiped}
	out.Managed += len(members)
	for i, m := range members {
		rw.Nodes = append(rw.Nodes, m.node.Name)
		u, _ := memberUpdate(cfg, m, plan.results[i])
		conflicts := plan.results[i].conflicts()
		if cfg.suspend || (u.IsEmpty() && len(conflicts) == 0) {
			continue
		}
		out.Nodes = append(out.Nodes, NodeWrite{Name: m.node.Name, Resource: res.ID, Labels: u.Labels,
			Before: labelsBefore(m.node, u.Labels), Base: u.Record, ReleaseTaint: u.Taints != nil, Conflicts: conflicts})
	}
	if !rw.Patch.IsEmpty() || len(rw.Conflicts) > 0 || len(rw.Skipped) > 0 || rw.Wiped {
		out.Resources = append(out.Resources, rw)
	}
}

// labelsBefore returns the current values of the labels changes touches.
func labelsBefore(node *cachedNode, changes tags.LabelChanges) map[string]string {
	out := map[string]string{}
	for k := range changes.Set {
		if v, ok := node.Labels[k]; ok {
			out[k] = v
		}
	}
	for _, k := range changes.Delete {
		if v, ok := node.Labels[k]; ok {
			out[k] = v
		}
	}
	return out
}
