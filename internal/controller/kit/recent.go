package kit

import (
	"cmp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// RecentWindow is how long an object's passes remember a deletion or a
// restore they wrote.
const RecentWindow = time.Hour

// Recent is what an object's passes remember of the writes of the last
// hour that later passes judge by: the deletions (the mass-deletion guard
// counts a tag's deletions across passes) and the restores (a tag put back
// too often on one resource is a fight). It is kept in the object's
// status (status.recentWrites), so that a new leader, or a restarted
// controller, judges as the last one would have: Load it on the object's
// first pass, write Status with every status. It is not safe for
// concurrent use.
type Recent struct {
	// Deletions are the deletions the passes wrote.
	Deletions tags.DeletionLedger
	// Restores are when the passes put each tag back on each resource.
	Restores Restores
	loaded   bool
}

// MaxPutBacks is how many times within RecentWindow a controller puts one
// value back on one resource before it stops (a fight): the other writer
// is then removing or changing it again each time, and putting it back
// once more would only start another round. Every controller stops at the
// same count, so that one rule is documented and alerted on.
const MaxPutBacks = 3

// Restores are, per resource and tag (tags.NameCase.Key of its name), the
// times a pass put the tag back on the resource.
type Restores map[RecentTag][]time.Time

// RecentTag is one tag on one resource.
type RecentTag struct{ Resource, Tag string }

// maxRecentTimes is how many times Status keeps per tag and resource (a
// fight is judged from 3 restores).
const maxRecentTimes = 3

// Load adds what rw remembers, once: later calls do nothing, so that the
// object's state is read from its status only when the state is new.
func (r *Recent) Load(rw *v1alpha1.RecentWrites) {
	if r.loaded {
		return
	}
	r.loaded = true
	if rw == nil {
		return
	}
	entries := make([]tags.LedgerEntry, 0, len(rw.Deletions))
	for _, d := range rw.Deletions {
		for _, at := range d.Times {
			entries = append(entries, tags.LedgerEntry{Key: d.Tag, Resource: d.Resource, At: at.Time})
		}
	}
	r.Deletions.Load(entries)
	r.Restores.Load(rw)
}

// Status renders what r remembers at now for the object's status (nil:
// nothing), forgetting what is older than the window.
func (r *Recent) Status(now time.Time) *v1alpha1.RecentWrites {
	var out v1alpha1.RecentWrites
	for _, e := range r.Deletions.Entries(now) {
		out.Deletions = append(out.Deletions, v1alpha1.RecentWrite{Resource: e.Resource, Tag: e.Key, Times: []metav1.Time{statusTime(e.At)}})
	}
	out.Restores = r.Restores.Status(now, 1, maxRecentTimes)
	if len(out.Deletions) == 0 && len(out.Restores) == 0 {
		return nil
	}
	return &out
}

// Status renders for an object's status the entries of r with least or
// more times within the window at now, their last keep times each, the
// most restored first, at most the status's cap; it forgets what is older
// than the window.
func (r Restores) Status(now time.Time, least, keep int) []v1alpha1.RecentWrite {
	r.Prune(now)
	var out []v1alpha1.RecentWrite
	for k, times := range r {
		if len(times) < least {
			continue
		}
		w := v1alpha1.RecentWrite{Resource: k.Resource, Tag: k.Tag}
		for _, t := range times[max(0, len(times)-keep):] {
			w.Times = append(w.Times, statusTime(t))
		}
		out = append(out, w)
	}
	// The most restored first, so that the cap keeps the fights.
	slices.SortFunc(out, func(a, b v1alpha1.RecentWrite) int {
		return cmp.Or(cmp.Compare(len(b.Times), len(a.Times)), strings.Compare(a.Resource, b.Resource), strings.Compare(a.Tag, b.Tag))
	})
	return out[:min(len(out), tags.MaxLedgerEntries)]
}

// Load adds the restores rw keeps.
func (r *Restores) Load(rw *v1alpha1.RecentWrites) {
	if rw == nil {
		return
	}
	for _, w := range rw.Restores {
		for _, at := range w.Times {
			r.Add(RecentTag{Resource: w.Resource, Tag: w.Tag}, at.Time)
		}
	}
}

// Add records that a pass put k back at at.
func (r *Restores) Add(k RecentTag, at time.Time) {
	if *r == nil {
		*r = Restores{}
	}
	(*r)[k] = append((*r)[k], at)
}

// Prune forgets the restores older than the window at now.
func (r Restores) Prune(now time.Time) {
	for k, times := range r {
		if times = slices.DeleteFunc(times, func(t time.Time) bool { return now.Sub(t) > RecentWindow }); len(times) == 0 {
			delete(r, k)
		} else {
			r[k] = times
		}
	}
}

// statusTime is t as the status keeps it (whole seconds), so that a status
// rendered again from the same writes equals the one written.
func statusTime(t time.Time) metav1.Time { return metav1.NewTime(t.UTC().Truncate(time.Second)) }

// Writers are, per resource (canonical ID), who made its latest cloud
// change, where the change said: a stopped fight names them. Kept only for
// the resources a fight may concern (Keep). Not safe for concurrent use.
type Writers map[string]string

// Note records the writers the carried changes named.
func (w *Writers) Note(carried map[string]Carried) {
	for id, c := range carried {
		if c.Named == "" {
			continue
		}
		if *w == nil {
			*w = Writers{}
		}
		(*w)[cloud.CanonicalID(id)] = c.Named
	}
}

// Keep forgets the writers of the resources r holds no time for.
func (w Writers) Keep(r Restores) {
	held := make(map[string]bool, len(r))
	for k := range r {
		held[cloud.CanonicalID(k.Resource)] = true
	}
	for id := range w {
		if !held[id] {
			delete(w, id)
		}
	}
}

// Of names the writer of resource id ("" when none is known).
func (w Writers) Of(id string) string { return w[cloud.CanonicalID(id)] }
