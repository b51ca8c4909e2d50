package tags

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ReservedSyncPrefixes are the label prefixes label sync never owns: the
// kubelet and Kubernetes write the Node labels under them. Other subdomains
// of kubernetes.io (such as my-prefix.kubernetes.io) may be owned.
var ReservedSyncPrefixes = []string{"kubernetes.io", "k8s.io", "kubelet.kubernetes.io", "beta.kubernetes.io"}

// ErrInvalidPrefix is the error of a label sync prefix that is not a
// lower-case DNS subdomain or is reserved.
var ErrInvalidPrefix = errors.New("invalid label sync prefix")

// LabelPrefixOf returns the prefix of a label key (the part before the first
// "/") and whether it has one.
func LabelPrefixOf(key string) (string, bool) {
	prefix, _, found := strings.Cut(key, "/")
	return prefix, found
}

// InSyncScope reports whether a label key is owned by one of prefixes: its
// prefix equals one of them exactly (rack.example.com owns
// rack.example.com/row, not a.rack.example.com/row nor rack.example.com.x/row).
// A key without a prefix is never in scope.
func InSyncScope(key string, prefixes []string) bool {
	p, ok := LabelPrefixOf(key)
	return ok && slices.Contains(prefixes, p)
}

// SyncLabels returns the change that makes the Node's in-scope labels
// exactly the host's: in-scope host labels that the Node lacks or holds with
// another value are set, in-scope Node labels the host lacks are removed.
// Labels outside the prefixes are never part of it, on either side; an empty
// result means the Node is in sync.
//
//	SyncLabels({"r.io/rack": "a", "x/y": "1"}, {"r.io/rack": "b", "r.io/old": "1", "z": "2"}, ["r.io"])
//	== {Set: {"r.io/rack": "a"}, Delete: ["r.io/old"]}
func SyncLabels(host, node map[string]string, prefixes []string) LabelChanges {
	var out LabelChanges
	if len(prefixes) == 0 {
		return out
	}
	for k, v := range host {
		if !InSyncScope(k, prefixes) {
			continue
		}
		if cur, ok := node[k]; !ok || cur != v {
			if out.Set == nil {
				out.Set = map[string]string{}
			}
			out.Set[k] = v
		}
	}
	for k := range node {
		if _, onHost := host[k]; !onHost && InSyncScope(k, prefixes) {
			out.Delete = append(out.Delete, k)
		}
	}
	sort.Strings(out.Delete)
	return out
}

// ContestedLabels returns, sorted, the label keys two hosts synced to one
// Node disagree on: keys in scope of both prefix lists that one host has
// and the other lacks (its sync would remove them) or holds with another
// value. Keys only one side owns, and keys neither host has, are never
// contested.
//
//	ContestedLabels({"r.io/rack": "a", "r.io/row": "3"}, ["r.io"], {"r.io/rack": "b"}, ["r.io"])
//	== ["r.io/rack", "r.io/row"]
func ContestedLabels(a map[string]string, aPrefixes []string, b map[string]string, bPrefixes []string) []string {
	var out []string
	differs := func(k string) bool {
		av, aok := a[k]
		bv, bok := b[k]
		return (aok != bok || av != bv) && InSyncScope(k, aPrefixes) && InSyncScope(k, bPrefixes)
	}
	for k := range a {
		if differs(k) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, inA := a[k]; !inA && differs(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// ValidateSyncPrefix checks one label sync prefix: a lower-case DNS
// subdomain (RFC 1123, at most 253 characters, no "/") that is not one of
// ReservedSyncPrefixes. The error wraps ErrInvalidPrefix and says why.
func ValidateSyncPrefix(p string) error {
	if slices.Contains(ReservedSyncPrefixes, p) {
		return fmt.Errorf("%w: %q is reserved: Kubernetes and the kubelet own the Node labels under %s; use a prefix of your own, such as rack.example.com or my-prefix.kubernetes.io",
			ErrInvalidPrefix, p, strings.Join(ReservedSyncPrefixes, ", "))
	}
	if errs := validation.IsDNS1123Subdomain(p); len(errs) > 0 {
		return fmt.Errorf("%w: %q is not a lower-case DNS subdomain such as rack.example.com (the part of a label key before the /): %s",
			ErrInvalidPrefix, p, strings.Join(errs, "; "))
	}
	return nil
}

// ParseSyncPrefixes parses a comma-separated list of label sync prefixes,
// as in CAPM3's Metal3Cluster annotation metal3.io/metal3-label-sync-prefixes
// ("my-prefix.foobar.io, my.thing"): entries are trimmed of spaces, empty
// entries are ignored, duplicates are dropped, and one invalid entry rejects
// the whole list (the error names every invalid entry). The result keeps the
// order of first appearance.
func ParseSyncPrefixes(s string) ([]string, error) {
	var out []string
	var errs []error
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" || slices.Contains(out, p) {
			continue
		}
		if err := ValidateSyncPrefix(p); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// LabelRecord is what label sync remembers on a Node (annotation
// tagsync.io/labelsync-owned): for each prefix it syncs there, the source
// that syncs it and the keys under it that the source set or found
// agreeing with its host. A prefix without an entry is new to the sync.
type LabelRecord map[string]PrefixRecord

// PrefixRecord is one prefix's entry in a LabelRecord.
type PrefixRecord struct {
	// Source names the source that syncs the prefix ("LabelSyncProfile
	// ns/name").
	Source string `json:"source"`
	// Keys are the label keys under the prefix the source owns, sorted.
	Keys []string `json:"keys"`
	// Foreign are label keys under the prefix the Node carried before the
	// sync owned it, whose removal waits for a person, sorted.
	Foreign []string `json:"foreign,omitempty"`
}

// ParseLabelRecord reads a LabelRecord; "" is an empty record.
func ParseLabelRecord(text string) (LabelRecord, error) {
	rec := LabelRecord{}
	if text == "" {
		return rec, nil
	}
	if err := json.Unmarshal([]byte(text), &rec); err != nil {
		return LabelRecord{}, fmt.Errorf("not a label sync record (a JSON object of prefix -> {source, keys}): %v", err)
	}
	return rec, nil
}

// Encode renders rec (map keys sorted, so an unchanged record has
// unchanged text).
func (rec LabelRecord) Encode() string {
	out, err := json.Marshal(rec)
	if err != nil { // strings only: always marshals
		panic(err)
	}
	return string(out)
}

// LabelSyncPlan is what one host's sync does to its Node, from the host's
// labels, the Node's and the Node's LabelRecord (PlanLabelSync).
type LabelSyncPlan struct {
	// Changes make the Node's in-scope labels the host's.
	Changes LabelChanges
	// Reverts are the deletions in Changes of labels added on the Node
	// under a prefix the sync already owned: reverted, as the host is the
	// source of truth.
	Reverts []string
	// Removals are the deletions in Changes of labels the sync owned that
	// the host no longer has.
	Removals []string
	// Unclear are the deletions in Changes of labels under a prefix new to
	// the sync, or recorded as foreign to it (the Node carried them before
	// the sync owned the prefix): the sync never wrote them, so a person
	// must approve their removal.
	Unclear []string

	source   string
	prefixes []string
	host     map[string]string
	rec      LabelRecord
}

// PlanLabelSync is SyncLabels with the memory of rec: it sorts the
// deletions by their intent (Reverts, Removals, Unclear) so that a caller
// can hold the removals of many labels at once and the unclear ones for
// a person. source names the syncing source in the record.
//
//	rec {"r.io": {source: p, keys: [r.io/rack]}}, prefixes [r.io, n.io]
//	host {r.io/rack: a}; node {r.io/rack: a, r.io/extra: 1, n.io/old: 2}
//	→ Reverts [r.io/extra] (added on the Node), Unclear [n.io/old] (n.io is new)
func PlanLabelSync(host, node map[string]string, prefixes []string, source string, rec LabelRecord) LabelSyncPlan {
	p := LabelSyncPlan{Changes: SyncLabels(host, node, prefixes), source: source, prefixes: prefixes, host: host, rec: rec}
	for _, k := range p.Changes.Delete {
		prefix, _ := LabelPrefixOf(k)
		entry, known := rec[prefix]
		switch {
		case !known, slices.Contains(entry.Foreign, k):
			p.Unclear = append(p.Unclear, k)
		case slices.Contains(entry.Keys, k):
			p.Removals = append(p.Removals, k)
		default:
			p.Reverts = append(p.Reverts, k)
		}
	}
	return p
}

// Record is the Node's record once the plan's changes are written except
// the deletions held: every prefix of the source gets an entry with the
// host's keys under it and its held removals (still owned), and its held
// unclear keys as Foreign (their removal still waits for a person);
// unless a key under it is contested by another source (whose entry, if
// any, is left as it is, so two sources never take turns rewriting it).
// An entry with the same keys is kept as it is, whichever source made it;
// entries the source made for prefixes it no longer syncs are dropped;
// other sources' entries are kept.
func (p LabelSyncPlan) Record(held, contested []string) LabelRecord {
	out := LabelRecord{}
	for prefix, e := range p.rec {
		if e.Source != p.source || slices.Contains(p.prefixes, prefix) {
			out[prefix] = e
		}
	}
	for _, prefix := range p.prefixes {
		if slices.ContainsFunc(contested, func(k string) bool { return underPrefix(k, prefix) }) {
			continue
		}
		var keys, foreign []string
		for k := range p.host {
			if underPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		for _, k := range held {
			switch {
			case !underPrefix(k, prefix):
			case slices.Contains(p.Removals, k):
				keys = append(keys, k) // still owned: its removal waits
			case slices.Contains(p.Unclear, k):
				foreign = append(foreign, k)
			}
		}
		e := PrefixRecord{Source: p.source, Keys: sortedSet(keys), Foreign: sortedSet(foreign)}
		if old, ok := out[prefix]; ok && slices.Equal(old.Keys, e.Keys) && slices.Equal(old.Foreign, e.Foreign) {
			continue
		}
		out[prefix] = e
	}
	return out
}

// underPrefix reports whether label key k is under prefix.
func underPrefix(k, prefix string) bool {
	pre, ok := LabelPrefixOf(k)
	return ok && pre == prefix
}

// sortedSet returns s sorted without duplicates ([] for none, so a
// record's keys read as a list).
func sortedSet(s []string) []string {
	out := slices.Compact(slices.Sorted(slices.Values(s)))
	if out == nil {
		return []string{}
	}
	return out
}
