package tags

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// BaseVersion is the format version Base.Encode writes.
const BaseVersion = 2

// Origin is the configuration a merge base was made under: which sync
// object made it, under which label prefix, in which direction and on which
// cloud. A base describes what both sides agreed on under one configuration;
// read under another (a changed prefix, a re-created object, a Node moved
// to another sync object, another direction or cloud) it would make every
// tag look deleted on the side whose labels moved, so it is no base there.
type Origin struct {
	// Sync identifies the sync object (its UID).
	Sync string `json:"sync"`
	// Prefix is the label prefix the labels were written under.
	Prefix string `json:"prefix"`
	// Direction is the sync direction ("" reads as TwoWay).
	Direction Direction `json:"direction"`
	// Provider is the cloud the tags live on.
	Provider string `json:"provider"`
}

// Same reports whether o and p are one configuration.
func (o Origin) Same(p Origin) bool {
	return o.Sync == p.Sync && o.Prefix == p.Prefix && o.Direction.String() == p.Direction.String() && o.Provider == p.Provider
}

// Base is a stored merge base: the tags both sides last agreed on and the
// Origin they were agreed under.
//
// Its text (Encode, ParseBase) is a JSON object:
//
//	{"v":2,"sync":"4f1c…","prefix":"azure.tags","direction":"TwoWay","provider":"azure",
//	 "tags":{"env":"prod","team":"blue"}}
//
// The format before origins, a bare JSON object of tags such as
// {"env":"prod"}, still parses: as a Legacy base with no Origin.
type Base struct {
	// Origin is the configuration that made the base (zero when Legacy).
	Origin Origin
	// Tags are the agreed tags.
	Tags Set
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
	Tags   Set     `json:"tags"`
	Former *Former `json:"former,omitempty"`
}

// Encode renders b (as version BaseVersion, Legacy or not). encoding/json
// sorts map keys, so equal bases give equal text and an unchanged base is
// never rewritten.
func (b Base) Encode() string {
	t := b.Tags
	if t == nil {
		t = Set{}
	}
	out, err := json.Marshal(baseText{V: BaseVersion, Origin: b.Origin, Tags: t, Former: b.Former})
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
		if bt.V != BaseVersion {
			return Base{}, fmt.Errorf("base format version %d is not %d (written by a newer tagsync?)", bt.V, BaseVersion)
		}
		if bt.Tags == nil {
			return Base{}, errors.New(`a version 2 base needs "tags"`)
		}
		if bt.Former != nil && len(bt.Former.Tags) == 0 {
			bt.Former = nil
		}
		return Base{Origin: bt.Origin, Tags: bt.Tags, Former: bt.Former}, nil
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
//   - made under o: b.Tags, as stored.
//   - made under another configuration: nil, no history. The merge is then
//     a union that deletes nothing on either side.
//   - Legacy (no origin recorded): the entries of b.Tags that both sides
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
	case b.Legacy:
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
	return strings.Join([]string{"sync " + o.Sync, "prefix " + prefix, o.Direction.String(), o.Provider}, ", ")
}
