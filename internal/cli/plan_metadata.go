package cli

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/metadata"
)

// unknownOtherNamespaces says what plan leaves out when it may not list
// CloudMetadata cluster-wide.
const unknownOtherNamespaces = "contests with CloudMetadata of other namespaces: listing CloudMetadata in every namespace was refused"

// collectMetadata plans every (or the named) CloudMetadata of the
// selected namespaces with the controller's own stages
// (metadata.Predict): every CloudMetadata plan may list, in every
// namespace, is discovered, so that contests with objects of other
// namespaces show as the controller finds them.
func (r *planReport) collectMetadata(ctx context.Context, c client.Reader, providers cloud.Providers, sel planSelection) error {
	var list v1alpha1.CloudMetadataList
	err := c.List(ctx, &list)
	if apierrors.IsForbidden(err) && !sel.allNamespaces {
		r.Unknown = append(r.Unknown, unknownOtherNamespaces)
		err = c.List(ctx, &list, client.InNamespace(sel.namespace))
	}
	if err != nil {
		return fmt.Errorf("listing CloudMetadata: %w", err)
	}
	preds, err := metadata.Predict(ctx, c, providers, list.Items, func(cm *v1alpha1.CloudMetadata) bool {
		return (sel.allNamespaces || cm.Namespace == sel.namespace) && (sel.name == "" || cm.Name == sel.name)
	})
	if err != nil {
		return err
	}
	for _, p := range preds {
		mp, err := metadataPlanOf(p)
		if err != nil {
			return err
		}
		r.CloudMetadata = append(r.CloudMetadata, mp)
	}
	return nil
}

// metadataPlanOf renders one CloudMetadata's predicted pass; the error is
// a discovery that could not run (the plan would be incomplete).
func metadataPlanOf(p metadata.Prediction) (metadataPlan, error) {
	out := metadataPlan{Namespace: p.Namespace, Name: p.Name, Retained: p.Retained, Held: p.Held}
	if len(p.Problems) > 0 {
		out.Problem = "nothing would be written: " + strings.Join(p.Problems, "; ")
		return out, nil
	}
	for _, t := range p.Targets {
		if t.ReadErr != nil {
			return out, fmt.Errorf("%s %s/%s: discovering the classified resources: %w", t.Kind, p.Namespace, t.Name, t.ReadErr)
		}
		out.Requests = append(out.Requests, requestPlanOf(t))
	}
	return out, nil
}

// requestPlanOf renders one request's part of a predicted pass.
func requestPlanOf(t metadata.TargetPrediction) requestPlan {
	out := requestPlan{Kind: t.Kind, Name: t.Name, Cloud: t.Cloud, Opcode: t.Opcode, Failed: t.Failed, Matched: len(t.Plans)}
	switch {
	case t.Problem != "" && len(t.Failed) == 0:
		out.Problem = "nothing would be written: " + t.Problem
	case t.Suspended != "":
		out.Problem = fmt.Sprintf("nothing would be written: suspended by %s; shown is what a pass would write", t.Suspended)
	}
	for _, c := range t.Contests {
		out.Contests = append(out.Contests, contestNote{Other: c.Other, Names: c.Names, Resources: c.Resources})
	}
	for _, pl := range t.Plans {
		if pl.Plan.InSync() {
			out.InSync++
			continue
		}
		out.Resources = append(out.Resources, metadataDiff(t.Cloud, pl))
	}
	return out
}

// metadataDiff renders one resource's plan: the writes a pass would make
// and the tags it would report instead.
func metadataDiff(cloudName string, pl metadata.Planned) resourceDiff {
	res := pl.Resource
	nc := res.Rules.NameCase()
	return resourceDiff{Cloud: cloudName, ID: res.ID, Changes: patchChanges(nc, res.Tags, pl.Plan.Patch),
		NotWritten: skippedNotes(pl.Plan.Skipped)}
}
