package nodetags

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// The reporter: once a pass's writes are made, it turns the settled plans
// into the pass's outcome (the counts the status and the metrics show),
// events (once per problem) and logs, and keeps the steady marks and the
// placements the next passes need.

// report tells what a pass found and did with its plans, after every
// write: the nodes the planner left out or could not sync, what was held
// back, and each resource's plan and Nodes, in plan order.
func (p *pass) report(ctx context.Context, pl passPlan, results []*resourceResult, h held) {
	p.placed, p.placeNotes, p.nextSteady = pl.placed, pl.notes, pl.steady
	for _, f := range h.fights {
		p.notes.Once(p.nts, "fight/"+f, ReasonRestoreStopped, fmt.Sprintf("%s was put back %d times within %s and removed again "+
			"each time: another writer (a policy, a reconciler) removes it. tagsync stops putting it back there; the labels "+
			"stay. Find the writer in the activity log, or remove the label from the Nodes to let the tag go.", f, maxRestores, kit.RecentWindow))
	}
	p.out.synced += pl.steadyNodes + pl.inFlight
	p.out.inFlight += pl.inFlight
	for _, u := range pl.unsynced {
		if u.err != nil {
			p.out.fail(u.err)
			continue
		}
		p.out.unmanaged++
		if u.notYet {
			// Not a person's job: the pass looks again soon (pass.next).
			p.out.notYet++
		} else {
			p.reportUnmanagedPending(u.node, u.reason)
		}
		log.FromContext(ctx).V(2).Info("node not synced", "node", u.node.Name, "reason", u.reason)
	}
	p.reportHeld(h)
	for _, r := range results {
		p.reportPlan(ctx, r)
	}
}

// reportHeld records what the pass held back from its cloud writes and
// tells it.
func (p *pass) reportHeld(h held) {
	p.out.held = h
	if p.targeted {
		// A targeted pass sees part of the cluster: what it holds is the
		// full passes' to report and to record (one token per set).
		return
	}
	switch {
	case h.record != nil && h.approved:
		p.notes.Normal(p.nts, ReasonDeletionsApproved, fmt.Sprintf("the held deletions (token %s, %d tags) were approved and are written",
			h.record.Token, h.record.Count))
	case h.record != nil:
		p.notes.Once(p.nts, "held/"+h.record.Token, ReasonDeletionsHeld, heldMessage(p.nts, h.record))
	case h.retained > 0:
		p.notes.Once(p.nts, "retained", ReasonDeletionsRetained,
			fmt.Sprintf("deletionPolicy Retain kept %d cloud tags the sync would have deleted", h.retained))
	}
	switch {
	case h.record != nil && !h.approved:
		p.st.held = h.record
	case !p.cfg.suspend:
		p.st.held = nil
	}
}

// reportPlan turns a resource's settled plan into status entries, counters
// and events: the resource's side (its cloud write, a wipe, conflicts,
// tags that cannot be carried across), then each member's Node; a member
// found fully in sync gets its steady mark.
func (p *pass) reportPlan(ctx context.Context, plan *resourceResult) {
	nts, out := p.nts, p.out
	id := plan.resource.ID
	for _, m := range plan.members {
		if m.baseErr != nil {
			p.notes.Once(m.node, "base/"+m.node.Name, ReasonTagUnrepresentable, m.baseErr.Error())
		}
		if m.note != "" {
			p.notes.Once(m.node, "note/"+m.node.Name+"/"+m.note, ReasonFallback, m.note)
		}
	}
	if plan.writeErr != nil {
		for range plan.members {
			out.fail(plan.writeErr)
		}
		writesTotal.WithLabelValues(nts.Name, "cloud", "error").Inc()
		p.notes.Warn(nts, ReasonCloudWriteFailed, fmt.Sprintf("writing tags to %s failed: %v", id, plan.writeErr))
		p.notes.Warn(plan.members[0].node, ReasonCloudWriteFailed, fmt.Sprintf("writing tags to %s failed: %v", id, plan.writeErr))
	}
	if plan.wrote {
		out.cloudWrites++
		writesTotal.WithLabelValues(nts.Name, "cloud", "ok").Inc()
		p.notes.Normal(nts, ReasonTagsSynced, fmt.Sprintf("tags of %s updated from node labels (%s)", id, describePatch(plan.written.Set, plan.written.Delete)))
	}
	if plan.wiped {
		out.wipes++
		p.notes.Once(nts, "wipe/"+id, ReasonTagsWiped, wipeMessage(plan))
	}
	if restored := plan.restoredWritten(p.cfg.nameCase()); len(restored) > 0 {
		recordRestores(&p.st.recent.Restores, p.cfg.nameCase(), plan, p.r.Now())
		out.restored += len(restored)
		p.notes.Warn(nts, ReasonTagsRestored, restoreMessage(id, restored))
	}
	out.conflicts = append(out.conflicts, p.conflicts(plan)...)
	for _, s := range append(plan.cloudSkipped, plan.limitSkipped...) {
		out.addSkipped(skippedEntry(id, s))
		p.notes.Once(nts, "skip/"+id+"/"+s.Name, ReasonTagUnrepresentable, fmt.Sprintf("tag %q on %s: %s", s.Name, id, s.Reason))
	}
	for _, m := range plan.members {
		for _, s := range m.skipped {
			out.addSkipped(skippedEntry(m.node.Name, s))
			p.notes.Once(m.node, "skip/"+m.node.Name+"/"+s.Label, ReasonTagUnrepresentable, fmt.Sprintf("label %q: %s", s.Label, s.Reason))
		}
	}
	p.reportNodes(ctx, plan)
}

// reportNodes counts the outcome of each member's Node and tells its
// problems; the labels written are told once for the resource.
func (p *pass) reportNodes(ctx context.Context, plan *resourceResult) {
	cloudOK := plan.writeErr == nil
	for i, m := range plan.members {
		nr := plan.nodes[i]
		p.out.nodeRetained(nr.retained)
		for _, s := range nr.skipped {
			p.out.addSkipped(skippedEntry(m.node.Name, s))
			p.notes.Once(m.node, "skip/"+m.node.Name+"/"+s.Name, ReasonTagUnrepresentable, fmt.Sprintf("tag %q: %s", s.Name, s.Reason))
		}
		switch nr.outcome {
		case nodeUnchanged:
			p.out.nodeSynced(cloudOK)
			if plan.untroubled() && len(nr.skipped) == 0 && nr.retained == 0 && len(m.skipped) == 0 && m.note == "" && len(plan.results[i].conflicts()) == 0 {
				p.markSteady(m.node, steadyMark(m.node, plan.tagsHash, p.nts.Generation))
			}
		case nodeSuspended:
			p.out.nodeSuspended()
		case nodeInFlight:
			p.out.nodeInFlight()
		case nodeFailed:
			p.out.fail(nr.err)
			writesTotal.WithLabelValues(p.nts.Name, "node", "error").Inc()
			p.notes.Warn(m.node, ReasonNodeWriteFailed, nr.err.Error())
		case nodeWritten:
			p.out.nodeWritten(cloudOK)
			writesTotal.WithLabelValues(p.nts.Name, "node", "ok").Inc()
			if nr.released {
				log.FromContext(ctx).V(1).Info("pending taint removed: the node has its labels", "node", m.node.Name)
			}
		}
	}
	if plan.labelled > 0 {
		p.notes.Normal(p.nts, ReasonLabelsSynced, fmt.Sprintf("labels of %d node(s) of %s updated (%s)",
			plan.labelled, plan.resource.ID, describePatch(plan.firstLabels.Set, plan.firstLabels.Delete)))
	}
}

// markSteady records that node was found fully in sync in this pass (see
// steadyMark).
func (p *pass) markSteady(node *cachedNode, mark string) {
	p.nextSteady[node.Name] = mark
}

// reportFull closes a full pass: it keeps the steady marks for the next
// pass and the placements for the change index, warns about tainted nodes
// no NodeTagSync selects (the oldest NodeTagSync's pass), forgets resolved
// problems (after a complete pass), publishes the metrics and logs a
// summary.
func (p *pass) reportFull(ctx context.Context, sel selection, fresh bool, failed []cloud.ScopeError) {
	nts, o := p.nts, p.out
	p.st.steady = p.nextSteady
	if p.r.changes.record(nts.Name, p.placed, p.placeNotes, p.r.Now()) { // after the read and the writes
		p.r.subscriber.Enqueue(requests([]string{nts.Name})...) // changes that came before the index
	}
	if len(sel.claimants) == 0 {
		p.reportUnselectedPending(ctx, sel.syncs)
	}
	o.claimed = sel.claimed
	p.notes.EndPass(len(failed) == 0)
	o.record(nts.Name)
	// A pass that could not read a scope or write a node or resource
	// failed, though it synced the others.
	result := "ok"
	if len(failed) > 0 || o.errors > 0 {
		result = "error"
		failingGauge.WithLabelValues(nts.Name).Set(1)
	} else {
		failingGauge.WithLabelValues(nts.Name).Set(0)
		lastSuccessGauge.WithLabelValues(nts.Name).Set(float64(p.r.Now().Unix()))
	}
	passesTotal.WithLabelValues(nts.Name, fmt.Sprint(fresh), result).Inc()
	passDuration.WithLabelValues(nts.Name).Observe(p.r.Now().Sub(p.start).Seconds())
	log.FromContext(ctx).V(1).Info("sync pass done", "fresh", fresh, "synced", o.synced, "unmanaged", o.unmanaged,
		"conflicts", len(o.conflicts), "errors", o.errors, "cloudWrites", o.cloudWrites, "nodeWrites", o.nodeWrites)
}

// reportReadFailures tells, once per failing scope, which parts of the cloud
// could not be read; the nodes there count as errors.
func (p *pass) reportReadFailures(failed []cloud.ScopeError) {
	for _, f := range failed {
		p.notes.Once(p.nts, "read/"+f.Scope, ReasonCloudReadFailed,
			fmt.Sprintf("reading %s failed; its nodes were not synced, the others were: %v", f.Scope, f.Err))
	}
}

// warnAboutSpec reports a valid spec that cannot do anything useful.
func (p *pass) warnAboutSpec() {
	for _, w := range p.cfg.warnings {
		p.notes.Once(p.nts, "spec-warning/"+w, ReasonSpecWarning, w)
	}
}

// warnCaseOnlyPatterns warns, on a cloud that compares tag names exactly
// (AWS: Team and team are two tags), about each includeTags pattern that
// matches no tag of the nodes' resources and no label the sync maps to a
// tag, but would match one ignoring case: the pattern then syncs nothing,
// which is almost never what was meant. The warning is an event (once)
// and part of the Ready message. Fresh passes look; the others repeat what
// the last fresh pass found.
func (p *pass) warnCaseOnlyPatterns(nodes []*cachedNode, snap cloud.Snapshot, fresh bool) {
	nc := p.cfg.nameCase()
	if nc == tags.CaseInsensitive || len(p.cfg.filter.Include) == 0 {
		p.st.caseWarnings = nil
		return
	}
	if fresh {
		p.st.caseWarnings = caseOnlyPatterns(p.cfg, nodes, snap)
	}
	for _, w := range p.st.caseWarnings {
		p.cfg.warnings = append(slices.Clip(p.cfg.warnings), w)
		p.notes.Once(p.nts, "spec-warning/"+w, ReasonSpecWarning, w)
	}
}

// caseOnlyPatterns returns the warnings of warnCaseOnlyPatterns.
func caseOnlyPatterns(cfg syncConfig, nodes []*cachedNode, snap cloud.Snapshot) []string {
	names := map[string]bool{}
	for _, r := range snap.Resources {
		for name := range r.Tags {
			names[name] = true
		}
	}
	for _, node := range nodes {
		for key := range node.Labels {
			if name, managed, err := cfg.codec.TagName(key); managed && err == nil {
				names[name] = true
			}
		}
	}
	var out []string
	for i, pattern := range cfg.filter.Include {
		if near, exact := caseOnlyMatch(pattern, cfg.nameCase(), names); !exact && near != "" {
			out = append(out, fmt.Sprintf("includeTags[%d] %q matches no tag or label of the selected nodes, but matches %q ignoring case: "+
				"this cloud's tag keys are case-sensitive, so the pattern syncs nothing; spell it as the key is spelled", i, pattern, near))
		}
	}
	return out
}

// caseOnlyMatch reports whether pattern matches one of names exactly (as nc
// compares), and else the first name (in order) it matches ignoring case.
func caseOnlyMatch(pattern string, nc tags.NameCase, names map[string]bool) (near string, exact bool) {
	f := tags.Filter{Include: []string{pattern}}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if f.Match(nc, name) {
			return "", true
		}
		if near == "" && f.Match(tags.CaseInsensitive, name) {
			near = name
		}
	}
	return near, false
}

// reportUnmanagedPending warns, once, about a selected node that keeps the
// pending taint because tagsync cannot sync it.
func (p *pass) reportUnmanagedPending(node *cachedNode, reason string) {
	if !kit.HasTaint(node.Spec.Taints, v1alpha1.NodeTagsPendingTaintKey) {
		return
	}
	p.out.pending++
	p.notes.Once(node, "pending/"+node.Name, ReasonNodePending, fmt.Sprintf(
		"node keeps the taint %s:NoSchedule because tagsync cannot sync it (%s); remove the taint by hand if the node needs no synced labels",
		v1alpha1.NodeTagsPendingTaintKey, reason))
}

// reportUnselectedPending warns, once, about tainted nodes that no valid
// NodeTagSync selects: nothing will ever remove their taint. The oldest
// NodeTagSync's pass does this, so each node is reported once.
func (p *pass) reportUnselectedPending(ctx context.Context, syncs []validSync) {
	nodes, err := p.r.nodes.pending(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing nodes with the pending taint")
		return
	}
	for _, node := range nodes {
		if selectedByAny(syncs, node) {
			continue
		}
		p.out.pending++
		p.notes.Once(node, "pending/"+node.Name, ReasonNodePending, fmt.Sprintf(
			"node keeps the taint %s:NoSchedule because no NodeTagSync selects it; select it with a NodeTagSync or remove the taint",
			v1alpha1.NodeTagsPendingTaintKey))
	}
}

// describePatch renders a patch for an event, short enough for any patch:
// "set 2: a=1, b=2; removed 1: c", listing the first few of each and
// "and N more".
func describePatch(set map[string]string, del []string) string {
	var parts []string
	if len(set) > 0 {
		var kv []string
		for _, k := range tags.Set(set).Names() {
			kv = append(kv, fmt.Sprintf("%s=%s", k, set[k]))
		}
		parts = append(parts, fmt.Sprintf("set %d: %s", len(kv), notify.Summary(kv, shownInNotes)))
	}
	if len(del) > 0 {
		parts = append(parts, fmt.Sprintf("removed %d: %s", len(del), notify.Summary(del, shownInNotes)))
	}
	return strings.Join(parts, "; ")
}

func wipeMessage(plan *resourceResult) string {
	action := "labels were kept"
	if plan.wrote {
		action = "labels were kept and the tags were restored from them"
	}
	return fmt.Sprintf("the tags of %s were rewritten wholesale (all previously synced tags vanished at once); %s. "+
		"To remove tags on purpose, delete them one at a time or remove the labels.", plan.resource.ID, action)
}

// restoredWritten are the restored tags the plan's cloud write put back.
func (plan *resourceResult) restoredWritten(nc tags.NameCase) []string {
	if !plan.wrote {
		return nil
	}
	var out []string
	for _, name := range plan.restored {
		if plan.written.Set.Has(nc, name) {
			out = append(out, name)
		}
	}
	return out
}

// restoreMessage says which tags a platform's rewrite removed and the
// pass put back.
func restoreMessage(id string, names []string) string {
	return fmt.Sprintf("tags %s vanished from %s while the Nodes kept their labels, and they were not the cloud's own "+
		"(they came from the Nodes' labels, or from neither side knowingly): a platform's rewrite such as a node-pool update, "+
		"not a deletion; they were put back from the labels. To delete such a tag, remove its label from every Node that carries it.",
		strings.Join(names, ", "), id)
}

// conflicts collects the plan's unresolved conflicts, one entry per tag with
// every node involved, and emits an event on each node when it first appears.
func (p *pass) conflicts(plan *resourceResult) []v1alpha1.TagConflict {
	byTag := map[string]*v1alpha1.TagConflict{}
	var order []string
	add := func(tag string, cloudValue *string, node, nodeValue string) {
		key := p.cfg.nameCase().Key(tag)
		c, ok := byTag[key]
		if !ok {
			c = &v1alpha1.TagConflict{Resource: plan.resource.ID, Tag: tag, CloudValue: cloudValue}
			byTag[key] = c
			order = append(order, key)
		}
		c.Nodes = append(c.Nodes, node)
		c.NodeValues = append(c.NodeValues, nodeValue)
	}
	for i, res := range plan.results {
		node := plan.members[i].node
		for _, c := range res.conflicts() {
			if c.Winner != tags.SideNone {
				continue
			}
			add(c.Name, optional(c.CloudValue, c.CloudPresent), node.Name, describeValue(c.NodeValue, c.NodePresent))
			p.notes.Once(node, "conflict/"+node.Name+"/"+p.cfg.nameCase().Key(c.Name), ReasonTagConflict,
				fmt.Sprintf("tag %q differs: %s has %s, the label has %s (%s); conflictPolicy decides, nothing was written",
					c.Name, plan.resource.ID, describeValue(c.CloudValue, c.CloudPresent), describeValue(c.NodeValue, c.NodePresent), c.Reason))
		}
	}
	cloudTags := plan.resource.Tags
	for _, c := range plan.aggConflicts {
		_, v, ok := cloudTags.Lookup(p.cfg.nameCase(), c.Name)
		var nodes []string
		for _, op := range c.Ops {
			value := op.Value
			if op.Delete {
				value = "<deleted>"
			}
			add(c.Name, optional(v, ok), op.Node, value)
			nodes = append(nodes, fmt.Sprintf("%s=%s", op.Node, value))
		}
		for _, op := range c.Ops {
			for _, m := range plan.members {
				if m.node.Name == op.Node {
					p.notes.Once(m.node, "agg/"+op.Node+"/"+p.cfg.nameCase().Key(c.Name), ReasonTagConflict,
						fmt.Sprintf("nodes of %s disagree on tag %q (%s); nothing was written", plan.resource.ID, c.Name, strings.Join(nodes, ", ")))
				}
			}
		}
	}
	out := make([]v1alpha1.TagConflict, 0, len(order))
	for _, k := range order {
		out = append(out, *byTag[k])
	}
	return out
}

func skippedEntry(object string, s tags.Skipped) v1alpha1.SkippedTag {
	name := s.Name
	if name == "" {
		name = s.Label
	}
	return v1alpha1.SkippedTag{Object: object, Name: name, Reason: s.Reason}
}

func optional(v string, present bool) *string {
	if !present {
		return nil
	}
	return &v
}

func describeValue(v string, present bool) string {
	if !present {
		return "<deleted>"
	}
	return fmt.Sprintf("%q", v)
}

// heldMessage is the DeletionsHeld condition's message and the Warning
// event's note for a held mass deletion.
func heldMessage(nts *v1alpha1.NodeTagSync, rec *v1alpha1.HeldDeletions) string {
	return kit.HeldNote("deletions", rec, "nodetagsync "+nts.Name, shownInNotes)
}
