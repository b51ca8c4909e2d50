package tags

import (
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
