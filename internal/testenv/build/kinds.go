package build

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// NodeTagSyncOption changes a NodeTagSync being built: a Meta option, a
// NodeTagSync option (Provider, Direction, ConflictPolicy, Target,
// LabelPrefix, ResourceGroups, NodeSelector, IncludeTags, ExcludeTags,
// SyncTaints, NodeTagSyncSpec), Suspend, DeletionPolicy, ResyncInterval or
// a NodeTagSyncFunc.
type NodeTagSyncOption interface {
	applyNodeTagSync(*v1alpha1.NodeTagSync)
}

// NodeTagSyncFunc is any edit of a NodeTagSync as an option.
type NodeTagSyncFunc func(*v1alpha1.NodeTagSync)

func (f NodeTagSyncFunc) applyNodeTagSync(o *v1alpha1.NodeTagSync) { f(o) }

// NodeTagSync is a NodeTagSync named name (cluster-scoped) with opts
// applied; with none, every field has its default.
func NodeTagSync(name string, opts ...NodeTagSyncOption) *v1alpha1.NodeTagSync {
	o := &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, opt := range opts {
		opt.applyNodeTagSync(o)
	}
	return o
}

// NodeTagSyncSpec applies edit to a NodeTagSync's spec (nil: nothing), for
// tests that describe a spec as such an edit.
func NodeTagSyncSpec(edit func(*v1alpha1.NodeTagSyncSpec)) NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) {
		if edit != nil {
			edit(&o.Spec)
		}
	}
}

// Provider sets a NodeTagSync's cloud.
func Provider(p v1alpha1.Provider) NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) { o.Spec.Provider = p }
}

// Direction sets a NodeTagSync's direction.
func Direction(d v1alpha1.Direction) NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) { o.Spec.Direction = d }
}

// ConflictPolicy sets a NodeTagSync's conflict policy.
func ConflictPolicy(p v1alpha1.ConflictPolicy) NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) { o.Spec.ConflictPolicy = p }
}

// Target sets which resource a NodeTagSync tags (ScaleSet or Instance).
func Target(t v1alpha1.Target) NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) { o.Spec.Target = t }
}

// LabelPrefix sets a NodeTagSync's label prefix ("" is a prefix too: no
// prefix at all).
func LabelPrefix(prefix string) NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) { o.Spec.LabelPrefix = &prefix }
}

// ResourceGroups sets a NodeTagSync's resource groups (regions on AWS).
func ResourceGroups(names ...v1alpha1.ResourceGroupName) NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) { o.Spec.ResourceGroups = names }
}

// NodeSelector makes a NodeTagSync select the Nodes with the labels in
// matchLabels.
func NodeSelector(matchLabels map[string]string) NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) {
		o.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
}

// IncludeTags sets a NodeTagSync's includeTags.
func IncludeTags(patterns ...v1alpha1.TagPattern) NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) { o.Spec.IncludeTags = patterns }
}

// ExcludeTags sets a NodeTagSync's excludeTags.
func ExcludeTags(patterns ...v1alpha1.TagPattern) NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) { o.Spec.ExcludeTags = patterns }
}

// SyncTaints makes a NodeTagSync sync taints too.
func SyncTaints() NodeTagSyncFunc {
	return func(o *v1alpha1.NodeTagSync) { o.Spec.SyncTaints = true }
}

// CloudMetadataOption changes a CloudMetadata being built: a Meta option,
// a CloudMetadata option (Classifiers, Limit, SyncEvery, AzureRef, AWSRef),
// Suspend, DeletionPolicy or a CloudMetadataFunc.
type CloudMetadataOption interface {
	applyCloudMetadata(*v1alpha1.CloudMetadata)
}

// CloudMetadataFunc is any edit of a CloudMetadata as an option.
type CloudMetadataFunc func(*v1alpha1.CloudMetadata)

func (f CloudMetadataFunc) applyCloudMetadata(o *v1alpha1.CloudMetadata) { f(o) }

// CloudMetadata is a CloudMetadata named name with opts applied (give it a
// Namespace: the kind is namespaced).
func CloudMetadata(name string, opts ...CloudMetadataOption) *v1alpha1.CloudMetadata {
	o := &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, opt := range opts {
		opt.applyCloudMetadata(o)
	}
	return o
}

// Classifiers sets the tags a CloudMetadata's resources carry.
func Classifiers(m map[string]string) CloudMetadataFunc {
	return func(o *v1alpha1.CloudMetadata) { o.Spec.Classifiers = m }
}

// Limit sets a CloudMetadata's limit policy.
func Limit(p v1alpha1.LimitPolicy) CloudMetadataFunc {
	return func(o *v1alpha1.CloudMetadata) { o.Spec.ControllerConfig.Limit = p }
}

// SyncEvery sets a CloudMetadata's pass interval, e.g. "10m".
func SyncEvery(every string) CloudMetadataFunc {
	return func(o *v1alpha1.CloudMetadata) { o.Spec.ControllerConfig.SyncEvery = every }
}

// AzureRef makes a CloudMetadata reference the AzureMetadata name.
func AzureRef(name string) CloudMetadataFunc {
	return func(o *v1alpha1.CloudMetadata) { o.Spec.CloudProvider.AzureRef = &v1alpha1.LocalObjectRef{Name: name} }
}

// AWSRef makes a CloudMetadata reference the AWSMetadata name.
func AWSRef(name string) CloudMetadataFunc {
	return func(o *v1alpha1.CloudMetadata) { o.Spec.CloudProvider.AWSRef = &v1alpha1.LocalObjectRef{Name: name} }
}

// AzureMetadataOption changes an AzureMetadata being built: a Meta option,
// Opcode, ResourceTags, IgnoreTags, Subscriptions, ResourceGroupScopes,
// Suspend or an AzureMetadataFunc.
type AzureMetadataOption interface {
	applyAzureMetadata(*v1alpha1.AzureMetadata)
}

// AzureMetadataFunc is any edit of an AzureMetadata as an option.
type AzureMetadataFunc func(*v1alpha1.AzureMetadata)

func (f AzureMetadataFunc) applyAzureMetadata(o *v1alpha1.AzureMetadata) { f(o) }

// AzureMetadata is an AzureMetadata named name with opts applied (give it
// a Namespace and an Opcode).
func AzureMetadata(name string, opts ...AzureMetadataOption) *v1alpha1.AzureMetadata {
	o := &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, opt := range opts {
		opt.applyAzureMetadata(o)
	}
	return o
}

// Subscriptions sets the subscriptions an AzureMetadata looks in.
func Subscriptions(ids ...string) AzureMetadataFunc {
	return func(o *v1alpha1.AzureMetadata) { o.Spec.Subscriptions = ids }
}

// ResourceGroupScopes sets the resource groups an AzureMetadata looks in.
func ResourceGroupScopes(scopes ...v1alpha1.ResourceGroupScope) AzureMetadataFunc {
	return func(o *v1alpha1.AzureMetadata) { o.Spec.ResourceGroups = scopes }
}

// AWSMetadataOption changes an AWSMetadata being built: a Meta option,
// Opcode, ResourceTags, IgnoreTags, Regions, Suspend or an
// AWSMetadataFunc.
type AWSMetadataOption interface {
	applyAWSMetadata(*v1alpha1.AWSMetadata)
}

// AWSMetadataFunc is any edit of an AWSMetadata as an option.
type AWSMetadataFunc func(*v1alpha1.AWSMetadata)

func (f AWSMetadataFunc) applyAWSMetadata(o *v1alpha1.AWSMetadata) { f(o) }

// AWSMetadata is an AWSMetadata named name with opts applied (give it a
// Namespace and an Opcode).
func AWSMetadata(name string, opts ...AWSMetadataOption) *v1alpha1.AWSMetadata {
	o := &v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, opt := range opts {
		opt.applyAWSMetadata(o)
	}
	return o
}

// Regions sets the regions an AWSMetadata looks in.
func Regions(regions ...string) AWSMetadataFunc {
	return func(o *v1alpha1.AWSMetadata) { o.Spec.Regions = regions }
}

// TagRequest is an option of both tag requests, AzureMetadata and
// AWSMetadata.
type TagRequest func(op *v1alpha1.Opcode, tags *map[string]string, ignore *[]string)

func (f TagRequest) applyAzureMetadata(o *v1alpha1.AzureMetadata) {
	f(&o.Spec.Opcode, &o.Spec.ResourceTags, &o.Spec.IgnoreTags)
}

func (f TagRequest) applyAWSMetadata(o *v1alpha1.AWSMetadata) {
	f(&o.Spec.Opcode, &o.Spec.ResourceTags, &o.Spec.IgnoreTags)
}

// Opcode sets what a tag request does: add, update or delete.
func Opcode(op v1alpha1.Opcode) TagRequest {
	return func(o *v1alpha1.Opcode, _ *map[string]string, _ *[]string) { *o = op }
}

// ResourceTags sets a tag request's tags to m itself (not a copy).
func ResourceTags(m map[string]string) TagRequest {
	return func(_ *v1alpha1.Opcode, tags *map[string]string, _ *[]string) { *tags = m }
}

// IgnoreTags sets the tags a tag request leaves alone (none: nil).
func IgnoreTags(keys ...string) TagRequest {
	return func(_ *v1alpha1.Opcode, _ *map[string]string, ignore *[]string) { *ignore = keys }
}

// LabelSyncProfileOption changes a LabelSyncProfile being built: a Meta
// option, HostSelector, Prefixes, Suspend, DeletionPolicy, ResyncInterval
// or a LabelSyncProfileFunc.
type LabelSyncProfileOption interface {
	applyLabelSyncProfile(*v1alpha1.LabelSyncProfile)
}

// LabelSyncProfileFunc is any edit of a LabelSyncProfile as an option.
type LabelSyncProfileFunc func(*v1alpha1.LabelSyncProfile)

func (f LabelSyncProfileFunc) applyLabelSyncProfile(o *v1alpha1.LabelSyncProfile) { f(o) }

// LabelSyncProfile is a LabelSyncProfile named name with opts applied (give
// it a Namespace, a HostSelector and Prefixes).
func LabelSyncProfile(name string, opts ...LabelSyncProfileOption) *v1alpha1.LabelSyncProfile {
	o := &v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, opt := range opts {
		opt.applyLabelSyncProfile(o)
	}
	return o
}

// HostSelector makes a profile select the BareMetalHosts with the labels
// in matchLabels.
func HostSelector(matchLabels map[string]string) LabelSyncProfileFunc {
	return func(o *v1alpha1.LabelSyncProfile) {
		o.Spec.HostSelector = metav1.LabelSelector{MatchLabels: matchLabels}
	}
}

// Prefixes sets the label prefixes a profile syncs (none: nil).
func Prefixes(prefixes ...string) LabelSyncProfileFunc {
	return func(o *v1alpha1.LabelSyncProfile) { o.Spec.Prefixes = prefixes }
}

// SuspendOption suspends an object: see Suspend.
type SuspendOption struct{}

// Suspend sets spec.suspend on a NodeTagSync, CloudMetadata, AzureMetadata,
// AWSMetadata or LabelSyncProfile.
func Suspend() SuspendOption { return SuspendOption{} }

func (SuspendOption) applyNodeTagSync(o *v1alpha1.NodeTagSync)           { o.Spec.Suspend = true }
func (SuspendOption) applyCloudMetadata(o *v1alpha1.CloudMetadata)       { o.Spec.Suspend = true }
func (SuspendOption) applyAzureMetadata(o *v1alpha1.AzureMetadata)       { o.Spec.Suspend = true }
func (SuspendOption) applyAWSMetadata(o *v1alpha1.AWSMetadata)           { o.Spec.Suspend = true }
func (SuspendOption) applyLabelSyncProfile(o *v1alpha1.LabelSyncProfile) { o.Spec.Suspend = true }

// DeletionPolicyOption is a deletion policy as an option: see
// DeletionPolicy.
type DeletionPolicyOption v1alpha1.DeletionPolicy

// DeletionPolicy sets spec.deletionPolicy on a NodeTagSync, CloudMetadata
// or LabelSyncProfile.
func DeletionPolicy(p v1alpha1.DeletionPolicy) DeletionPolicyOption { return DeletionPolicyOption(p) }

func (p DeletionPolicyOption) applyNodeTagSync(o *v1alpha1.NodeTagSync) {
	o.Spec.DeletionPolicy = v1alpha1.DeletionPolicy(p)
}

func (p DeletionPolicyOption) applyCloudMetadata(o *v1alpha1.CloudMetadata) {
	o.Spec.DeletionPolicy = v1alpha1.DeletionPolicy(p)
}

func (p DeletionPolicyOption) applyLabelSyncProfile(o *v1alpha1.LabelSyncProfile) {
	o.Spec.DeletionPolicy = v1alpha1.DeletionPolicy(p)
}

// ResyncOption is a resync interval as an option: see ResyncInterval.
type ResyncOption time.Duration

// ResyncInterval sets spec.resyncInterval on a NodeTagSync or
// LabelSyncProfile.
func ResyncInterval(d time.Duration) ResyncOption { return ResyncOption(d) }

func (d ResyncOption) applyNodeTagSync(o *v1alpha1.NodeTagSync) {
	o.Spec.ResyncInterval = &metav1.Duration{Duration: time.Duration(d)}
}

func (d ResyncOption) applyLabelSyncProfile(o *v1alpha1.LabelSyncProfile) {
	o.Spec.ResyncInterval = &metav1.Duration{Duration: time.Duration(d)}
}
