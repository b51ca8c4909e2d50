package metadata

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// A full pass discovers through a search index (Azure Resource Graph, the
// AWS Resource Groups Tagging API) that follows the writes by seconds to
// minutes. A change that sends an object to a full pass (a resource that
// newly carries a classifier, a burst of changes, an overflow) would
// otherwise be served by a discovery that does not show it yet: the
// resource is not found, or found with its tags from before the change,
// the pass ends, and the change waits for the next full pass. So a full
// pass takes the changed resources as the changes left them (freshen):
//
//   - a change that carried the resource's whole tag set (AWS, and an Azure
//     change completed by its probe read) is used as it is, the resource
//     described without a call (cloud.ChangeDescriber) or by the read that
//     completed the change (cloud.ClassifiedReader, shared through
//     cloud.WithReadAfter);
//   - a resource whose change carried nothing usable is read once by ID
//     where the cloud can (Azure), when there are at most
//     alwaysTargetedReads of them;
//   - when there are more (a burst), or the cloud cannot read one by ID
//     (AWS), the pass waits, before it discovers, until the latest of their
//     changes is the search lag (SetSearchLag) old: one discovery then
//     shows them all.
//
// The object's own writes are changes too: a pass soon after a write would
// otherwise find the resource as it was before it, write it again, or miss
// a deletion the object's spec now asks for. So the object remembers, per
// target and resource, the tags its last write found and left (remember),
// and while a full pass's discovery still shows the tags it found, for at
// most writtenFor, the pass takes those it left. A discovery that shows
// anything else shows the write or a later edit, and is taken as it is.
//
// A changed resource that carries a classifier is added to the discovery
// when the search did not find it, its tags replace the search's when it
// did, and it is left out when its fresh tags no longer carry one.

// freshen returns found, target t's discovery, with the tags the object
// wrote (overWritten) and the pass's changed resources as their changes
// left them.
func (p *pass) freshen(ctx context.Context, t *target, provider cloud.ClassifiedProvider, req Request, found []cloud.Classified) []cloud.Classified {
	found = p.overWritten(t, provider.Rules().NameCase(), found)
	if len(p.changed) == 0 {
		return found
	}
	at := make(map[string]int, len(found))
	for i, r := range found {
		at[cloud.CanonicalID(r.ID)] = i
	}
	out := slices.Clone(found)
	drop := map[int]bool{}
	nc := provider.Rules().NameCase()
	for _, id := range p.changed {
		i, isFound := at[id]
		fresh, ok := p.freshOne(ctx, t, provider, id, isFound)
		if !ok {
			continue
		}
		classified := cloud.Classifies(nc, fresh.Tags, req.Classifiers)
		switch {
		case isFound && classified:
			out[i].Tags = fresh.Tags
		case isFound:
			drop[i] = true // it left the target's scope since the search indexed it
		case classified:
			freshenedTotal.WithLabelValues(p.cm.Namespace, p.cm.Name).Inc()
			p.log.V(1).Info("a changed resource the search does not show yet is taken as its change left it", "resource", fresh.ID)
			out = append(out, fresh)
		}
	}
	if len(drop) > 0 {
		kept := out[:0]
		for i, r := range out {
			if !drop[i] {
				kept = append(kept, r)
			}
		}
		out = kept
	}
	slices.SortFunc(out, func(a, b cloud.Classified) int {
		return strings.Compare(cloud.CanonicalID(a.ID), cloud.CanonicalID(b.ID))
	})
	return out
}

// freshOne is the changed resource id (canonical) as its latest change left
// it, for target t, and whether there is one: from the tags the change
// carried, or else read by ID (within the pass's budget of such reads).
// isFound says whether t's discovery found it.
func (p *pass) freshOne(ctx context.Context, t *target, provider cloud.ClassifiedProvider, id string, isFound bool) (cloud.Classified, bool) {
	c, ok := p.carried[id]
	if !ok {
		return cloud.Classified{}, false
	}
	usable := c.Tags != nil && c.Usable(p.st.wrote)
	if isFound {
		_, usable = p.usableCarried(id)
	}
	reader, canRead := provider.(cloud.ClassifiedReader)
	if usable {
		if d, ok := provider.(cloud.ChangeDescriber); ok {
			return d.DescribeChanged(c.ID, c.Tags, t.scopes)
		}
		if !canRead || !reader.Covers(c.ID, t.scopes) {
			return cloud.Classified{}, false
		}
		// The read that completed the change (probe, changes.go) tells the rest.
		r, err := reader.ReadClassified(cloud.WithReadAfter(ctx, c.Received), c.ID)
		if err != nil {
			return cloud.Classified{}, false
		}
		r.Tags = c.Tags
		return r, true
	}
	if !canRead || !reader.Covers(c.ID, t.scopes) || len(p.unread()) > alwaysTargetedReads {
		return cloud.Classified{}, false // a burst: the discovery waited for it (awaitSearch)
	}
	r, err := reader.ReadClassified(cloud.WithReadAfter(ctx, c.Received), c.ID)
	if err != nil {
		return cloud.Classified{}, false
	}
	return r, true
}

// writtenFor is how long a full pass takes the tags the object wrote over
// a discovery that does not show them: longer than a search index lags
// but for its rare tail (Resource Graph: "95% of all changes ... under
// 30s"), short enough that an outside edit made before the index caught
// up with the write, which no event announced, is seen within a minute.
const writtenFor = time.Minute

// written is what a write found and left on a resource, and when.
type written struct {
	at            time.Time
	before, after tags.Set
}

// remember records the tags each resource that tp's writes changed
// carries after them (results: the resources written, nil error on
// success), as the cloud's answers said where they differ from the
// values written (answered).
func (p *pass) remember(tp *targetPlan, results map[string]error) {
	now := p.r.Now()
	nc := tp.provider.Rules().NameCase()
	for _, pl := range tp.plans {
		if err, sent := results[pl.Resource.ID]; !sent || err != nil || pl.Plan.Patch.IsEmpty() {
			continue
		}
		if p.st.written == nil {
			p.st.written = map[string]map[string]written{}
		}
		byID := p.st.written[tp.o.t.key()]
		if byID == nil {
			byID = map[string]written{}
			p.st.written[tp.o.t.key()] = byID
		}
		after := pl.Plan.Patch.Apply(nc, pl.Resource.Tags.Clone())
		if answered := p.answered[pl.Resource.ID]; len(answered) > 0 {
			after = tags.Patch{Set: answered}.Apply(nc, after) // a policy on the write path changed the write
		}
		byID[cloud.CanonicalID(pl.Resource.ID)] = written{at: now, before: pl.Resource.Tags.Clone(), after: after}
	}
}

// overWritten returns found with the tags the object's recent writes left
// (remember) on the resources whose discovered tags are still those the
// writes found, and forgets the other writes and those older than
// writtenFor.
// A change of the resource received since the write is newer: the pass
// takes it, reads the resource or has waited for the search to show it
// (freshen, awaitSearch) instead.
func (p *pass) overWritten(t *target, nc tags.NameCase, found []cloud.Classified) []cloud.Classified {
	byID := p.st.written[t.key()]
	if len(byID) == 0 {
		return found
	}
	now := p.r.Now()
	var out []cloud.Classified
	for i, r := range found {
		id := cloud.CanonicalID(r.ID)
		w, ok := byID[id]
		if !ok {
			continue
		}
		if !r.Tags.Equal(nc, w.before) || now.Sub(w.at) > writtenFor || p.carried[id].Received.After(w.at) {
			delete(byID, id)
			continue
		}
		if out == nil {
			out = slices.Clone(found)
		}
		out[i].Tags = w.after.Clone()
	}
	for id, w := range byID {
		if now.Sub(w.at) > writtenFor {
			delete(byID, id)
		}
	}
	if out == nil {
		return found
	}
	return out
}

// DefaultSearchLag is how long a full pass serving a burst of changes
// waits, at most, for the search index to show them (SetSearchLag): a
// typical Resource Graph or Tagging API lag. Changes the index shows later
// are served by the next full pass.
const DefaultSearchLag = 5 * time.Second

// SetSearchLag sets how long a full pass serving a burst of changes waits
// for the search index (DefaultSearchLag; 0: not at all). Call it before
// the controller starts.
func (r *Reconciler) SetSearchLag(d time.Duration) { r.searchLag = &d }

// lag is the search lag in force.
func (r *Reconciler) lag() time.Duration {
	if r.searchLag == nil {
		return DefaultSearchLag
	}
	return *r.searchLag
}

// unread are the changed resources a full pass cannot take from their
// changes (see freshOne): none of them carried a usable tag set.
func (p *pass) unread() []string {
	var out []string
	for _, id := range p.changed {
		c, ok := p.carried[id]
		if !ok {
			continue
		}
		if _, usable := p.usableCarried(id); !usable && !(c.Tags != nil && c.Usable(p.st.wrote)) {
			out = append(out, id)
		}
	}
	return out
}

// awaitSearch waits, when changed resources the pass cannot read by ID
// (more than alwaysTargetedReads, or a cloud of targets without reads by
// ID) must be found by the discovery, until the latest of their changes is
// the search lag old, so that the discovery shows them; false when ctx
// ended.
func (p *pass) awaitSearch(ctx context.Context, targets []*target) bool {
	unread := p.unread()
	readable := len(unread) <= alwaysTargetedReads
	for _, t := range targets {
		if provider, err := p.r.providers.ClassifiedProvider(t.cloud); err == nil {
			if _, ok := provider.(cloud.ClassifiedReader); !ok {
				readable = false
			}
		}
	}
	if len(unread) == 0 || readable {
		return true
	}
	var latest time.Time
	for _, id := range unread {
		if r := p.carried[id].Received; r.After(latest) {
			latest = r
		}
	}
	wait := latest.Add(p.r.lag()).Sub(p.r.Now())
	if wait <= 0 {
		return true
	}
	p.log.V(1).Info("waiting for the search index to show a burst of changes", "changes", len(unread), "wait", wait)
	return cloud.Sleep(ctx, wait)
}

// echoOfWrite reports whether c, the latest change of the resource id
// (canonical), is the echo of the object's last write to it, though its
// time does not say it came after the write: EventBridge gives event times
// in whole seconds, so the echo of a write made at 12:00:00.6 says
// 12:00:00. A change of whole seconds, no earlier than the second before
// the write's, that carries exactly the tags the write left, is taken as
// the resource's tags: no read for it.
func (p *pass) echoOfWrite(id string, c kit.Carried) bool {
	if c.Tags == nil || c.Time.Nanosecond() != 0 {
		return false
	}
	for _, byID := range p.st.written {
		if w, ok := byID[id]; ok && !c.Time.Before(w.at.Add(-time.Second).Truncate(time.Second)) && maps.Equal(c.Tags, w.after) {
			return true
		}
	}
	return false
}
