package workloadtags

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// Prediction is what a policy's next pass would write (tagsync plan): the
// controller's own read and plan, without the write.
type Prediction struct {
	// Name is the policy's.
	Name string
	// Cloud is its provider's name.
	Cloud string
	// Problem says why nothing would be written (an invalid spec, a cloud
	// tagsync runs without); empty otherwise.
	Problem string
	// Suspended: the pass would write nothing (spec.suspend).
	Suspended bool
	// Resources are the resources the read found, each with its plan.
	Resources []Predicted
	// Pending, Unread and Shared name the sources whose resource the cloud
	// does not show yet, could not be read, or is shared.
	Pending, Unread, Shared []string
	// Failed are the scopes the read could not read.
	Failed []cloud.ScopeError
}

// Predicted is one resource's plan.
type Predicted struct {
	// Source names what names the resource ("PersistentVolume pv-1"), ID
	// the resource.
	Source, ID string
	// Before are its tags as read; Rules its cloud's rules.
	Before tags.Set
	Rules  tags.Rules
	// Patch is what the pass would write; Skipped what the cloud's rules
	// or limit would leave out.
	Patch   tags.Patch
	Skipped []tags.Skipped
	// Contested names, per key, the policy that wants another value.
	Contested map[string]string
}

// Predict runs a pass of obj up to its plan, reading the cluster through
// c and the cloud through providers, and returns what it would write. The
// error is a cloud read that could not run.
func Predict(ctx context.Context, c client.Reader, providers cloud.Providers, obj *v1alpha1.WorkloadTagPolicy) (Prediction, error) {
	r := NewReconciler(nil, providers, nil, nil, nil)
	r.init()
	p := &pass{r: r, reader: c, obj: obj, st: r.states.For(obj.Name, obj.UID)}
	out := Prediction{Name: obj.Name, Suspended: obj.Spec.Suspend}
	if err := p.configure(); err != nil {
		out.Problem = err.Error()
		return out, nil
	}
	out.Cloud = p.cfg.provider
	rd, err := p.read(ctx)
	if err != nil {
		return out, err
	}
	out.Failed = rd.cloud.Failed
	for _, rp := range plan(p.cfg, rd.rivals, rd.workloads, rd.cloud) {
		switch rp.state {
		case statePending:
			out.Pending = append(out.Pending, rp.source)
		case stateUnread:
			out.Unread = append(out.Unread, rp.source)
		case stateShared:
			out.Shared = append(out.Shared, rp.source+" ("+rp.shared+")")
		default:
			out.Resources = append(out.Resources, Predicted{Source: rp.source, ID: rp.id, Before: rp.before, Rules: rp.rules,
				Patch: rp.patch, Skipped: rp.skipped, Contested: rp.contested})
		}
	}
	return out, nil
}
