package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
)

// workloadPlan is one WorkloadTagPolicy's part of a plan.
type workloadPlan struct {
	Name string `json:"name"`
	// Problem says why nothing would be written.
	Problem   string         `json:"problem,omitempty"`
	Suspended bool           `json:"suspended,omitempty"`
	InSync    int            `json:"inSync"`
	Resources []resourceDiff `json:"resources,omitempty"`
	// Pending, Unread and Shared name the volumes whose resource is not in
	// the cloud yet, could not be read, or is shared (never tagged).
	Pending []string `json:"pending,omitempty"`
	Unread  []string `json:"unread,omitempty"`
	Shared  []string `json:"shared,omitempty"`
	// Contested are the keys other policies want otherwise, per policy.
	Contested map[string][]string `json:"contested,omitempty"`
	Failed    []string            `json:"unreadableScopes,omitempty"`
}

// collectWorkloads plans every (or the named) WorkloadTagPolicy with the
// controller's own stages (workloadtags.Predict).
func (r *planReport) collectWorkloads(ctx context.Context, c client.Reader, providers cloud.Providers, name string) error {
	var list v1alpha1.WorkloadTagPolicyList
	if err := c.List(ctx, &list); err != nil {
		return fmt.Errorf("listing WorkloadTagPolicies: %w", err)
	}
	for i := range list.Items {
		obj := &list.Items[i]
		if name != "" && obj.Name != name {
			continue
		}
		pred, err := workloadtags.Predict(ctx, c, providers, obj)
		if err != nil {
			return fmt.Errorf("WorkloadTagPolicy %s: reading the cloud: %w", obj.Name, err)
		}
		r.WorkloadTagPolicies = append(r.WorkloadTagPolicies, workloadPlanOf(pred))
	}
	return nil
}

// workloadPlanOf renders one policy's predicted pass.
func workloadPlanOf(p workloadtags.Prediction) workloadPlan {
	out := workloadPlan{Name: p.Name, Suspended: p.Suspended, Pending: p.Pending, Unread: p.Unread, Shared: p.Shared}
	if p.Problem != "" {
		out.Problem = "nothing would be written: " + p.Problem
		return out
	}
	for _, f := range p.Failed {
		out.Failed = append(out.Failed, fmt.Sprintf("%s: %v", f.Scope, f.Err))
	}
	for _, res := range p.Resources {
		for k, rival := range res.Contested {
			if out.Contested == nil {
				out.Contested = map[string][]string{}
			}
			if !slices.Contains(out.Contested[rival], k) {
				out.Contested[rival] = append(out.Contested[rival], k)
			}
		}
		if res.Patch.IsEmpty() && len(res.Skipped) == 0 {
			out.InSync++
			continue
		}
		out.Resources = append(out.Resources, resourceDiff{Cloud: p.Cloud, ID: res.ID,
			Changes: patchChanges(res.Rules.NameCase(), res.Before, res.Patch), NotWritten: skippedNotes(res.Skipped)})
	}
	for _, keys := range out.Contested {
		sort.Strings(keys)
	}
	return out
}

// workload prints one WorkloadTagPolicy's plan.
func (p *planPrinter) workload(w workloadPlan) {
	p.line(0, "", "WorkloadTagPolicy %s", w.Name)
	if w.Problem != "" {
		p.line(1, red, "! %s", w.Problem)
		return
	}
	if w.Suspended {
		p.line(1, yellow, "! suspended (spec.suspend): nothing would be written")
	}
	for _, res := range w.Resources {
		p.resource(1, res)
	}
	p.line(1, "", "%d resource(s) in sync", w.InSync)
	for _, v := range w.Pending {
		p.line(1, "", "%s: its resource is not in the cloud yet", v)
	}
	for _, v := range w.Shared {
		p.line(1, "", "%s: shared, never tagged per workload", v)
	}
	for _, v := range w.Unread {
		p.line(1, red, "! %s: its resource could not be read", v)
	}
	for _, f := range w.Failed {
		p.line(1, red, "! unreadable: %s", f)
	}
	rivals := make([]string, 0, len(w.Contested))
	for r := range w.Contested {
		rivals = append(rivals, r)
	}
	sort.Strings(rivals)
	for _, r := range rivals {
		p.line(1, red, "! WorkloadTagPolicy %s wants other values for %s: neither writes them", r, strings.Join(w.Contested[r], ", "))
	}
}
