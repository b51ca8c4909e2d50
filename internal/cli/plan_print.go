package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// planPrinter writes the text form of a plan.
type planPrinter struct {
	w      io.Writer
	colour bool
	err    error
}

// line writes one line, indented; col colours it on a terminal.
func (p *planPrinter) line(indent int, col colour, format string, args ...any) {
	if p.err != nil {
		return
	}
	text := strings.Repeat("  ", indent) + fmt.Sprintf(format, args...)
	if p.colour {
		text = col.paint(text)
	}
	_, p.err = fmt.Fprintln(p.w, text)
}

// print writes the report as a readable diff.
func (r *planReport) print(w io.Writer, colour bool) error {
	p := &planPrinter{w: w, colour: colour}
	for _, s := range r.NodeTagSyncs {
		p.sync(s)
	}
	for _, m := range r.CloudMetadata {
		p.metadata(m)
	}
	for _, s := range r.LabelSyncProfiles {
		p.profile(s)
	}
	for _, w := range r.WorkloadTagPolicies {
		p.workload(w)
	}
	if len(r.NodeTagSyncs) == 0 && len(r.CloudMetadata) == 0 && len(r.LabelSyncProfiles) == 0 && len(r.WorkloadTagPolicies) == 0 {
		p.line(0, "", "No NodeTagSync, CloudMetadata, LabelSyncProfile or WorkloadTagPolicy found: nothing to plan.")
	}
	p.line(0, "", "")
	p.line(0, "", "Plan: %d write(s) (%s).", r.Writes(), "nothing was written")
	for _, u := range r.Unknown {
		p.line(0, "", "Not known to plan: %s.", u)
	}
	return p.err
}

// sync prints one NodeTagSync's plan.
func (p *planPrinter) sync(s syncPlan) {
	p.line(0, "", "NodeTagSync %s", s.Name)
	if s.Problem != "" {
		p.line(1, red, "! %s", s.Problem)
		return
	}
	if s.Suspended {
		p.line(1, yellow, "! suspended (spec.suspend): nothing would be written")
	}
	for _, res := range s.Resources {
		p.resource(1, res)
	}
	for _, n := range s.Nodes {
		p.node(n)
	}
	p.held(s.Held, "nodetagsync "+s.Name)
	p.line(1, "", "%d node(s) in sync", s.InSync)
	for _, u := range s.Unsynced {
		p.line(1, "", "node %s not synced: %s", u.Name, u.Reason)
	}
	if s.Claimed > 0 {
		p.line(1, "", "%d node(s) synced by an older NodeTagSync", s.Claimed)
	}
	for _, f := range s.Failed {
		p.line(1, red, "! unreadable: %s", f)
	}
}

// held prints the mass deletion a pass would hold back (nil: none) and how
// to approve it on the object (kubectl's kind, name and namespace flag).
func (p *planPrinter) held(h *v1alpha1.HeldDeletions, object string) {
	if h == nil {
		return
	}
	p.line(1, red, "! %d tag deletion(s) would be held for approval: %s", h.Count, h.Reason)
	for _, r := range h.Resources {
		p.line(2, red, "- %s: %s", r.Resource, strings.Join(r.Tags, ", "))
	}
	if h.Token == "" {
		p.line(2, "", "the controller's next pass holds them and gives the approval token (tagsync status)")
		return
	}
	p.line(2, "", "approve once: kubectl annotate %s %s=%s --overwrite", object, v1alpha1.ApproveDeletionsAnnotation, h.Token)
}

// metadata prints one CloudMetadata's plan.
func (p *planPrinter) metadata(m metadataPlan) {
	p.line(0, "", "CloudMetadata %s/%s", m.Namespace, m.Name)
	if m.Problem != "" {
		p.line(1, red, "! %s", m.Problem)
		return
	}
	for _, q := range m.Requests {
		p.line(1, "", "%s %s (%s, opcode %s): %d matched, %d in sync", q.Kind, q.Name, q.Cloud, q.Opcode, q.Matched, q.InSync)
		if q.Problem != "" {
			p.line(2, red, "! %s", q.Problem)
		}
		for _, res := range q.Resources {
			p.resource(2, res)
		}
		for _, f := range q.Failed {
			p.line(2, red, "! unreadable: %s", f)
		}
		for _, c := range q.Contests {
			p.line(2, red, "! %s wants other values for %s on %d resource(s): neither writes them there", c.Other, strings.Join(c.Names, ", "), c.Resources)
		}
	}
	p.held(m.Held, fmt.Sprintf("cloudmetadata %s -n %s", m.Name, m.Namespace))
	for _, k := range m.Retained {
		p.line(1, yellow, "! kept by deletionPolicy Retain: %s", k)
	}
}

// resource prints one cloud resource's diff.
func (p *planPrinter) resource(indent int, d resourceDiff) {
	p.line(indent, cyan, "%s %s", d.Cloud, d.ID)
	for _, c := range d.Changes {
		p.change(indent+1, c)
	}
	for _, n := range d.NotWritten {
		p.line(indent+1, red, "! %s not written: %s", n.Name, n.Reason)
	}
	if d.Wiped {
		p.line(indent+1, red, "! every synced tag vanished at once (a wipe): reported; restored from the labels under TwoWay")
	}
}

// node prints one Node's diff.
func (p *planPrinter) node(n nodeDiff) {
	p.line(1, cyan, "node %s", n.Name)
	for _, c := range n.Labels {
		p.change(2, c)
	}
	if n.Base != "" {
		p.line(2, yellow, "~ annotation tagsync.io/last-synced-tags = %s", n.Base)
	}
	if n.ReleaseTaint {
		p.line(2, red, "- taint nodetags.tagsync.io/pending:NoSchedule")
	}
	for _, c := range n.Conflicts {
		p.line(2, red, "! %s not written: %s", c.Name, c.Reason)
	}
}

// change prints one + ~ - line.
func (p *planPrinter) change(indent int, c change) {
	switch c.Op {
	case opAdd:
		p.line(indent, green, "+ %s = %q", c.Name, *c.After)
	case opChange:
		p.line(indent, yellow, "~ %s: %q -> %q", c.Name, *c.Before, *c.After)
	default:
		p.line(indent, red, "- %s (was %q)", c.Name, *c.Before)
	}
}
