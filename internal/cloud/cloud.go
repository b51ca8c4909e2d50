// Package cloud is the small interface through which tagsync's controllers
// speak to clouds: locate the resource that carries a node's tags, read tags
// in bulk, find resources by classifier tags, and patch tags key by key.
// Providers live in sub-packages (azure, aws); each implements the
// interfaces of the jobs it supports (NodeProvider, ClassifiedProvider).
package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	// Created is the Node's creation time (zero when unknown): a provider
	// whose reads may not show a new resource yet counts its grace from it.
	Created time.Time
}

// Placement says where a node runs and which resource carries its tags.
type Placement struct {
	// Managed is false for nodes tagsync cannot sync: on-prem, no or foreign
	// providerID, VM not found. Reason then says why.
	Managed bool
	// Reason explains an unmanaged placement, in words.
	Reason string
	// Scope says where the node's resource lives, in the provider's words
	// (Azure: "resource group rg-a in subscription 0000..."), for messages;
	// empty when the node was not located.
	Scope string
	// Resource is the ID of the resource whose tags the node syncs with, in
	// the casing the cloud returned.
	Resource string
	// Shared is true when several nodes share Resource (a scale set): their
	// proposals must be aggregated.
	Shared bool
	// Note explains a fallback, e.g. a Uniform instance synced with its scale
	// set under TargetInstance.
	Note string
	// Member, for a Shared placement, is the ID of the node's own resource
	// when it must carry the shared resource's synced tags too (AWS: the
	// instance of an Auto Scaling group under TargetScaleSet, since cost
	// allocation reads instance tags); its tags are in Snapshot.Resources.
	// The pass copies the shared resource's synced tags to it and repairs
	// them when they drift. Empty when the cloud needs no such copy.
	Member string
	// NotYet marks an unmanaged placement whose resource the cloud does not
	// show yet but may shortly (AWS: an instance EC2's eventually consistent
	// reads do not return within NewInstanceGrace of the Node's creation):
	// the node is not synced yet, nothing needs a person, and the pass looks
	// again soon instead of at its resync interval.
	NotYet bool
	// Err is set when the node's resource could not be read in this
	// snapshot (its scope is in Snapshot.Failed): the node is not synced in
	// this pass and counts as an error, not as unmanaged.
	Err error
}

// Resource is a cloud resource's current tags.
type Resource struct {
	// ID is the resource ID in the casing the cloud returned.
	ID string
	// Tags are the resource's tags, all of them.
	Tags tags.Set
	// OwnOnly names tags of a shared resource that stay on it and are not
	// copied to its Placement.Member resources (AWS: an Auto Scaling group
	// tag whose PropagateAtLaunch is false). Sorted; usually empty.
	OwnOnly []string
}

// Snapshot is the bulk read of a sync pass: every node's placement and the
// tags of every resource the placements name.
type Snapshot struct {
	// Placements are keyed by node name.
	Placements map[string]Placement
	// Resources are keyed by CanonicalID of the resource ID.
	Resources map[string]Resource
	// Failed lists the scopes (e.g. resource groups) that could not be read
	// and why. Nodes placed in them carry Placement.Err; everything else in
	// the snapshot is complete and usable.
	Failed []ScopeError
}

// ScopeError is a scope of a bulk read that failed.
type ScopeError struct {
	// Scope names what could not be read, in the cloud's words (e.g.
	// "resource group rg-a in subscription 0000...").
	Scope string
	// Err is why.
	Err error
}

// ReadOptions tune a Snapshot read.
type ReadOptions struct {
	// Target chooses the resource that carries a node's tags.
	Target Target
	// Fresh bypasses the provider's short-lived read cache.
	Fresh bool
	// Scopes, when not empty, limits the read to nodes in these
	// provider-defined scopes (Azure: resource group names,
	// case-insensitive); other nodes are unmanaged and cost no cloud call.
	Scopes []string
	// Resources, when not empty, asks for a targeted read after a change
	// event: the caller passes only the nodes its last pass placed on these
	// resources (canonical IDs), and the provider reads their resources
	// one by one, fresh, instead of listing their scopes (Azure: one GET
	// per scale set or VM; AWS: one DescribeInstances for the instances,
	// one DescribeAutoScalingGroups for the groups, the rest from its
	// cache). A provider without a targeted read reads as usual.
	Resources []string
}

// CanonicalID returns a resource ID in the form used as a map key: cloud
// resource IDs (ARM's) are case-insensitive, so it is lower-cased.
func CanonicalID(id string) string {
	return strings.ToLower(strings.TrimSuffix(id, "/"))
}

// ChangeKeys are the map keys (CanonicalID) under which a resource a cloud
// change names may be known: its ID and, for an AWS ARN of an EC2
// resource (arn:aws:ec2:<region>:<account>:volume/vol-0abc), its bare
// resource ID (vol-0abc), which is how Kubernetes objects name EC2
// resources (a PersistentVolume's volume handle, a VolumeSnapshotContent's
// snapshot handle).
func ChangeKeys(id string) []string {
	keys := []string{CanonicalID(id)}
	if rest, ok := strings.CutPrefix(id, "arn:"); ok && strings.Contains(rest, ":ec2:") {
		if i := strings.LastIndex(id, "/"); i >= 0 && i < len(id)-1 {
			keys = append(keys, CanonicalID(id[i+1:]))
		}
	}
	return keys
}

// Kinds of cloud errors. Providers return errors for which errors.Is
// reports one of these, so controllers decide without reading messages.
var (
	// ErrThrottled: the cloud asked the caller to slow down; see RetryAfter.
	ErrThrottled = errors.New("throttled by the cloud")
	// ErrForbidden: the credential may not do this.
	ErrForbidden = errors.New("forbidden by the cloud")
	// ErrNotFound: the resource does not exist (any more).
	ErrNotFound = errors.New("not found in the cloud")
	// ErrTooManyTags: the write would exceed the resource's tag limit.
	ErrTooManyTags = errors.New("too many tags on the resource")
)

// ThrottledError is a call the cloud throttled, or one that was not sent
// because the cloud's last answer for its scope asked for silence until
// later. errors.Is(err, ErrThrottled) holds for it.
type ThrottledError struct {
	// Scope is what is throttled (e.g. "reads of subscription 0000...").
	Scope string
	// RetryAfter is how long from the error's creation the caller must wait
	// before calling this scope again.
	RetryAfter time.Duration
	// Err is the cloud's answer, if a request was sent.
	Err error
}

// Error says what is throttled and for how long.
func (e *ThrottledError) Error() string {
	msg := fmt.Sprintf("%s throttled for %s", e.Scope, e.RetryAfter.Round(time.Second))
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cloud's answer.
func (e *ThrottledError) Unwrap() error { return e.Err }

// Is reports ErrThrottled.
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// NotSent reports whether the request was never sent: a throttle gate held
// it (there is no cloud's answer), so the resource is as it was and the
// caller may simply try again later.
func (e *ThrottledError) NotSent() bool { return e.Err == nil }

// RoundWait renders a wait for messages: whole seconds, or milliseconds
// under a second.
func RoundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// RetryAfter returns the longest wait any ThrottledError in err's tree asks
// for, and whether there is one.
func RetryAfter(err error) (time.Duration, bool) {
	var longest time.Duration
	found := false
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if t, ok := e.(*ThrottledError); ok {
			found = true
			longest = max(longest, t.RetryAfter)
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return longest, found
}

// Provider is one cloud: its name and tag rules. What a provider can do
// beyond that is in the narrower interfaces it implements: NodeProvider for
// the node sync, ClassifiedProvider for resources found by classifier tags.
// A provider implements only the ones it supports; Providers.NodeProvider
// and Providers.ClassifiedProvider ask for them.
type Provider interface {
	// Name is the provider's name ("azure").
	Name() string
	// Rules are the cloud's tag rules.
	Rules() tags.Rules
	// PlatformKeys are the keys the platforms running Kubernetes on the
	// cloud write on node resources and depend on (tags.PlatformKey).
	PlatformKeys() []tags.PlatformKey
}

// NodeProvider is a cloud the node sync (NodeTagSync) can use: it locates
// the resource that carries each node's tags, reads their tags in bulk and
// patches them key by key.
type NodeProvider interface {
	Provider
	// Snapshot locates the nodes and reads the tags of their resources,
	// in bulk (per resource group or scale set, never one call per node).
	// A scope that cannot be read is reported in Snapshot.Failed and does
	// not stop the others; the error is for a read that could not run at
	// all (e.g. the context ended).
	Snapshot(ctx context.Context, nodes []Node, opts ReadOptions) (Snapshot, error)
	// TagWriter is the one tag write: the node sync's writes are Fresh (see
	// TagWrite.Fresh): the provider reads each resource before writing it
	// (AWS: an instance the node sync read less than a few seconds ago is
	// taken as read), writes only what differs, and reports its tags after
	// the write; after a failed write the provider's cached reads of that
	// resource are dropped so the retry reads afresh. A provider that can
	// write one patch to many resources in fewer calls than one each does
	// so (AWS: one CreateTags and at most one DeleteTags for up to 1000
	// instances of a region whose change is identical; Auto Scaling
	// groups one by one).
	TagWriter
}

// TagWriter is a cloud's one tag write, for every controller.
type TagWriter interface {
	// WriteTags applies each write's patch to each of its resources: set
	// names are merged key by key, deleted names removed (see
	// TagWrite.Expect), every other tag is kept. Resources that share a
	// patch are written in as few calls as the cloud allows (AWS:
	// CreateTags / DeleteTags with up to 1000 IDs; Azure: one Tags API
	// request per resource and operation). A Fresh write reads each
	// resource first (TagWrite.Fresh). It returns one result per ID, in
	// the order given.
	//
	// Results stream: each (nil: none) is called serially, never
	// concurrently, once with WriteResult.Pending just before the first
	// request for a resource is sent, and once with its result as soon as
	// that is known (AWS: a batch call's resources complete together), so
	// a caller records every mutation as it happens. A non-nil error from
	// each stops the provider: it starts no further request, and the
	// resources not started end with an error wrapping it (each is not
	// called for them). A resource whose Pending call failed is not sent.
	WriteTags(ctx context.Context, writes []TagWrite, each func(WriteResult) error) []WriteResult
}

// PatchEach is a fresh batch write (see WriteFresh) for a provider that
// writes one resource at a time: patchTags (the provider's write of one
// resource, reading it first and returning its tags after the write) is
// called for each of ids in order, and each gets its result before the
// next is written.
func PatchEach(ctx context.Context, patchTags func(ctx context.Context, id string, patch tags.Patch) (Resource, error),
	ids []string, patch tags.Patch, each func(id string, res Resource, err error)) {
	for _, id := range ids {
		res, err := patchTags(ctx, id, patch)
		each(id, res, err)
	}
}

// WriteFresh is WriteTags of one Fresh write for a provider whose fresh
// batch write is patch (it reads each of ids, writes what differs, and
// reports each ID's tags after the write, or its error, exactly once):
// every resource is reported pending to stream first, those the stream
// refuses are not sent, and each result is reported as patch gives it. It
// returns one result per ID, in w.IDs' order.
func WriteFresh(ctx context.Context, w TagWrite, stream *ResultStream,
	patch func(ctx context.Context, ids []string, patch tags.Patch, each func(id string, res Resource, err error))) []WriteResult {
	out := make([]WriteResult, len(w.IDs))
	at := make(map[string]int, len(w.IDs))
	var send []string
	for i, id := range w.IDs {
		out[i].ID = id
		if err := stream.Start(id); err != nil {
			out[i].Err = NotStarted(id, err)
			continue
		}
		at[id] = i
		send = append(send, id)
	}
	if len(send) == 0 {
		return out
	}
	patch(ctx, send, w.Patch, func(id string, res Resource, err error) {
		i, ok := at[id]
		if !ok {
			return
		}
		delete(at, id)
		out[i].Err, out[i].Tags = err, res.Tags
		_ = stream.Done(out[i])
	})
	for id, i := range at { // the provider broke its contract
		out[i].Err = fmt.Errorf("the cloud provider reported no result for %s", id)
		_ = stream.Done(out[i])
	}
	return out
}

// ClassifiedProvider is a cloud whose resources metadata objects
// (CloudMetadata and the per-cloud kinds) tag: it finds resources by
// classifier tags and writes their tags.
type ClassifiedProvider interface {
	Provider
	// Discover lists, in bulk, every resource in opts.Scopes that carries
	// any of the classifiers (OR-ed), with all its tags (Azure: Resource
	// Graph pages of up to 1000 rows across subscriptions; AWS: Resource
	// Groups Tagging API GetResources pages per classifier and region). A
	// scope that cannot be searched is reported in Discovery.Failed and does
	// not stop the others; the error is for a search that could not run at
	// all.
	Discover(ctx context.Context, classifiers []Classifier, opts DiscoverOptions) (Discovery, error)
	// TagWriter writes the resources' tags; metadata's writes are not Fresh
	// (the discovery just read them, and TagWrite.Expect guards the
	// deletions).
	TagWriter
}

// HeartbeatTag is the tag tagsync's event heartbeat rewrites every few
// minutes (--events-heartbeat).
const HeartbeatTag = "tagsync-heartbeat"

// HeartbeatKey is HeartbeatTag as a platform key of every cloud: copied
// into labels it would rewrite Nodes each time.
var HeartbeatKey = tags.PlatformKey{Pattern: HeartbeatTag, Owner: "tagsync's event heartbeat (--events-heartbeat)",
	Why:    "the leader rewrites it every few minutes and awaits its event: copied into labels it would rewrite Nodes each time",
	Source: "docs/events.md (the heartbeat)"}
