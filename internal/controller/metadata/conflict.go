package metadata

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
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

// claim is what one object wanted of the resources its last discovery
// found.
type claim struct {
	cloud string
	nc    tags.NameCase
	life  tags.Lifecycle
	ids   map[string]bool // canonical IDs
}

// contest is another object that wants other values for some of this
// object's names on resources both classify.
type contest struct {
	other     claimant
	names     []string
	resources int
}

// claimBook holds the claims of every object the controller applies, in
// every namespace, so that two objects that would rewrite each other's
// values are found before either writes. It is safe for concurrent use.
type claimBook struct {
	mu     sync.Mutex
	claims map[claimant]*claim
	// rivals are, per claimant, its contests as last staked (other →
	// names), to tell who must be woken when they change.
	rivals map[claimant]map[claimant]string
}

func newClaimBook() *claimBook {
	return &claimBook{claims: map[claimant]*claim{}, rivals: map[claimant]map[claimant]string{}}
}

// stake records who's claim and returns the names contested per resource
// (canonical ID), the contests, and the CloudMetadata objects to pass
// again at once because a contest with who began, changed or ended.
func (b *claimBook) stake(who claimant, c *claim) (map[string][]string, []contest, []types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.claims[who] = c
	perID := map[string]map[string]bool{}
	var contests []contest
	now := map[claimant]string{}
	for other, oc := range b.claims {
		if other == who || oc.cloud != c.cloud {
			continue
		}
		names := c.life.Contested(c.nc, oc.life)
		if len(names) == 0 {
			continue
		}
		n := 0
		for id := range smaller(c.ids, oc.ids) {
			if !c.ids[id] || !oc.ids[id] {
				continue
			}
			n++
			if perID[id] == nil {
				perID[id] = map[string]bool{}
			}
			for _, name := range names {
				perID[id][name] = true
			}
		}
		if n > 0 {
			contests = append(contests, contest{other: other, names: names, resources: n})
			now[other] = strings.Join(names, "\x00")
		}
	}
	sort.Slice(contests, func(i, j int) bool { return contests[i].other.String() < contests[j].other.String() })
	wake := b.setRivals(who, now)
	out := make(map[string][]string, len(perID))
	for id, set := range perID {
		for name := range set {
			out[id] = append(out[id], name)
		}
		sort.Strings(out[id])
	}
	return out, contests, wake
}

// smaller returns the smaller of two sets, to iterate.
func smaller(a, b map[string]bool) map[string]bool {
	if len(a) <= len(b) {
		return a
	}
	return b
}

// setRivals records who's contests and returns the CloudMetadata of every
// rival whose contest with who began, changed or ended.
func (b *claimBook) setRivals(who claimant, now map[claimant]string) []types.NamespacedName {
	before := b.rivals[who]
	var wake []types.NamespacedName
	for other, names := range now {
		if before[other] != names {
			wake = append(wake, other.cm)
		}
	}
	for other := range before {
		if _, ok := now[other]; !ok {
			wake = append(wake, other.cm)
		}
	}
	if len(now) == 0 {
		delete(b.rivals, who)
	} else {
		b.rivals[who] = now
	}
	return wake
}

// withdraw drops the claims of every claimant gone says is gone and
// returns the CloudMetadata of their rivals, which may write now.
func (b *claimBook) withdraw(gone func(claimant) bool) []types.NamespacedName {
	b.mu.Lock()
	defer b.mu.Unlock()
	var wake []types.NamespacedName
	for who := range b.claims {
		if !gone(who) {
			continue
		}
		wake = append(wake, b.setRivals(who, nil)...)
		delete(b.claims, who)
	}
	return wake
}

// claimantOf is the claimant of a target the pass's CloudMetadata drives.
func (p *pass) claimantOf(t *target) claimant {
	return claimant{cm: types.NamespacedName{Namespace: p.cm.Namespace, Name: p.cm.Name}, kind: t.kind, name: t.obj.GetName()}
}

// stake records what the target wants of the resources discovered and
// returns the names it must leave alone per resource; the contests go to
// the outcome, and rivals whose contest changed are passed again.
func (p *pass) stake(ctx context.Context, t *target, req Request, nc tags.NameCase, found []cloud.Classified, o *outcome) map[string][]string {
	ids := make(map[string]bool, len(found))
	for _, r := range found {
		ids[cloud.CanonicalID(r.ID)] = true
	}
	who := p.claimantOf(t)
	p.claimed[who] = true
	contested, contests, wake := p.r.claims.stake(who, &claim{cloud: t.cloud, nc: nc, life: req.Lifecycle, ids: ids})
	o.contests = contests
	p.r.wakeUp(ctx, wake)
	return contested
}

// releaseClaims withdraws the claims of the CloudMetadata's objects that
// this pass neither staked nor kept (no longer referenced, invalid, or
// not applied), and passes their rivals again.
func (p *pass) releaseClaims(ctx context.Context) {
	key := types.NamespacedName{Namespace: p.cm.Namespace, Name: p.cm.Name}
	p.r.wakeUp(ctx, p.r.claims.withdraw(func(c claimant) bool { return c.cm == key && !p.claimed[c] }))
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
	return fmt.Sprintf("%s wants other values for %s on %d resource(s): neither object writes them there until one gives way",
		c.other, notify.Summary(c.names, shownInNotes), c.resources)
}

// reportConflicts emits a Warning per rival, once while the contest lasts.
func (o *outcome) reportConflicts(n *notify.Notifier) {
	for _, c := range o.contests {
		n.Once(o.t.obj, "conflict/"+c.other.String()+"/"+strings.Join(c.names, ","), v1alpha1.ReasonContestedKeys, c.message())
	}
}

// contestedOn returns, per resource of ids (canonical) that who's claim
// holds, the names another object contests there, as stake last found
// them; it changes no claim.
func (b *claimBook) contestedOn(who claimant, ids []string) map[string][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.claims[who]
	if c == nil {
		return nil
	}
	out := map[string][]string{}
	for other, oc := range b.claims {
		if other == who || oc.cloud != c.cloud {
			continue
		}
		names := c.life.Contested(c.nc, oc.life)
		for _, id := range ids {
			if len(names) > 0 && c.ids[id] && oc.ids[id] {
				out[id] = append(out[id], names...)
			}
		}
	}
	for id, names := range out {
		slices.Sort(names)
		out[id] = slices.Compact(names)
	}
	return out
}
