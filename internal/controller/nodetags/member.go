package nodetags

import (
	"fmt"
	"strings"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/tags"
)

// placed is a managed node, its placement note and whether its resource
// is shared.
type placed struct {
	node   *cachedNode
	note   string
	shared bool
}

// members decodes the nodes of one resource for the merge, except steady
// ones, which are counted. When some nodes of a resource are not steady,
// all are merged: a scale set's nodes aggregate together. A steady node is
// carried into this pass's marks whether or not it is merged.
func (pp *passPlan) members(in planInput, id string, nodes []placed, tagsHash uint64) []*member {
	steady := 0
	for _, n := range nodes {
		if n.note != "" {
			continue
		}
		if mark := steadyMark(n.node, tagsHash, in.generation); in.steady[n.node.Name] == mark {
			pp.steady[n.node.Name] = mark
			steady++
		}
	}
	if steady == len(nodes) {
		pp.steadyNodes += steady
		return nil
	}
	out := make([]*member, len(nodes))
	for i, n := range nodes {
		m, err := newMember(in.cfg, n.node, n.note)
		m.baseErr = err // reported: the node is treated as new
		m.resource = id
		out[i] = m
	}
	return out
}

// readBase returns the Node's stored base; ok is false when there is none.
// A malformed annotation is reported and treated as no history, which can
// only add, never delete.
func readBase(node *cachedNode) (base tags.Base, ok bool, err error) {
	raw, found := node.Annotations[v1alpha1.LastSyncedTagsAnnotation]
	if !found {
		return tags.Base{}, false, nil
	}
	base, err = tags.ParseBase(raw)
	if err != nil {
		return tags.Base{}, false, fmt.Errorf("annotation %s on node %s: %v; treating the node as new", v1alpha1.LastSyncedTagsAnnotation, node.Name, err)
	}
	return base, true, nil
}

// member is one managed Node in a sync pass, with its side of the merge.
type member struct {
	node *cachedNode
	// stored is the Node's stored base as read (its Origin, Legacy and
	// Former); hasBase is false when there is none.
	stored  tags.Base
	hasBase bool
	// base and baseTaints are the stored base's tags in scope, split into
	// label tags and taint tags (syncTaints); mergeBases decides whether
	// they are a base for this pass's configuration.
	base       tags.Set
	baseTaints tags.Set
	baseText   string   // the annotation as found
	nodeTags   tags.Set // managed labels decoded, filtered
	taintTags  tags.Set // the node's taints as tags (syncTaints)
	skipped    []tags.Skipped
	note       string // placement note (e.g. a fallback to the scale set)
	resource   string // the canonical ID of the resource it syncs with
	// baseErr is why the stored base could not be read (nil: it could,
	// or there is none): reported, and the node is treated as new.
	baseErr error
}

// newMember decodes a Node's managed labels and stored base.
func newMember(cfg syncConfig, node *cachedNode, note string) (*member, error) {
	m := &member{node: node, baseText: node.Annotations[v1alpha1.LastSyncedTagsAnnotation], note: note}
	stored, ok, err := readBase(node)
	if ok {
		rest, taints := tags.SplitTaintTags(cfg.nameCase(), stored.Tags)
		m.stored, m.hasBase = stored, true
		m.base = cfg.filter.Apply(cfg.nameCase(), orEmpty(rest))
		if cfg.syncTaints {
			m.baseTaints = orEmpty(taints)
		}
	}
	if cfg.syncTaints {
		m.taintTags = taintTags(node)
	}
	decoded, skipped := cfg.codec.FromLabels(node.Labels)
	m.nodeTags = cfg.filter.Apply(cfg.nameCase(), decoded)
	m.skipped = skipped
	return m, err
}

// mergeBases are the member's merge bases (labels, taints) under the
// pass's configuration, given the cloud's tags and taint tags in scope:
// the stored ones when the same configuration made them, none (nil) when
// another did, and a legacy base's entries both sides still hold (see
// tags.Base.For).
func (m *member) mergeBases(cfg syncConfig, cloudTags, cloudTaints tags.Set) (labels, taints tags.Set) {
	if !m.hasBase {
		return nil, nil
	}
	nc := cfg.nameCase()
	b := m.stored
	b.Tags = m.base
	o := m.origin(cfg)
	labels, _ = b.For(o, nc, cloudTags, m.nodeTags)
	if cfg.syncTaints {
		b.Tags = m.baseTaints
		taints, _ = b.For(o, nc, orEmpty(cloudTaints), orEmpty(m.taintTags))
	}
	return labels, taints
}

// origin is the configuration the member's base is made under: the
// pass's, with the member's resource.
func (m *member) origin(cfg syncConfig) tags.Origin { return cfg.origin.OnResource(m.resource) }

// sources are where the member's stored base says its tags came from, when
// that base was agreed with the same resource by the same sync (nil:
// nothing known).
func (m *member) sources(cfg syncConfig) tags.Sources {
	o := m.stored.Origin
	if !m.hasBase || m.stored.Legacy || o.Sync != cfg.origin.Sync || o.Provider != cfg.origin.Provider ||
		!strings.EqualFold(o.Resource, m.resource) {
		return nil
	}
	return m.stored.From
}

// resourceSources are where the tags of a resource came from, as its
// members' bases record them (tags.Combine): the Nodes of a scale set
// share what they know, so a Node that joined later knows that a tag came
// from another Node's label.
func resourceSources(cfg syncConfig, members []*member) tags.Sources {
	all := make([]tags.Sources, len(members))
	for i, m := range members {
		all[i] = m.sources(cfg)
	}
	return tags.Combine(cfg.nameCase(), all...)
}

// former are the labels the member still carries under an earlier label
// prefix: those of its stored base when that base was made under another
// prefix, else those its base still lists (nil: none).
func (m *member) former(cfg syncConfig) *tags.Former {
	switch {
	case !m.hasBase || m.stored.Legacy:
		return nil
	case m.stored.Origin.Prefix != cfg.origin.Prefix:
		rest, _ := tags.SplitTaintTags(cfg.nameCase(), m.stored.Tags)
		if len(rest) == 0 {
			return nil
		}
		return &tags.Former{Prefix: m.stored.Origin.Prefix, Tags: rest}
	case m.stored.Former != nil && m.stored.Former.Prefix != cfg.origin.Prefix:
		return m.stored.Former
	}
	return nil
}
