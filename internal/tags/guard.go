package tags

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Deletions are the tag deletions one pass plans on one resource.
type Deletions struct {
	// Resource is the resource's ID.
	Resource string
	// Synced counts the resource's tags in the pass's scope before the
	// deletions (the tags the deletions are a share of).
	Synced int
	// Names are the tags the pass would delete.
	Names []string
}

// MassDeletion is a set of planned deletions that is too large to write
// without a person's approval.
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

// Has reports whether the deletion of name on resource is held (names
// matched as nc says).
func (m MassDeletion) Has(nc NameCase, resource, name string) bool {
	for _, d := range m.Deletions {
		if d.Resource == resource && slices.ContainsFunc(d.Names, func(n string) bool { return nc.Key(n) == nc.Key(name) }) {
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
		for _, n := range d.Names {
			lines = append(lines, d.Resource+"\x00"+n)
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

// GuardDeletions holds the planned deletions of a pass that would delete
// too much at once, which is how a mistake (a changed configuration, a
// script that removed every label) looks, rather than a person's
// deliberate edits, which remove tags a few at a time:
//
//   - every synced tag of a resource that has at least two, or
//   - more than half of the synced tags of more than one resource.
//
// It returns the deletions it holds (the offending resources' deletions,
// whole); the others may be written. plans are the pass's deletions, one
// entry per resource; entries without names are ignored.
//
// Example: three scale sets each with {env, team, cost}; a pass plans to
// delete env from the first, and env and team from the other two. The two
// lose more than half: their four deletions are held (Reason says so) and
// env is deleted from the first.
func GuardDeletions(plans []Deletions) MassDeletion {
	var whole, most []Deletions
	for _, d := range plans {
		if len(d.Names) == 0 {
			continue
		}
		d.Names = slices.Sorted(slices.Values(d.Names))
		switch {
		case d.Synced >= 2 && len(d.Names) >= d.Synced:
			whole = append(whole, d)
		case 2*len(d.Names) > d.Synced:
			most = append(most, d)
		}
	}
	var out MassDeletion
	var reasons []string
	if len(whole) > 0 {
		out.Deletions = append(out.Deletions, whole...)
		reasons = append(reasons, fmt.Sprintf("%d resource(s) would lose every synced tag", len(whole)))
	}
	if len(whole)+len(most) > 1 && len(most) > 0 {
		out.Deletions = append(out.Deletions, most...)
		reasons = append(reasons, fmt.Sprintf("%d resource(s) would lose more than half of their synced tags", len(whole)+len(most)))
	}
	slices.SortFunc(out.Deletions, func(a, b Deletions) int { return strings.Compare(a.Resource, b.Resource) })
	out.Reason = strings.Join(reasons, "; ")
	return out
}
