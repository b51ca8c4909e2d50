package metadata

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// claimant is one provider object as the CloudMetadata that drives it
// applies it.
type claimant struct {
	cm         types.NamespacedName
	kind, name string
}

// String names the object and its CloudMetadata for messages and events.
func (c claimant) String() string {
	return fmt.Sprintf("%s %s/%s (CloudMetadata %s)", c.kind, c.cm.Namespace, c.name, c.cm.Name)
}

// want is what one object wants of the resources its last discovery
// found: its request, as its cloud compares names.
type want struct {
	cloud string
	nc    tags.NameCase
	life  tags.Lifecycle
}

// contest is another object that wants other values for some of this
// object's names on resources both classify.
type contest struct {
	other     claimant
	names     []string
	resources int
	// expected says other has not discovered its resources since the
	// controller started: its names are left alone everywhere until it
	// has (kit.Contests.Expect).
	expected bool
}

// claimBook holds the claims of every object the controller applies, in
// every namespace, on the resources they found (by canonical ID), so that
// two objects that would rewrite each other's values are found before
// either writes.
type claimBook = kit.Contests[string, claimant, want]

// newClaimBook returns an empty book: two objects of one cloud contest the
// names their requests want otherwise (tags.Lifecycle.Contested); a
// contest passes their CloudMetadata objects again.
func newClaimBook() *claimBook {
	return kit.NewContests[string](func(_ claimant, w want, _ claimant, o want) []string {
		if w.cloud != o.cloud {
			return nil
		}
		return w.life.Contested(w.nc, o.life)
	}, func(c claimant) types.NamespacedName { return c.cm })
}

// contestedOn returns, per resource of ids (canonical) that who's claim
// holds, the names another object contests there, and who's contests per
// rival (names, and on how many of ids); it changes no claim.
func contestedOn(b *claimBook, who claimant, ids []string) (map[string][]string, []contest) {
	perID := map[string][]string{}
	byRival := map[claimant]*contest{}
	for id, rivals := range b.Rivals(who, ids) {
		for _, r := range rivals {
			perID[id] = append(perID[id], r.Names...)
			c := byRival[r.Who]
			if c == nil {
				c = &contest{other: r.Who, names: r.Names, expected: r.Expected}
				byRival[r.Who] = c
			}
			c.resources++
		}
	}
	for id, names := range perID {
		slices.Sort(names)
		perID[id] = slices.Compact(names)
	}
	contests := make([]contest, 0, len(byRival))
	for _, c := range byRival {
		contests = append(contests, *c)
	}
	sort.Slice(contests, func(i, j int) bool { return contests[i].other.String() < contests[j].other.String() })
	return perID, contests
}

// expectAll announces, once per start (the first pass of the leader),
// what every CloudMetadata's valid requests want (kit.Contests.Expect):
// until an object's first pass has staked its claim, the others leave the
// names it contests alone, so the object that happens to pass first after
// a start does not overwrite a rival's values. A CloudMetadata that cannot
// be read, or whose references are broken, is not announced.
func (r *Reconciler) expectAll(ctx context.Context) {
	r.expectOnce.Do(func() {
		var list v1alpha1.CloudMetadataList
		if err := r.Client.List(ctx, &list); err != nil {
			return // nothing announced: contests are found as objects stake
		}
		for i := range list.Items {
			cm := &list.Items[i]
			res, err := r.resolve(ctx, cm)
			if err != nil || len(res.problems) > 0 {
				continue
			}
			key := types.NamespacedName{Namespace: cm.Namespace, Name: cm.Name}
			for _, t := range res.targets {
				provider, err := r.providers.ClassifiedProvider(t.cloud)
				if err != nil {
					continue
				}
				req := t.request(cm)
				if req.Validate(provider.Rules()) != nil {
					continue
				}
				r.claims.Expect(claimant{cm: key, kind: t.kind, name: t.obj.GetName()},
					want{cloud: t.cloud, nc: provider.Rules().NameCase(), life: req.Lifecycle})
			}
		}
	})
}

// claimantOf is the claimant of a target the pass's CloudMetadata drives.
func (p *pass) claimantOf(t *target) claimant {
	return claimant{cm: types.NamespacedName{Namespace: p.cm.Namespace, Name: p.cm.Name}, kind: t.kind, name: t.obj.GetName()}
}

// stake records what the target wants of the resources discovered and
// returns the names it must leave alone per resource; the contests go to
// the outcome, and rivals whose contest changed are passed again.
func (p *pass) stake(ctx context.Context, t *target, req Request, nc tags.NameCase, found []cloud.Classified, o *outcome) map[string][]string {
	ids := make([]string, len(found))
	for i, r := range found {
		ids[i] = cloud.CanonicalID(r.ID)
	}
	who := p.claimantOf(t)
	p.claimed[who] = true
	p.r.wakeUp(ctx, p.r.claims.Stake(who, want{cloud: t.cloud, nc: nc, life: req.Lifecycle}, ids))
	contested, contests := contestedOn(p.r.claims, who, ids)
	o.contests = contests
	return contested
}

// releaseClaims withdraws the claims of the CloudMetadata's objects that
// this pass neither staked nor kept (no longer referenced, invalid, or
// not applied), and passes their rivals again.
func (p *pass) releaseClaims(ctx context.Context) {
	key := types.NamespacedName{Namespace: p.cm.Namespace, Name: p.cm.Name}
	p.r.wakeUp(ctx, p.r.claims.Release(func(c claimant, _ want) bool { return c.cm == key && !p.claimed[c] }))
}

// wakeUp enqueues a full pass of each CloudMetadata named, at once; it
// never blocks.
func (r *Reconciler) wakeUp(_ context.Context, keys []types.NamespacedName) {
	r.index.needFull(keys...)
	for _, k := range keys {
		r.wakeContests.Add(reconcile.Request{NamespacedName: k})
	}
}

// setConflict sets the Conflict condition of an applied target: true with
// the rivals and names while some are contested, else false.
func (o *outcome) setConflict(conds *[]metav1.Condition, gen int64) {
	if !o.approved {
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionConflict)
		return
	}
	c := metav1.Condition{Type: v1alpha1.ConditionConflict, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoConflict,
		Message: "no other object wants other values for these tags on the matched resources", ObservedGeneration: gen}
	if len(o.contests) > 0 {
		msgs := make([]string, len(o.contests))
		for i, ct := range o.contests {
			msgs[i] = ct.message()
		}
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonContestedKeys, notify.Fit(strings.Join(msgs, "; "))
	}
	meta.SetStatusCondition(conds, c)
}

// message says who contests which names where.
func (c contest) message() string {
	if c.expected {
		return fmt.Sprintf("%s wants other values for %s and has not discovered its resources since tagsync started: this object leaves them alone on its %d resource(s) until it has",
			c.other, notify.Summary(c.names, shownInNotes), c.resources)
	}
	return fmt.Sprintf("%s wants other values for %s on %d resource(s): neither object writes them there until one gives way",
		c.other, notify.Summary(c.names, shownInNotes), c.resources)
}

// reportConflicts emits a Warning per rival, once while the contest lasts.
func (o *outcome) reportConflicts(n *notify.Notifier) {
	for _, c := range o.contests {
		n.Once(o.t.obj, "conflict/"+c.other.String()+"/"+strings.Join(c.names, ","), v1alpha1.ReasonContestedKeys, c.message())
	}
}
