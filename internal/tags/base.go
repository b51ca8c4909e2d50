package tags

import (
	"encoding/json"
	"fmt"
	"strings"
)

// BaseVersion is the format version Base.Encode writes. Version 2 (no
// resource, no origins) still parses.
const BaseVersion = 3

// Origin is the configuration a merge base was made under: which sync
// object made it, under which label prefix, in which direction, on which
// cloud and with which resource. A base describes what both sides agreed on
// under one configuration; read under another (a changed prefix, a
// re-created object, a Node moved to another sync object, another direction
// or cloud, another target resource) it would make every tag look deleted on
// the side whose labels moved, so it is no base there.
type Origin struct {
	// Sync identifies the sync object (its UID).
	Sync string `json:"sync"`
	// Prefix is the label prefix the labels were written under.
	Prefix string `json:"prefix"`
	// Direction is the sync direction ("" reads as TwoWay).
	Direction Direction `json:"direction"`
	// Provider is the cloud the tags live on.
	Provider string `json:"provider"`
	// Resource is the ID of the resource the tags were agreed with,
	// compared without case ("" in a version 2 base, which recorded none).
	Resource string `json:"resource,omitempty"`
}

// Same reports whether o and p are one configuration, resource included.
func (o Origin) Same(p Origin) bool {
	return o.sameSync(p) && strings.EqualFold(o.Resource, p.Resource)
}

// sameSync reports whether o and p are one configuration, whatever their
// resources.
func (o Origin) sameSync(p Origin) bool {
	return o.Sync == p.Sync && o.Prefix == p.Prefix && o.Direction.String() == p.Direction.String() && o.Provider == p.Provider
}

// OnResource returns o with its Resource set to id.
func (o Origin) OnResource(id string) Origin {
	o.Resource = id
	return o
}

// Sources records, per synced tag name, the side the tag came from: the
// cloud (it was on the resource first and was copied to the Nodes) or a
// Node (a label copied up to the resource). A name it lacks came from
// neither knowingly (both sides already held it when the sync first met
// them, or the base predates origins). Names match as the cloud's NameCase
// says (see Source).
type Sources map[string]Side

// Source returns the side name came from (SideNone: not known).
func (s Sources) Source(nc NameCase, name string) Side {
	if side, ok := s[name]; ok {
		return side
	}
	for n, side := range s {
		if nc.Key(n) == nc.Key(name) {
			return side
		}
	}
	return SideNone
}

// Combine returns the sources several Nodes' bases record for the tags of
// one resource they share: a name's side when every Node that records one
// records the same, and no side when they disagree (an unclear origin,
// whose deletions need a person). nil when none records anything.
func Combine(nc NameCase, all ...Sources) Sources {
	var out Sources
	mixed := map[string]bool{}
	for _, s := range all {
		for name, side := range s {
			if side == SideNone || mixed[nc.Key(name)] {
				continue
			}
			if out == nil {
				out = Sources{}
			}
			prev := out.Source(nc, name)
			switch {
			case prev == SideNone:
				out[name] = side
			case prev != side:
				mixed[nc.Key(name)] = true
				for n := range out {
					if nc.Key(n) == nc.Key(name) {
						delete(out, n)
					}
				}
			}
		}
	}
	return out
}

// text renders s for a stored base: name -> "cloud" or "node".
func (s Sources) text() map[string]string {
	if len(s) == 0 {
		return nil
	}
	out := make(map[string]string, len(s))
	for n, side := range s {
		if side != SideNone {
			out[n] = side.String()
		}
	}
	return out
}

// parseSources reads a stored base's sources; an unknown side is an error.
func parseSources(m map[string]string) (Sources, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(Sources, len(m))
	for n, v := range m {
		switch v {
		case "cloud":
			out[n] = SideCloud
		case "node":
			out[n] = SideNode
		default:
			return nil, fmt.Errorf("tag %q came from %q: want cloud or node", n, v)
		}
	}
	return out, nil
}

// Base is a stored merge base: the tags both sides last agreed on and the
// Origin they were agreed under.
//
// Its text (Encode, ParseBase) is a JSON object:
//
//	{"v":3,"sync":"4f1c…","prefix":"azure.tags","direction":"TwoWay","provider":"azure",
//	 "resource":"/subscriptions/…/virtualmachinescalesets/pool",
//	 "tags":{"env":"prod","team":"blue"},"from":{"env":"cloud","team":"node"}}
//
// Version 2, the same without "resource" and "from", still parses (its
// Origin has no Resource). The format before origins, a bare JSON object
// of tags such as {"env":"prod"}, still parses: as a Legacy base with no
// Origin.
type Base struct {
	// Origin is the configuration that made the base (zero when Legacy).
	Origin Origin
	// Tags are the agreed tags.
	Tags Set
	// From records which side each tag came from (nil: none known).
	From Sources
	// Legacy is set for a base in the format before origins.
	Legacy bool
	// Former, when set, are labels written under an earlier label prefix
	// that are still to be removed once their tags' labels under the
	// current prefix are in place (a prefix change moves labels).
	Former *Former
}

// Former are the tags whose labels were written under an earlier prefix.
type Former struct {
	// Prefix is the earlier label prefix.
	Prefix string `json:"prefix"`
	// Tags are the tags (and values) whose labels were written under it.
	Tags Set `json:"tags"`
}

// baseText is Base's stored form.
type baseText struct {
	V int `json:"v"`
	Origin
	Tags   Set               `json:"tags"`
	From   map[string]string `json:"from,omitempty"`
	Former *Former           `json:"former,omitempty"`
}

// Encode renders b (as version BaseVersion, Legacy or not). encoding/json
// sorts map keys, so equal bases give equal text and an unchanged base is
// never rewritten.
func (b Base) Encode() string {
	t := b.Tags
	if t == nil {
		t = Set{}
	}
	out, err := json.Marshal(baseText{V: BaseVersion, Origin: b.Origin, Tags: t, From: b.From.text(), Former: b.Former})
	if err != nil { // strings only: always marshals
		panic(err)
	}
	return string(out)
}

// ParseBase reads a stored base in either format. An error says what is
// wrong; the caller then has no base (which can only add, never delete).
func ParseBase(text string) (Base, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &fields); err != nil {
		return Base{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if v, ok := fields["v"]; ok && len(v) > 0 && v[0] >= '0' && v[0] <= '9' {
		var bt baseText
		if err := json.Unmarshal([]byte(text), &bt); err != nil {
			return Base{}, fmt.Errorf("not a version %s base: %v", v, err)
		}
		if bt.V != BaseVersion && bt.V != 2 {
			return Base{}, fmt.Errorf("base format version %d is neither 2 nor %d (written by a newer tagsync?)", bt.V, BaseVersion)
		}
		if bt.Tags == nil {
			return Base{}, fmt.Errorf(`a version %d base needs "tags"`, bt.V)
		}
		if bt.Former != nil && len(bt.Former.Tags) == 0 {
			bt.Former = nil
		}
		from, err := parseSources(bt.From)
		if err != nil {
			return Base{}, err
		}
		return Base{Origin: bt.Origin, Tags: bt.Tags, From: from, Former: bt.Former}, nil
	}
	legacy := Set{}
	if err := json.Unmarshal([]byte(text), &legacy); err != nil {
		return Base{}, fmt.Errorf("neither a versioned base nor a JSON object of strings: %v", err)
	}
	return Base{Tags: legacy, Legacy: true}, nil
}

// For returns b as the merge base of a sync whose configuration is o, given
// the tags now on the cloud and on the Node (in scope, as the merge sees
// them), and whether b was made under o:
//
//   - made under o, with o's resource: b.Tags, as stored.
//   - made under another configuration, or with another resource (a
//     changed target, a Node moved to another resource): nil, no history.
//     The merge is then a union that deletes nothing on either side.
//   - Legacy (no origin recorded), or made under o before bases recorded
//     their resource (version 2): the entries of b.Tags that both sides
//     still hold. A value changed on one side still propagates; a tag
//     missing from one side is restored from the other, never deleted,
//     because nothing tells a deletion from a changed configuration.
//
// Example: a base {env: prod, team: blue} made under prefix azure.tags,
// read by the same object now using prefix corp.tags, whose Nodes carry no
// corp.tags labels yet, is no base: the merge proposes labels corp.tags/env
// and corp.tags/team and no cloud deletion.
func (b Base) For(o Origin, nc NameCase, cloud, node Set) (Set, bool) {
	switch {
	case b.Legacy, b.Origin.Resource == "" && b.Origin.sameSync(o):
		kept := Set{}
		for name, v := range b.Tags {
			if cloud.Has(nc, name) && node.Has(nc, name) {
				kept[name] = v
			}
		}
		return kept, false
	case b.Origin.Same(o):
		return b.Tags, true
	}
	return nil, false
}

// Describe names o for messages: "sync 4f1c…, prefix azure.tags, TwoWay,
// azure".
func (o Origin) Describe() string {
	prefix := o.Prefix
	if prefix == "" {
		prefix = `""`
	}
	parts := []string{"sync " + o.Sync, "prefix " + prefix, o.Direction.String(), o.Provider}
	if o.Resource != "" {
		parts = append(parts, "resource "+o.Resource)
	}
	return strings.Join(parts, ", ")
}
