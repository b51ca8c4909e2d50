package nodetags

import (
	"fmt"
	"strings"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// Event reasons, on the Node concerned (or the NodeTagSync for pass-wide ones).
const (
	// ReasonTagConflict: a tag and its label changed differently on both sides,
	// or the Nodes of one scale set disagree.
	ReasonTagConflict = "TagConflict"
	// ReasonTagUnrepresentable: a tag or label could not be carried across.
	ReasonTagUnrepresentable = "TagUnrepresentable"
	// ReasonCloudWriteFailed: writing tags to the cloud failed.
	ReasonCloudWriteFailed = "CloudWriteFailed"
	// ReasonNodeWriteFailed: writing labels to the Node failed.
	ReasonNodeWriteFailed = "NodeWriteFailed"
	// ReasonTagsWiped: the cloud's tags were rewritten wholesale.
	ReasonTagsWiped = "TagsWiped"
	// ReasonLabelsSynced: labels were written from cloud tags.
	ReasonLabelsSynced = "LabelsSynced"
	// ReasonTagsSynced: cloud tags were written from labels.
	ReasonTagsSynced = "TagsSynced"
	// ReasonInvalidSpec: the NodeTagSync cannot be used as written.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonCloudReadFailed: the cloud could not be read.
	ReasonCloudReadFailed = "CloudReadFailed"
	// ReasonFallback: the target resource fell back (Azure: Instance → scale
	// set; AWS: ScaleSet → an instance in no Auto Scaling group).
	ReasonFallback = "TargetFallback"
	// ReasonSpecWarning: the spec is valid but cannot do what it seems to
	// ask (e.g. its tag filters exclude every tag).
	ReasonSpecWarning = "SpecWarning"
	// ReasonNodePending: a node keeps the pending taint because tagsync
	// cannot sync it.
	ReasonNodePending = "NodePending"
	// ReasonDeletionsHeld: a pass held back a mass deletion; the note says
	// how to approve it.
	ReasonDeletionsHeld = "DeletionsHeld"
	// ReasonDeletionsApproved: a held mass deletion was approved and is
	// written.
	ReasonDeletionsApproved = "DeletionsApproved"
	// ReasonDeletionsRetained: deletionPolicy Retain kept tags or labels
	// the sync would have deleted.
	ReasonDeletionsRetained = "DeletionsRetained"
)

// shownInNotes is how many items an event note lists before "and N more".
const shownInNotes = 8

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

// report turns a resource's plan into status entries, counters and events.
func (p *pass) report(plan resourcePlan) {
	nts, out := p.nts, p.out
	id := plan.resource.ID
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
}

func wipeMessage(plan resourcePlan) string {
	action := "labels were kept"
	if plan.wrote {
		action = "labels were kept and the tags were restored from them"
	}
	return fmt.Sprintf("the tags of %s were rewritten wholesale (all previously synced tags vanished at once); %s. "+
		"To remove tags on purpose, delete them one at a time or remove the labels.", plan.resource.ID, action)
}

// conflicts collects the plan's unresolved conflicts, one entry per tag with
// every node involved, and emits an event on each node when it first appears.
func (p *pass) conflicts(plan resourcePlan) []v1alpha1.TagConflict {
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
