package metadata

import (
	"context"
	"fmt"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// Request is what one AzureMetadata or AWSMetadata asks of the resources a
// CloudMetadata classifies, as a pass sees it: which cloud, where to search,
// for which classifiers, and the pure planner's intent. The controller's pass
// and `tagsync plan` both plan through it, so the plan shows exactly what a
// pass would write.
type Request struct {
	// Cloud is the provider's name ("azure", "aws").
	Cloud string
	// Kind is the object's kind (AzureMetadata, AWSMetadata).
	Kind string
	// Classifiers are the CloudMetadata's classifier tags, sorted by name.
	Classifiers []cloud.Classifier
	// Discover scopes the search (subscriptions or regions, named groups).
	Discover cloud.DiscoverOptions
	// Lifecycle is the request as the pure planner takes it; Owned is the
	// object's active tag list from its status.
	Lifecycle tags.Lifecycle

	t *target
}

// NewRequest views obj (an *AzureMetadata or *AWSMetadata) as cm drives it.
func NewRequest(cm *v1alpha1.CloudMetadata, obj client.Object) (Request, error) {
	switch o := obj.(type) {
	case *v1alpha1.AzureMetadata:
		return azureTarget(o).request(cm), nil
	case *v1alpha1.AWSMetadata:
		return awsTarget(o).request(cm), nil
	}
	return Request{}, fmt.Errorf("%T is not an AzureMetadata or AWSMetadata", obj)
}

// request builds the Request of a target driven by cm.
func (t *target) request(cm *v1alpha1.CloudMetadata) Request {
	return Request{Cloud: t.cloud, Kind: t.kind, Classifiers: classifiers(cm),
		Discover:  cloud.DiscoverOptions{Scopes: t.scopes, Named: t.named},
		Lifecycle: t.lifecycle(cm.Spec.ControllerConfig.Limit), t: t}
}

// Validate checks the request against the cloud's rules (see the Approved
// condition): nil, or every problem joined. An invalid request writes
// nothing.
func (r Request) Validate(rules tags.Rules) error { return r.t.validate(rules) }

// Planned is one discovered resource and what the request does to it.
type Planned struct {
	// Resource is the resource as discovered, with all its tags.
	Resource cloud.Classified
	// Plan is the pure planner's answer: the patch to write, the tags
	// skipped and why.
	Plan tags.ResourcePlan
}

// Plan runs the pure planner over every discovered resource, in the order
// given. held returns, per resource ID, which requested names the
// controller remembers the resource holding (see tags.Lifecycle.Plan); a nil
// held, or a nil answer, means none, as after a controller restart.
func (r Request) Plan(resources []cloud.Classified, held func(id string) func(string) bool) []Planned {
	return r.planYielding(resources, held, nil)
}

// planYielding is Plan leaving alone, per resource (by canonical ID), the
// names another object contests there (tags.Lifecycle.Yield).
func (r Request) planYielding(resources []cloud.Classified, held func(id string) func(string) bool, contested map[string][]string) []Planned {
	out := make([]Planned, len(resources))
	for i, res := range resources {
		var h func(string) bool
		if held != nil {
			h = held(res.ID)
		}
		out[i] = Planned{Resource: res, Plan: r.Lifecycle.Yield(res.Tags, res.Rules, h, contested[cloud.CanonicalID(res.ID)])}
	}
	return out
}

// classifiers are a CloudMetadata's classifier tags, sorted by name.
func classifiers(cm *v1alpha1.CloudMetadata) []cloud.Classifier {
	set := tags.Set(cm.Spec.Classifiers)
	out := make([]cloud.Classifier, 0, len(set))
	for _, n := range set.Names() {
		out = append(out, cloud.Classifier{Name: n, Value: set[n]})
	}
	return out
}

// Driver returns the name of the CloudMetadata that drives a provider object
// among those that reference it: the oldest, then the first by name. ""
// when there is none.
func Driver(referencing []v1alpha1.CloudMetadata) string {
	if len(referencing) == 0 {
		return ""
	}
	items := append([]v1alpha1.CloudMetadata(nil), referencing...)
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return items[0].Name
}

// plan is the plan stage of a full pass: each target that was read stakes
// its claims and is planned (planOf), leaving alone the names other
// objects contest.
func (p *pass) plan(ctx context.Context, work []targetWork) []*targetPlan {
	p.r.expectAll(ctx)
	planned := make([]*targetPlan, 0, len(work))
	for _, w := range work {
		contested := p.stake(ctx, w.t, w.req, w.provider.Rules().NameCase(), w.resources, w.o)
		tp := p.planOf(w.o, w.provider, w.req, w.resources, contested)
		w.o.held = tp.held
		tp.complete = w.complete
		planned = append(planned, tp)
	}
	return planned
}

// planOf plans a target's resources with the pure planner, as its
// held-tags record says it holds them and leaving alone the names
// contested there: the plan step of a full and a targeted pass.
func (p *pass) planOf(o *outcome, provider cloud.ClassifiedProvider, req Request, resources []cloud.Classified, contested map[string][]string) *targetPlan {
	held := p.st.heldFor(o.t)
	return &targetPlan{o: o, provider: provider, plans: req.planYielding(resources, held.lookup, contested), held: held, resources: resources}
}

// planChanged plans one target's changed resources as a full pass does
// (planOf), for the write stage both share.
// It returns nil when nothing may be written for the target (it is
// suspended), and errFullPass when the plans delete tags the
// deletionPolicy allows to delete: the mass-deletion guard looks at a whole
// pass, so deletions are left to a full pass. Under Retain the deletions
// are dropped (the full passes count and report them).
func (p *pass) planChanged(w targetWork) (*targetPlan, error) {
	if p.suspendedBy(w.t) != "" {
		return nil, nil
	}
	ids := make([]string, len(w.resources))
	for i, r := range w.resources {
		ids[i] = cloud.CanonicalID(r.ID)
	}
	contested, _ := contestedOn(p.r.claims, p.claimantOf(w.t), ids)
	tp := p.planOf(&outcome{t: w.t}, w.provider, w.req, w.resources, contested)
	for i := range tp.plans {
		pl := &tp.plans[i]
		if len(pl.Plan.Patch.Delete) == 0 {
			continue
		}
		if p.cm.Spec.Deletes() {
			return nil, errFullPass
		}
		pl.Plan.Patch.Delete, pl.Plan.Expect = nil, nil
	}
	return tp, nil
}
