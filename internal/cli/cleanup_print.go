package cli

import (
	"fmt"
	"io"
)

// print writes the report as a readable list of removals per Node and a
// summary; labels says whether --labels was given.
func (r *cleanupReport) print(w io.Writer, colour bool, labels bool) error {
	p := &planPrinter{w: w, colour: colour}
	for _, n := range r.Nodes {
		p.line(0, cyan, "node %s", n.Name)
		for _, a := range n.Annotations {
			p.line(1, red, "- annotation %s", a)
		}
		for _, t := range n.Taints {
			p.line(1, red, "- taint %s", t)
		}
		for _, l := range n.Labels {
			p.line(1, red, "- label %s (was %q)", l.Key, l.Value)
		}
		for _, l := range n.KeptLabels {
			p.line(1, yellow, "= label %s kept: %q is not the synced %q (changed since tagsync wrote it)", l.Key, l.Value, l.Synced)
		}
		if n.LabelPrefix != nil && (len(n.Labels) > 0 || len(n.KeptLabels) > 0) {
			prefix := *n.LabelPrefix
			if prefix == "" {
				prefix = `"" (no prefix)`
			}
			p.line(1, "", "synced labels under prefix %s, from %s", prefix, n.PrefixFrom)
		}
		for _, note := range n.Notes {
			p.line(1, yellow, "! %s", note)
		}
		if n.Error != "" {
			p.line(1, red, "! not patched: %s", n.Error)
		}
	}
	if len(r.Nodes) == 0 {
		p.line(0, "", "No Node carries tagsync's annotations or pending taints: nothing to clean up.")
		return p.err
	}
	p.line(0, "", "")
	s := r.Summary
	counts := fmt.Sprintf("%d annotation(s), %d taint(s), %d label(s) removed", s.Annotations, s.Taints, s.Labels)
	if r.Applied {
		p.line(0, "", "Cleaned up %d node(s): %s; no cloud tag was touched.", s.Nodes, counts)
	} else {
		p.line(0, "", "Dry run: %d node(s) would change: %s; nothing was written (--apply writes it).", s.Nodes, counts)
	}
	if s.LabelsKept > 0 {
		p.line(0, "", "%d label(s) kept: their value changed since tagsync synced it.", s.LabelsKept)
	}
	if s.Failed > 0 {
		p.line(0, red, "%d node(s) could not be patched.", s.Failed)
	}
	if !labels {
		p.line(0, "", "Synced labels are kept; --labels also removes the ones that still carry the synced value.")
	}
	return p.err
}
