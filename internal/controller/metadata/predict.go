package metadata

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
)

// Prediction is what the next full pass of one CloudMetadata would do, as
// `tagsync plan` shows it: the pass's own read, plan and safeguard stages,
// run without the write.
type Prediction struct {
	// Namespace and Name name the CloudMetadata.
	Namespace, Name string
	// Problems are its broken references: then nothing at all is written.
	Problems []string
	// Targets are its AzureMetadata and AWSMetadata.
	Targets []TargetPrediction
	// Held is the mass deletion the pass would hold back for approval
	// (nil: none, or the annotation approves it).
	Held *v1alpha1.HeldDeletions
	// Retained describes the deletions deletionPolicy Retain would keep,
	// per resource.
	Retained []string
}

// TargetPrediction is one AzureMetadata's or AWSMetadata's part of a pass.
type TargetPrediction struct {
	Kind, Name, Cloud, Opcode string
	// Problem is why nothing would be written for it (an unconfigured
	// cloud, a request the cloud's rules refuse, a discovery that could
	// not run), or what part of it could not be done (scopes not
	// searched: see Failed).
	Problem string
	// Suspended names what suspends its writes ("" when nothing does):
	// the plans show what a pass would write, and none is sent.
	Suspended string
	// ReadErr is the error of a discovery that could not run at all.
	ReadErr error
	// Failed are the scopes its discovery could not search, with why.
	Failed []string
	// Plans are the resources its classifiers found, with what the pass
	// would write: contested names and held deletions already left out
	// (reported in Plan.Skipped).
	Plans []Planned
	// Contests are the other objects that want other values for some of
	// its names on resources both found.
	Contests []Contest
}

// Contest is another object wanting other values for names on resources a
// target found: neither writes them there.
type Contest struct {
	// Other names the object and its CloudMetadata.
	Other string
	// Names are the contested names; Resources on how many resources.
	Names     []string
	Resources int
}

// Predict runs, for each CloudMetadata that want selects, the read, plan
// and safeguard stages of its next full pass, and writes nothing: c reads
// the provider objects; all are the CloudMetadata the caller can list (the
// references resolve among them, and every one is discovered so that
// contests show as the controller finds them: across namespaces when all
// holds every namespace). The only cloud calls are the discoveries. The
// error is for a reference that could not be read.
func Predict(ctx context.Context, c client.Reader, providers cloud.Providers, all []v1alpha1.CloudMetadata,
	want func(*v1alpha1.CloudMetadata) bool) ([]Prediction, error) {
	r := NewReconciler(nil, providers, nil, nil, nil)
	r.init()
	r.expectOnce.Do(func() {}) // every object stakes below before any is planned
	type read struct {
		p        *pass
		res      resolved
		outcomes []*outcome
		work     []targetWork
	}
	reads := make([]read, 0, len(all))
	for i := range all {
		cm := &all[i]
		res, err := resolveRefs(ctx, c, cm, ReferencingIn(all))
		if err != nil {
			return nil, fmt.Errorf("CloudMetadata %s/%s: reading its references: %w", cm.Namespace, cm.Name, err)
		}
		st := r.states.For(types.NamespacedName{Namespace: cm.Namespace, Name: cm.Name}, cm.UID)
		st.recent.Load(cm.Status.RecentWrites)
		p := r.newPass(cm, st)
		p.log = logr.Discard()
		outcomes, work := p.read(ctx, res)
		for _, w := range work { // every claim staked before any is planned
			p.stake(ctx, w.t, w.req, w.provider.Rules().NameCase(), w.resources, w.o)
		}
		reads = append(reads, read{p: p, res: res, outcomes: outcomes, work: work})
	}
	var out []Prediction
	for _, rd := range reads {
		if !want(rd.p.cm) {
			continue
		}
		planned := rd.p.plan(ctx, rd.work)
		if len(rd.res.problems) == 0 {
			rd.p.safeguard(planned)
		}
		out = append(out, rd.p.prediction(rd.res, rd.outcomes, planned))
	}
	return out, nil
}

// prediction renders a pass that stopped before its write stage.
func (p *pass) prediction(res resolved, outcomes []*outcome, planned []*targetPlan) Prediction {
	out := Prediction{Namespace: p.cm.Namespace, Name: p.cm.Name, Retained: p.kept}
	for _, pr := range res.problems {
		out.Problems = append(out.Problems, pr.message)
	}
	if p.hold != nil && !p.hold.approved {
		out.Held = p.hold.record
	}
	plans := map[*outcome][]Planned{}
	for _, tp := range planned {
		plans[tp.o] = tp.plans
	}
	for _, o := range outcomes {
		t := TargetPrediction{Kind: o.t.kind, Name: o.t.obj.GetName(), Cloud: o.t.cloud, Opcode: string(o.t.opcode),
			Suspended: o.suspended, Plans: plans[o], ReadErr: o.readErr, Failed: o.unsearched}
		switch {
		case o.invalid != nil:
			t.Problem = "the request breaks the cloud's rules: " + o.invalid.Error()
		case o.request != nil:
			t.Problem = o.request.message
		}
		for _, c := range o.contests {
			t.Contests = append(t.Contests, Contest{Other: c.other.String(), Names: c.names, Resources: c.resources})
		}
		out.Targets = append(out.Targets, t)
	}
	return out
}
