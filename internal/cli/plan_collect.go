package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
)

// planSelection says which objects to plan.
type planSelection struct {
	// name limits the plan to objects of this name ("" for all).
	name string
	// namespace of the CloudMetadata; ignored with allNamespaces.
	namespace     string
	allNamespaces bool
}

// Notes on what plan cannot know, shown under the plan.
const (
	unknownCache = "the node sync reuses a cloud read for up to --azure-read-cache-ttl (20s) between resyncs and skips Nodes whose own " +
		"writes have not reached its cache yet: plan reads the cloud fresh, so a pass in that window may act a moment later than shown"
)

// collectPlan plans the selected NodeTagSyncs, CloudMetadata and
// LabelSyncProfiles. Only reads are sent: Kubernetes lists and gets (of the
// management cluster and of workload clusters), the clouds' bulk reads. A
// cloud that cannot be read is an error (the plan would be incomplete); a
// workload cluster that cannot be reached is reported in its profiles.
func collectPlan(ctx context.Context, c client.Reader, providers cloud.Providers, ls labelSyncAccess, sel planSelection) (*planReport, error) {
	r := &planReport{NodeTagSyncs: []syncPlan{}, CloudMetadata: []metadataPlan{}, LabelSyncProfiles: []profilePlan{}, WorkloadTagPolicies: []workloadPlan{}}
	if err := r.collectSyncs(ctx, c, providers, sel.name); err != nil {
		return nil, err
	}
	if err := r.collectMetadata(ctx, c, providers, sel); err != nil {
		return nil, err
	}
	if err := r.collectProfiles(ctx, c, ls, sel); err != nil {
		return nil, err
	}
	if err := r.collectWorkloads(ctx, c, providers, sel.name); err != nil {
		return nil, err
	}
	if sel.name != "" && len(r.NodeTagSyncs) == 0 && len(r.CloudMetadata) == 0 && len(r.LabelSyncProfiles) == 0 && len(r.WorkloadTagPolicies) == 0 {
		return nil, fmt.Errorf("no NodeTagSync or WorkloadTagPolicy, and no CloudMetadata or LabelSyncProfile in namespace %s, is named %q: %w", sel.namespace, sel.name, errPlanNotFound)
	}
	return r, nil
}

// collectSyncs plans every (or the named) NodeTagSync.
func (r *planReport) collectSyncs(ctx context.Context, c client.Reader, providers cloud.Providers, name string) error {
	var syncs v1alpha1.NodeTagSyncList
	if err := c.List(ctx, &syncs); err != nil {
		return fmt.Errorf("listing NodeTagSyncs: %w", err)
	}
	if len(syncs.Items) == 0 {
		return nil
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing Nodes: %w", err)
	}
	ptrs := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		ptrs[i] = &nodes.Items[i]
	}
	for i := range syncs.Items {
		nts := &syncs.Items[i]
		if name != "" && nts.Name != name {
			continue
		}
		p, err := planSync(ctx, nts, syncs.Items, ptrs, providers)
		if err != nil {
			return err
		}
		r.NodeTagSyncs = append(r.NodeTagSyncs, p)
	}
	if len(r.NodeTagSyncs) > 0 {
		r.Unknown = append(r.Unknown, unknownCache)
	}
	return nil
}

// planSync plans one NodeTagSync with the controller's Predict.
func planSync(ctx context.Context, nts *v1alpha1.NodeTagSync, all []v1alpha1.NodeTagSync, nodes []*corev1.Node, providers cloud.Providers) (syncPlan, error) {
	out := syncPlan{Name: nts.Name}
	pred, err := nodetags.Predict(ctx, nts, all, nodes, providers)
	var spec *nodetags.SpecError
	switch {
	case errors.As(err, &spec):
		out.Problem = "nothing would be written: " + spec.Error()
		return out, nil
	case err != nil:
		return out, fmt.Errorf("NodeTagSync %s: reading the cloud: %w", nts.Name, err)
	}
	out.Claimed, out.Held, out.Suspended = pred.Claimed, pred.Held, nts.Spec.Suspend
	if h := out.Held; h != nil && (nts.Status.DeletionsHeld == nil || nts.Status.DeletionsHeld.Digest != h.Digest) {
		h.Token = "" // a set the controller has not held yet: its pass stamps the token
	}
	for _, f := range pred.Failed {
		out.Failed = append(out.Failed, fmt.Sprintf("%s: %v", f.Scope, f.Err))
	}
	for _, u := range pred.Unmanaged {
		out.Unsynced = append(out.Unsynced, namedReason(u))
	}
	provider, _ := providers.Get(orDefaultProvider(string(nts.Spec.Provider)))
	nc := provider.Rules().NameCase()
	for _, w := range pred.Resources {
		out.Resources = append(out.Resources, resourceDiff{Cloud: provider.Name(), ID: w.ID, Changes: patchChanges(nc, w.Before, w.Patch),
			NotWritten: append(skippedNotes(w.Skipped), aggregateNotes(w)...), Wiped: w.Wiped, Nodes: w.Nodes})
	}
	for _, w := range pred.Nodes {
		d := nodeDiff{Name: w.Name, Resource: w.Resource, Labels: labelChanges(w), Base: w.Base, ReleaseTaint: w.ReleaseTaint}
		for _, c := range w.Conflicts {
			d.Conflicts = append(d.Conflicts, namedReason{Name: c.Name, Reason: conflictReason(c.CloudValue, c.CloudPresent, c.NodeValue, c.NodePresent)})
		}
		out.Nodes = append(out.Nodes, d)
	}
	out.InSync = pred.Managed - countWritten(out.Nodes)
	return out, nil
}

// orDefaultProvider is the provider a NodeTagSync names (azure when empty).
func orDefaultProvider(p string) string {
	if p == "" {
		return string(v1alpha1.ProviderAzure)
	}
	return p
}

// aggregateNotes reports the tags a resource's Nodes disagree on.
func aggregateNotes(w nodetags.ResourceWrite) []namedReason {
	out := make([]namedReason, 0, len(w.Conflicts))
	for _, c := range w.Conflicts {
		var ops []string
		for _, op := range c.Ops {
			if op.Delete {
				ops = append(ops, op.Node+": delete")
				continue
			}
			ops = append(ops, fmt.Sprintf("%s: %q", op.Node, op.Value))
		}
		out = append(out, namedReason{Name: c.Name, Reason: "the Nodes disagree (" + strings.Join(ops, "; ") + ")"})
	}
	return out
}

// conflictReason describes a tag changed on both sides.
func conflictReason(cloudValue string, cloudPresent bool, nodeValue string, nodePresent bool) string {
	show := func(v string, ok bool) string {
		if !ok {
			return "absent"
		}
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("conflict: cloud %s, node %s: both left as they are", show(cloudValue, cloudPresent), show(nodeValue, nodePresent))
}

// countWritten counts the Nodes that would be patched.
func countWritten(nodes []nodeDiff) int {
	n := 0
	for _, d := range nodes {
		if len(d.Labels) > 0 || d.Base != "" || d.ReleaseTaint {
			n++
		}
	}
	return n
}
