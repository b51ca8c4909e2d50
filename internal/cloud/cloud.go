// Package cloud is the small interface through which tagsync's controllers
// speak to clouds: locate the resource that carries a node's tags, read tags
// in bulk, and patch tags key by key. Providers live in sub-packages (azure).
package cloud

import (
	"context"
	"strings"

	"github.com/tagsync/tagsync/internal/tags"
)

// Target says which resource carries a node's tags.
type Target string

const (
	// TargetScaleSet uses a node's scale set when it belongs to one, else its VM.
	TargetScaleSet Target = "ScaleSet"
	// TargetInstance uses a node's own VM where the cloud allows per-instance
	// tags; instances without tags of their own fall back to their scale set.
	TargetInstance Target = "Instance"
)

// Node is what a provider needs to know about a Kubernetes Node.
type Node struct {
	// Name is the Node's name.
	Name string
	// ProviderID is spec.providerID (may be empty).
	ProviderID string
	// Labels are the Node's labels (read only).
	Labels map[string]string
}

// Placement says where a node runs and which resource carries its tags.
type Placement struct {
	// Managed is false for nodes tagsync cannot sync: on-prem, no or foreign
	// providerID, VM not found. Reason then says why.
	Managed bool
	// Reason explains an unmanaged placement, in words.
	Reason string
	// Subscription and ResourceGroup locate the node's VM.
	Subscription  string
	ResourceGroup string
	// Resource is the ID of the resource whose tags the node syncs with, in
	// the casing the cloud returned.
	Resource string
	// Shared is true when several nodes share Resource (a scale set): their
	// proposals must be aggregated.
	Shared bool
	// Note explains a fallback, e.g. a Uniform instance synced with its scale
	// set under TargetInstance.
	Note string
}

// Resource is a cloud resource's current tags.
type Resource struct {
	// ID is the resource ID in the casing the cloud returned.
	ID string
	// Tags are the resource's tags, all of them.
	Tags tags.Set
	// ETag is the cloud's entity tag for the resource, when it has one.
	ETag string
}

// Snapshot is the bulk read of a sync pass: every node's placement and the
// tags of every resource the placements name.
type Snapshot struct {
	// Placements are keyed by node name.
	Placements map[string]Placement
	// Resources are keyed by CanonicalID of the resource ID.
	Resources map[string]Resource
}

// ReadOptions tune a Snapshot read.
type ReadOptions struct {
	// Target chooses the resource that carries a node's tags.
	Target Target
	// Fresh bypasses the provider's short-lived read cache.
	Fresh bool
	// ResourceGroups, when not empty, limits the sync to nodes in these
	// resource groups (case-insensitive); other nodes are unmanaged and cost
	// no cloud call.
	ResourceGroups []string
}

// CanonicalID returns a resource ID in the form used as a map key: cloud
// resource IDs (ARM's) are case-insensitive, so it is lower-cased.
func CanonicalID(id string) string {
	return strings.ToLower(strings.TrimSuffix(id, "/"))
}

// Provider is one cloud.
type Provider interface {
	// Name is the provider's name ("azure").
	Name() string
	// Rules are the cloud's tag rules.
	Rules() tags.Rules
	// Snapshot locates the nodes and reads the tags of their resources,
	// in bulk (per resource group or scale set, never one call per node).
	Snapshot(ctx context.Context, nodes []Node, opts ReadOptions) (Snapshot, error)
	// PatchTags sets and deletes only the named tags on one resource, based on
	// a fresh read: concurrent changes by others to other keys are kept, and a
	// stale read is retried rather than overwritten. It returns the resource's
	// tags after the write.
	PatchTags(ctx context.Context, id string, patch tags.Patch) (Resource, error)
}
