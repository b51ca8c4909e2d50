package cli

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// cleanupAnnotations are the annotations tagsync writes on Nodes.
var cleanupAnnotations = []string{v1alpha1.LastSyncedTagsAnnotation}

// cleanupTaints are the taint keys tagsync removes from Nodes it has
// synced; cleanup removes them with any effect.
var cleanupTaints = []string{v1alpha1.NodeTagsPendingTaintKey, v1alpha1.LabelSyncPendingTaintKey}

// cleanupReport is what cleanup changes (or, without --apply, would
// change), per Node.
type cleanupReport struct {
	// Applied is true when the changes were written (--apply).
	Applied bool `json:"applied"`
	// Nodes are the Nodes with something to change or to say, by name.
	Nodes []nodeCleanup `json:"nodes"`
	// Summary counts the changes.
	Summary cleanupSummary `json:"summary"`
	// Warnings are said on standard error.
	Warnings []string `json:"warnings,omitempty"`
}

// cleanupSummary counts a report's changes.
type cleanupSummary struct {
	// Nodes counts the Nodes changed.
	Nodes int `json:"nodes"`
	// Annotations, Taints and Labels count what was removed.
	Annotations int `json:"annotations"`
	Taints      int `json:"taints"`
	Labels      int `json:"labels"`
	// LabelsKept counts the base's labels left because their value changed.
	LabelsKept int `json:"labelsKept"`
	// Failed counts the Nodes that could not be patched.
	Failed int `json:"failed"`
}

// nodeCleanup is what cleanup removes from one Node.
type nodeCleanup struct {
	Name string `json:"name"`
	// Annotations are the annotation keys removed.
	Annotations []string `json:"annotations,omitempty"`
	// Taints are the taints removed, as key:effect.
	Taints []string `json:"taints,omitempty"`
	// Labels are the labels removed (--labels).
	Labels []cleanupLabel `json:"labels,omitempty"`
	// KeptLabels are labels the base names whose value is no longer the
	// synced one: not tagsync's, kept.
	KeptLabels []cleanupLabel `json:"keptLabels,omitempty"`
	// LabelPrefix is the prefix the base's labels were found under, and
	// PrefixFrom where it came from (--labels).
	LabelPrefix *string `json:"labelPrefix,omitempty"`
	PrefixFrom  string  `json:"prefixFrom,omitempty"`
	// Notes say why labels were left, or what else happened.
	Notes []string `json:"notes,omitempty"`
	// Error is why the patch failed (--apply).
	Error string `json:"error,omitempty"`

	resourceVersion string
	// taints are the Node's taints without the removed ones (nil when none
	// is removed).
	taints []corev1.Taint
}

// cleanupLabel is one label: its key, its value on the Node and, for a
// kept label, the value tagsync synced.
type cleanupLabel struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Synced string `json:"synced,omitempty"`
}

// changes reports whether n removes anything.
func (n nodeCleanup) changes() bool {
	return len(n.Annotations) > 0 || len(n.Taints) > 0 || len(n.Labels) > 0
}

// patch is n as a Node patch, guarded by the resourceVersion read.
func (n nodeCleanup) patch() kit.NodePatch {
	p := kit.NodePatch{RemoveAnnotations: n.Annotations, Taints: n.taints, Guard: true}
	for _, l := range n.Labels {
		p.Labels.Delete = append(p.Labels.Delete, l.Key)
	}
	return p
}

// add puts n into the report and its counts.
func (r *cleanupReport) add(n nodeCleanup) {
	r.Nodes = append(r.Nodes, n)
	r.Summary.LabelsKept += len(n.KeptLabels)
	if n.Error != "" {
		r.Summary.Failed++
		return
	}
	if n.changes() {
		r.Summary.Nodes++
	}
	r.Summary.Annotations += len(n.Annotations)
	r.Summary.Taints += len(n.Taints)
	r.Summary.Labels += len(n.Labels)
}

// cleanupPlanner decides what to remove from a Node.
type cleanupPlanner struct {
	// labels asks for the synced labels too.
	labels bool
	// prefix is --label-prefix, when prefixSet.
	prefix    string
	prefixSet bool
	// syncs are the NodeTagSyncs, oldest first (read only for --labels
	// without --label-prefix).
	syncs []v1alpha1.NodeTagSync
}

// plan returns what to remove from node.
func (pl *cleanupPlanner) plan(node *corev1.Node) nodeCleanup {
	n := nodeCleanup{Name: node.Name, resourceVersion: node.ResourceVersion}
	for _, k := range cleanupAnnotations {
		if _, ok := node.Annotations[k]; ok {
			n.Annotations = append(n.Annotations, k)
		}
	}
	kept := make([]corev1.Taint, 0, len(node.Spec.Taints))
	for _, t := range node.Spec.Taints {
		if slices.Contains(cleanupTaints, t.Key) {
			n.Taints = append(n.Taints, t.Key+":"+string(t.Effect))
			continue
		}
		kept = append(kept, t)
	}
	if len(n.Taints) > 0 {
		n.taints = kept
	}
	if raw, ok := node.Annotations[v1alpha1.LastSyncedTagsAnnotation]; ok && pl.labels {
		pl.planLabels(&n, node, raw)
	}
	return n
}

// planLabels adds to n the labels the base raw says the node sync wrote
// that still carry the synced value, and the ones whose value changed.
func (pl *cleanupPlanner) planLabels(n *nodeCleanup, node *corev1.Node, raw string) {
	base, err := tags.ParseBase(raw)
	if err != nil {
		n.Notes = append(n.Notes, fmt.Sprintf("annotation %s is no merge base (%v): no label removed", v1alpha1.LastSyncedTagsAnnotation, err))
		return
	}
	origin, from, ok := pl.origin(base, node)
	if !ok {
		n.Notes = append(n.Notes, "the merge base is in the older format, which records no label prefix, "+
			"and no NodeTagSync selects the node: no label removed (--label-prefix names the prefix)")
		return
	}
	n.LabelPrefix, n.PrefixFrom = &origin.Prefix, from
	if origin.Direction == tags.NodeToCloud {
		n.Notes = append(n.Notes, "the merge base was made under direction NodeToCloud, which never writes labels: no label removed")
		return
	}
	kind, err := clouds.Lookup(cmp.Or(origin.Provider, clouds.Default().Name))
	if err != nil {
		n.Notes = append(n.Notes, "the merge base names "+err.Error()+": no label removed")
		return
	}
	synced, _ := tags.Codec{Prefix: origin.Prefix, Rules: &kind.Rules}.ToLabels(base.Tags)
	keys := make([]string, 0, len(synced))
	for k := range synced {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, ok := node.Labels[k]
		switch {
		case !ok:
		case v == synced[k]:
			n.Labels = append(n.Labels, cleanupLabel{Key: k, Value: v})
		default:
			n.KeptLabels = append(n.KeptLabels, cleanupLabel{Key: k, Value: v, Synced: synced[k]})
		}
	}
}

// origin is the configuration base's labels were written under, and where
// cleanup learnt it: the base itself, --label-prefix, or the oldest
// NodeTagSync selecting node. ok is false when nothing says.
func (pl *cleanupPlanner) origin(base tags.Base, node *corev1.Node) (tags.Origin, string, bool) {
	if !base.Legacy {
		return base.Origin, "the merge base", true
	}
	if pl.prefixSet {
		return tags.Origin{Prefix: pl.prefix}, "--label-prefix (the merge base records none)", true
	}
	for i := range pl.syncs {
		nts := &pl.syncs[i]
		if selects(nts, node) {
			o := tags.Origin{Prefix: nts.Spec.EffectiveLabelPrefix(), Direction: tags.Direction(nts.Spec.Direction),
				Provider: string(nts.Spec.Provider)}
			return o, "NodeTagSync " + nts.Name + " (the merge base records none)", true
		}
	}
	return tags.Origin{}, "", false
}
