package labelsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/tags"
)

// source is what one pass serves: which hosts own which prefixes, and how
// often they are compared with their Nodes.
type source struct {
	// key is the reconcile request.
	key types.NamespacedName
	// obj is the LabelSyncProfile or Metal3Cluster (events go there).
	obj client.Object
	// profile is set for a LabelSyncProfile source.
	profile *v1alpha1.LabelSyncProfile
	// infra is set for a Metal3Cluster source.
	infra *types.NamespacedName
	// prefixes are the owned prefixes (nil: a Metal3Cluster without the
	// annotation, which is no source).
	prefixes []string
	// resync is the full resync interval.
	resync time.Duration
	// suspended: the pass reads and reports but writes nothing (a
	// profile's spec.suspend; a Metal3Cluster is never suspended).
	suspended bool
	// retain: the pass never removes a label (a profile's deletionPolicy
	// Retain; a Metal3Cluster deletes, as CAPM3 does).
	retain bool
	// invalid is why a Metal3Cluster's annotations cannot be used.
	invalid error
}

// kind names the source's kind in metrics and messages.
func (s *source) kind() string {
	if s.profile != nil {
		return "LabelSyncProfile"
	}
	return "Metal3Cluster"
}

// recordName names the source in the Nodes' label sync records
// (v1alpha1.LabelSyncRecordAnnotation): its kind and namespace/name.
func (s *source) recordName() string { return s.kind() + " " + s.name() }

// name is the source's namespace/name for messages and metrics.
func (s *source) name() string {
	return s.obj.GetNamespace() + "/" + s.obj.GetName()
}

// sourceFor reads the source a request names; NotFound when it is gone.
func (r *Reconciler) sourceFor(ctx context.Context, key types.NamespacedName) (*source, error) {
	if isProfileRequest(key) {
		var p v1alpha1.LabelSyncProfile
		if err := r.Client.Get(ctx, key, &p); err != nil {
			return nil, err
		}
		return &source{key: key, obj: &p, profile: &p, prefixes: p.Spec.Prefixes, resync: p.Spec.Resync(),
			suspended: p.Spec.Suspend, retain: p.Spec.Retains()}, nil
	}
	infra := types.NamespacedName{Namespace: key.Namespace, Name: strings.TrimPrefix(key.Name, infraRequestPrefix)}
	m3c := metadataOf(metal3.Metal3ClusterGVK)
	if err := r.Client.Get(ctx, infra, m3c); err != nil {
		return nil, err
	}
	src := &source{key: key, obj: m3c, infra: &infra}
	prefixes, resync, err := parseAnnotations(m3c.Annotations)
	if err != nil {
		src.invalid = err
		return src, nil
	}
	src.prefixes, src.resync = prefixes, resync
	return src, nil
}

// hasSyncAnnotation reports a Metal3Cluster that asks for label sync.
func hasSyncAnnotation(o metav1.Object) bool {
	_, ok := o.GetAnnotations()[metal3.PrefixesAnnotation]
	return ok
}

// parseAnnotations reads a Metal3Cluster's label sync annotations: the
// prefixes (nil without the annotation; an empty list is valid and syncs
// nothing) and the interval (DefaultLabelResync without its annotation).
// Either invalid is an error and the whole configuration is refused, as
// CAPM3 refuses an annotation with one invalid prefix.
func parseAnnotations(a map[string]string) ([]string, time.Duration, error) {
	text, ok := a[metal3.PrefixesAnnotation]
	if !ok {
		return nil, 0, nil
	}
	var errs []error
	prefixes, err := tags.ParseSyncPrefixes(text)
	if err != nil {
		errs = append(errs, fmt.Errorf("annotation %s: %w", metal3.PrefixesAnnotation, err))
	} else if prefixes == nil {
		prefixes = []string{}
	}
	interval, err := ParseInterval(a[metal3.IntervalAnnotation])
	if err != nil {
		errs = append(errs, fmt.Errorf("annotation %s: %w", metal3.IntervalAnnotation, err))
	}
	if len(errs) > 0 {
		return nil, 0, errors.Join(errs...)
	}
	return prefixes, interval, nil
}

// ParseInterval parses a resync interval as the Metal3Cluster annotation
// metal3.io/metal3-label-sync-interval gives it: a duration such as 30s or
// 5m, from MinLabelResync (10s) to MaxLabelResync (24h); empty means
// DefaultLabelResync (60s), CAPM3's fixed interval.
func ParseInterval(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return v1alpha1.DefaultLabelResync, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration such as 30s, 5m or 1h30m", s)
	case d < v1alpha1.MinLabelResync:
		return 0, fmt.Errorf("%q is shorter than %s: Node edits are reverted through a watch, the resync is only a safety net", s, v1alpha1.MinLabelResync)
	case d > v1alpha1.MaxLabelResync:
		return 0, fmt.Errorf("%q is longer than %s", s, v1alpha1.MaxLabelResync)
	}
	return d, nil
}

// joinErrs renders errors.Join'ed errors on one line.
func joinErrs(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
