package cli

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// statusReport is every tagsync object `tagsync status` shows, and the kinds
// it could not show.
type statusReport struct {
	// Namespace is the namespace read; "" means all.
	Namespace     string
	NodeTagSyncs  []v1alpha1.NodeTagSync
	CloudMetadata []v1alpha1.CloudMetadata
	Azure         []v1alpha1.AzureMetadata
	AWS           []v1alpha1.AWSMetadata
	Profiles      []v1alpha1.LabelSyncProfile
	Workloads     []v1alpha1.WorkloadTagPolicy
	// Absent are the kinds whose CRD the cluster does not have.
	Absent []string
	// Forbidden are the kinds the user may not list.
	Forbidden []string
}

// statusKind is one kind status reads.
type statusKind struct {
	kind       string
	namespaced bool
	newList    func() client.ObjectList
	newObject  func() client.Object
}

// statusKinds are the kinds status reads, in the order it shows them.
var statusKinds = []statusKind{
	{"NodeTagSync", false, func() client.ObjectList { return &v1alpha1.NodeTagSyncList{} },
		func() client.Object { return &v1alpha1.NodeTagSync{} }},
	{"CloudMetadata", true, func() client.ObjectList { return &v1alpha1.CloudMetadataList{} },
		func() client.Object { return &v1alpha1.CloudMetadata{} }},
	{"AzureMetadata", true, func() client.ObjectList { return &v1alpha1.AzureMetadataList{} },
		func() client.Object { return &v1alpha1.AzureMetadata{} }},
	{"AWSMetadata", true, func() client.ObjectList { return &v1alpha1.AWSMetadataList{} },
		func() client.Object { return &v1alpha1.AWSMetadata{} }},
	{"LabelSyncProfile", true, func() client.ObjectList { return &v1alpha1.LabelSyncProfileList{} },
		func() client.Object { return &v1alpha1.LabelSyncProfile{} }},
	{"WorkloadTagPolicy", false, func() client.ObjectList { return &v1alpha1.WorkloadTagPolicyList{} },
		func() client.Object { return &v1alpha1.WorkloadTagPolicy{} }},
}

// collectStatus lists the kinds in namespace ns ("" for all; the
// cluster-scoped NodeTagSyncs and WorkloadTagPolicies always whole). A kind without a CRD or that
// the user may not list is noted, not an error.
func collectStatus(ctx context.Context, c client.Reader, ns string, kinds []statusKind) (*statusReport, error) {
	r := &statusReport{Namespace: ns}
	for _, k := range kinds {
		list := k.newList()
		var opts []client.ListOption
		if k.namespaced && ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		err := c.List(ctx, list, opts...)
		switch {
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
			r.Absent = append(r.Absent, k.kind)
		case apierrors.IsForbidden(err):
			r.Forbidden = append(r.Forbidden, k.kind)
		case err != nil:
			return nil, fmt.Errorf("listing %s: %w", k.kind, err)
		default:
			r.keep(list)
		}
	}
	return r, nil
}

// keep stores a filled list in the report.
func (r *statusReport) keep(list client.ObjectList) {
	switch l := list.(type) {
	case *v1alpha1.NodeTagSyncList:
		r.NodeTagSyncs = l.Items
	case *v1alpha1.CloudMetadataList:
		r.CloudMetadata = l.Items
	case *v1alpha1.AzureMetadataList:
		r.Azure = l.Items
	case *v1alpha1.AWSMetadataList:
		r.AWS = l.Items
	case *v1alpha1.LabelSyncProfileList:
		r.Profiles = l.Items
	case *v1alpha1.WorkloadTagPolicyList:
		r.Workloads = l.Items
	}
}

// empty reports whether the report holds no object.
func (r *statusReport) empty() bool {
	return len(r.NodeTagSyncs)+len(r.CloudMetadata)+len(r.Azure)+len(r.AWS)+len(r.Profiles)+len(r.Workloads) == 0
}

// objects returns every object of the report, in the order shown.
func (r *statusReport) objects() []client.Object {
	var out []client.Object
	for i := range r.NodeTagSyncs {
		out = append(out, &r.NodeTagSyncs[i])
	}
	for i := range r.CloudMetadata {
		out = append(out, &r.CloudMetadata[i])
	}
	for i := range r.Azure {
		out = append(out, &r.Azure[i])
	}
	for i := range r.AWS {
		out = append(out, &r.AWS[i])
	}
	for i := range r.Profiles {
		out = append(out, &r.Profiles[i])
	}
	for i := range r.Workloads {
		out = append(out, &r.Workloads[i])
	}
	return out
}
