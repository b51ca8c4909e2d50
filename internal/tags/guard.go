package tags

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Deletions are the tag deletions one pass plans on one resource: of the
// resource's tags, or (Labels) of the labels of the Nodes synced with it.
type Deletions struct {
	// Resource is the resource's ID.
	Resource string
	// Synced counts the resource's tags in the pass's scope before the
	// deletions (the tags the deletions are a share of).
	Synced int
	// Names are the tags the pass would delete.
	Names []string
	// Unclear are those of Names whose deletion no one's intent makes
	// clear (MergeResult.Unclear): held until approved, however few.
	Unclear []string
	// Labels is set when the deletions are of the labels of the Nodes on
	// Resource (the tags left the resource), not of its tags.
	Labels bool
}

// MassDeletion is a set of planned deletions that is too large, or too
// unclear, to write without a person's approval.
type MassDeletion struct {
	// Deletions are the held deletions, by resource ID.
	Deletions []Deletions
	// Reason says which rule held them.
	Reason string
}

// Count is the number of held tag deletions.
func (m MassDeletion) Count() int {
	n := 0
	for _, d := range m.Deletions {
		n += len(d.Names)
	}
	return n
}

// Held reports whether anything is held.
func (m MassDeletion) Held() bool { return len(m.Deletions) > 0 }

// Has reports whether the deletion of tag name from resource is held
// (names matched as nc says).
func (m MassDeletion) Has(nc NameCase, resource, name string) bool {
	return m.HasOn(nc, false, resource, name)
}

// HasOn reports whether the deletion of name is held: from resource's
// tags, or (labels) from the labels of its Nodes.
func (m MassDeletion) HasOn(nc NameCase, labels bool, resource, name string) bool {
	for _, d := range m.Deletions {
		if d.Labels == labels && d.Resource == resource && slices.ContainsFunc(d.Names, func(n string) bool { return nc.Key(n) == nc.Key(name) }) {
			return true
		}
	}
	return false
}

// Digest identifies exactly the held deletions (resources and names, in any
// order): equal sets, equal digests.
func (m MassDeletion) Digest() string {
	var lines []string
	for _, d := range m.Deletions {
		where := d.Resource
		if d.Labels {
			where = "labels of " + where
		}
		for _, n := range d.Names {
			lines = append(lines, where+"\x00"+n)
		}
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8])
}

// ApprovalToken is what a person writes to approve the held deletions
// once: it names the exact set (Digest) and when it was first held, so the
// same set held again later needs a new approval.
func (m MassDeletion) ApprovalToken(since time.Time) string {
	sum := sha256.Sum256([]byte(m.Digest() + "@" + since.UTC().Format(time.RFC3339)))
	return hex.EncodeToString(sum[:6])
}

// Spread is what GuardDeletions knows of each tag beyond one pass's
// plans, by nc.Key of its name.
type Spread struct {
	// NameCase is how the cloud compares names.
	NameCase NameCase
	// Carriers counts the resources in scope that carry each tag before
	// the pass's deletions (at least those the pass deletes it from).
	Carriers map[string]int
	// Recent lists, for each tag, the resources it was deleted from (of
	// either side) within the window before this pass (DeletionLedger).
	Recent map[string][]string
}

// MaxKeyDeletions is how many resources a tag may be deleted from within
// a window without a person's approval.
const MaxKeyDeletions = 3

// GuardDeletions holds the planned deletions of a pass that would delete
// too much at once, which is how a mistake (a changed configuration, a
// script that removed every label, a platform's rewrite) looks, rather
// than a person's deliberate edits, which remove tags a few at a time:
//
//   - every synced tag of a resource that has at least two, or
//   - more than half of the synced tags of more than one resource, or
//   - one tag from more than MaxKeyDeletions resources, or from at least
//     two and more than a quarter of those that carry it, counting the
//     resources it left within the window (Spread.Recent) with this
//     pass's: a tidy-up that removes a label everywhere, a policy that
//     strips a tag, whether it comes in one pass or one resource at a
//     time;
//   - every unclear deletion (Deletions.Unclear).
//
// The first two rules judge tag deletions; the others labels too, each
// resource's label deletions counting as one deletion of the tag. It
// returns the deletions it holds (for the first two rules a resource's
// whole entry, for the others the tag's); the rest may be written. plans
// are the pass's deletions, one entry per resource and side; entries
// without names are ignored.
//
// Example: three scale sets each with {env, team, cost}; a pass plans to
// delete env from the first, and env and team from the other two. The two
// lose more than half: their four deletions are held (Reason says so).
// env is deleted from three of three resources, more than a quarter: the
// first's env is held too.
func GuardDeletions(plans []Deletions, spread Spread) MassDeletion {
	nc := spread.NameCase
	held := map[string]*Deletions{}
	var reasons []string
	hold := func(d Deletions, names []string) {
		k := d.Resource + "\x00" + strconv.FormatBool(d.Labels)
		h := held[k]
		if h == nil {
			h = &Deletions{Resource: d.Resource, Synced: d.Synced, Labels: d.Labels}
			held[k] = h
		}
		for _, n := range names {
			if !slices.ContainsFunc(h.Names, func(x string) bool { return nc.Key(x) == nc.Key(n) }) {
				h.Names = append(h.Names, n)
			}
		}
	}
	reasons = append(reasons, guardShares(plans, hold)...)
	reasons = append(reasons, guardKeys(plans, spread, hold)...)
	reasons = append(reasons, guardUnclear(plans, hold)...)
	var out MassDeletion
	for _, d := range held {
		d.Names = slices.Sorted(slices.Values(d.Names))
		out.Deletions = append(out.Deletions, *d)
	}
	slices.SortFunc(out.Deletions, func(a, b Deletions) int {
		if c := strings.Compare(a.Resource, b.Resource); c != 0 {
			return c
		}
		return strings.Compare(strconv.FormatBool(a.Labels), strconv.FormatBool(b.Labels))
	})
	out.Reason = strings.Join(reasons, "; ")
	return out
}

// guardShares holds the tag deletions of resources that would lose every,
// or (several resources) more than half of their synced tags.
func guardShares(plans []Deletions, hold func(Deletions, []string)) []string {
	var whole, most []Deletions
	for _, d := range plans {
		if len(d.Names) == 0 || d.Labels {
			continue
		}
		switch {
		case d.Synced >= 2 && len(d.Names) >= d.Synced:
			whole = append(whole, d)
		case 2*len(d.Names) > d.Synced:
			most = append(most, d)
		}
	}
	var reasons []string
	if len(whole) > 0 {
		for _, d := range whole {
			hold(d, d.Names)
		}
		reasons = append(reasons, fmt.Sprintf("%d resource(s) would lose every synced tag", len(whole)))
	}
	if len(whole)+len(most) > 1 && len(most) > 0 {
		for _, d := range most {
			hold(d, d.Names)
		}
		reasons = append(reasons, fmt.Sprintf("%d resource(s) would lose more than half of their synced tags", len(whole)+len(most)))
	}
	return reasons
}

// guardUnclear holds every unclear deletion.
func guardUnclear(plans []Deletions, hold func(Deletions, []string)) []string {
	n := 0
	for _, d := range plans {
		if len(d.Unclear) > 0 && !d.Labels {
			hold(d, d.Unclear)
			n += len(d.Unclear)
		}
	}
	if n == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d tag deletion(s) because labels were removed from Nodes, of tags that did not come from the Nodes", n)}
}

// guardKeys holds this pass's deletions of each tag that, with the
// window's, leaves too many resources (see GuardDeletions).
func guardKeys(plans []Deletions, spread Spread, hold func(Deletions, []string)) []string {
	nc := spread.NameCase
	type spot struct {
		d    Deletions
		name string
	}
	now := map[string][]spot{}
	for _, d := range plans {
		for _, n := range d.Names {
			now[nc.Key(n)] = append(now[nc.Key(n)], spot{d, n})
		}
	}
	var reasons []string
	for _, k := range slices.Sorted(maps.Keys(now)) {
		resources := map[string]bool{}
		for _, r := range spread.Recent[k] {
			resources[r] = true
		}
		before := len(resources)
		for _, s := range now[k] {
			resources[s.d.Resource] = true
		}
		n := len(resources)
		carriers := max(spread.Carriers[k], n-before) + before
		if n <= MaxKeyDeletions && (n < 2 || 4*n <= carriers) {
			continue
		}
		for _, s := range now[k] {
			hold(s.d, []string{s.name})
		}
		reasons = append(reasons, fmt.Sprintf("tag %s would leave %d of the %d resources that carried it", now[k][0].name, n, carriers))
	}
	return reasons
}

// DeletionLedger remembers, per tag, which resources lost it (their tag,
// or their Nodes' labels) and when, so that GuardDeletions judges a
// deletion spread over many passes as one. It is not safe for concurrent
// use.
type DeletionLedger struct {
	// Window is how long a deletion is remembered.
	Window time.Duration
	seen   map[string]map[string]time.Time // nc.Key(name) -> resource -> when
}

// DefaultDeletionWindow is the window of a DeletionLedger that names none.
const DefaultDeletionWindow = time.Hour

// Record remembers that resource lost each of names at time at.
func (l *DeletionLedger) Record(nc NameCase, resource string, names []string, at time.Time) {
	if l.seen == nil {
		l.seen = map[string]map[string]time.Time{}
	}
	for _, n := range names {
		k := nc.Key(n)
		if l.seen[k] == nil {
			l.seen[k] = map[string]time.Time{}
		}
		l.seen[k][resource] = at
	}
}

// Recent forgets what is older than the window at now and returns the
// rest, by nc.Key of the name, for Spread.Recent.
func (l *DeletionLedger) Recent(now time.Time) map[string][]string {
	window := l.Window
	if window <= 0 {
		window = DefaultDeletionWindow
	}
	out := map[string][]string{}
	for k, resources := range l.seen {
		for r, at := range resources {
			if now.Sub(at) > window {
				delete(resources, r)
				continue
			}
			out[k] = append(out[k], r)
		}
		if len(resources) == 0 {
			delete(l.seen, k)
		}
	}
	return out
}

// LedgerEntry is one resource's deletion of one tag, as a DeletionLedger
// remembers it (Entries, Load).
type LedgerEntry struct {
	// Key is the tag's name as NameCase.Key gives it.
	Key string
	// Resource is the resource that lost the tag.
	Resource string
	// At is when.
	At time.Time
}

// MaxLedgerEntries is how many entries Entries returns at most.
const MaxLedgerEntries = 200

// Entries returns what the ledger remembers at now (what Recent would),
// the latest first, at most MaxKeyDeletions+1 per tag (GuardDeletions
// holds a tag's next deletion beyond that count however many more there
// were) and MaxLedgerEntries in all, so that a new ledger Loaded with them
// guards as this one does. Example: 6 resources lost "owner" within the
// window: the 4 latest are kept, and a ledger loaded with them still holds
// the next deletion of "owner".
func (l *DeletionLedger) Entries(now time.Time) []LedgerEntry {
	var out []LedgerEntry
	for k := range l.Recent(now) {
		var perKey []LedgerEntry
		for r, at := range l.seen[k] {
			perKey = append(perKey, LedgerEntry{Key: k, Resource: r, At: at})
		}
		slices.SortFunc(perKey, latestFirst)
		out = append(out, perKey[:min(len(perKey), MaxKeyDeletions+1)]...)
	}
	slices.SortFunc(out, latestFirst)
	return out[:min(len(out), MaxLedgerEntries)]
}

// Load adds entries (from Entries) to the ledger.
func (l *DeletionLedger) Load(entries []LedgerEntry) {
	for _, e := range entries {
		l.Record(CaseSensitive, e.Resource, []string{e.Key}, e.At)
	}
}

// latestFirst orders entries by time, the latest first, then by key and
// resource.
func latestFirst(a, b LedgerEntry) int {
	if c := b.At.Compare(a.At); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.Resource, b.Resource))
}
