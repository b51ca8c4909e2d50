package cloud

import (
	"context"
	"fmt"
	"sync"

	"github.com/tagsync/tagsync/internal/tags"
)

// Classifier is a tag that puts a resource in scope of a metadata object:
// the resource carries the tag Name with exactly the value Value. Names
// match as the cloud compares them (Rules.NameCase); values exactly.
type Classifier struct {
	// Name is the tag name.
	Name string
	// Value is the tag value, matched exactly.
	Value string
}

// Classifies reports whether a resource tagged t carries any of the
// classifiers, names compared as nc says, values exactly.
func Classifies(nc tags.NameCase, t tags.Set, classifiers []Classifier) bool {
	for _, c := range classifiers {
		if v, ok := t.Get(nc, c.Name); ok && v == c.Value {
			return true
		}
	}
	return false
}

// ClassifiedReader is a cloud that reads one resource by ID, as Discover
// finds it: after a change event, one call per changed resource instead of
// a discovery, and one call tells whether a resource the event names now
// carries a classifier.
type ClassifiedReader interface {
	Provider
	// ReadClassified returns the resource with all its tags, fresh, or,
	// with WithReadAfter in ctx, as a read sent at or after that time
	// found it (another reader's); an error for which errors.Is reports
	// ErrNotFound when it is gone.
	ReadClassified(ctx context.Context, id string) (Classified, error)
	// Covers reports whether a Discover of scopes (the provider's default
	// when empty) could find the resource id, without a call: a change of
	// a resource no search covers is not worth a read.
	Covers(id string, scopes []string) bool
}

// ChangeDescriber is a cloud whose change events carry a resource's whole
// tag set (AWS: EventBridge's "Tag Change on Resource"): it tells, without
// a call, how Discover would find the resource a change names, had its
// search index caught up with the change. A search index follows the
// writes with a delay (the Resource Groups Tagging API is eventually
// consistent), so a full pass adds the resources changes named that its
// discovery did not find yet.
type ChangeDescriber interface {
	Provider
	// DescribeChanged returns the resource id tagged t as Discover of
	// scopes (the provider's default when empty) would find it, and false
	// when such a Discover could never find it (another region, a type it
	// does not search).
	DescribeChanged(id string, t tags.Set, scopes []string) (Classified, bool)
}

// DiscoverOptions scope a Discover.
type DiscoverOptions struct {
	// Scopes are where to search, in the provider's terms: Azure
	// subscription IDs, AWS regions. Empty means the provider's default
	// (Azure: its default subscription; AWS: its configured region).
	Scopes []string
	// Named adds to the scope, whatever their tags, the resources that a
	// group holds under a name prefix (Azure: resource groups; providers
	// without groups ignore it). OpenShift clusters upgraded from releases
	// that tagged only their resource group are found this way.
	Named []NameScope
}

// NameScope is a group's resources whose names start with a prefix.
type NameScope struct {
	// Group is the group's name (Azure: a resource group, compared
	// case-insensitively).
	Group string
	// NamePrefix is the prefix of the resource names (compared
	// case-insensitively); empty means every resource of the group.
	NamePrefix string
}

// Classified is a resource that Discover found, with all its tags.
type Classified struct {
	// ID identifies the resource across scopes: an ARM resource ID (Azure),
	// an ARN (AWS).
	ID string
	// Type is the resource type, lower-case, in the cloud's terms
	// ("microsoft.network/dnszones", "ec2:instance").
	Type string
	// Scope is the subscription or region the resource was found in.
	Scope string
	// Tags are the resource's tags, all of them.
	Tags tags.Set
	// Rules are the tag rules of this resource (its type may have a lower
	// tag limit or a shorter name limit than the cloud's Rules).
	Rules tags.Rules
}

// Discovery is the result of a Discover.
type Discovery struct {
	// Resources are sorted by CanonicalID; a resource that carries several
	// of the classifiers appears once.
	Resources []Classified
	// Failed lists the scopes that could not be searched and why;
	// everything in Resources is complete and usable.
	Failed []ScopeError
	// Calls is the number of cloud requests the discovery took.
	Calls int
}

// TagWrite is one tag patch that applies alike to several resources.
type TagWrite struct {
	// IDs are the resources (Classified.ID) to patch.
	IDs []string
	// Patch sets and deletes the named tags only.
	Patch tags.Patch
	// Expect holds, for names in Patch.Delete, the value the caller saw:
	// where the cloud supports it the delete removes the tag only if it
	// still has that value. Names absent from Expect are deleted whatever
	// their value.
	Expect tags.Set
	// Fresh reads each resource before writing it (the node sync's
	// write): only the named tags whose value differs from the read are
	// written, a deletion only where the tag still has the value read
	// (Expect is not used), nothing when nothing differs, and the result
	// carries the resource's tags after the write (WriteResult.Tags).
	Fresh bool
}

// WriteResult is the outcome of a TagWrite for one resource.
type WriteResult struct {
	// ID is the resource.
	ID string
	// Pending is set only on the report WriteTags makes before it sends
	// the first request for the resource (Err is nil then); results are
	// never pending.
	Pending bool
	// Err is nil when the patch was applied; errors.Is reports the cloud
	// error kinds of this package (ErrThrottled, ErrForbidden, ErrNotFound,
	// ErrTooManyTags).
	Err error
	// Tags are the resource's tags after a Fresh write (nil otherwise,
	// and after a failed one).
	Tags tags.Set
	// Overridden holds the names the write set that the cloud's answer to
	// it carried with another value, with that value: something on the
	// write's own path changed the request (Azure Policy's modify or
	// append effect). Nil when the answer carried the values written, or
	// no tags.
	Overridden tags.Set
}

// ResultStream hands a WriteTags' reports to its caller's function one at
// a time and remembers the first error it returned, after which the
// provider starts no further request. Providers share it; it is safe for
// concurrent use.
type ResultStream struct {
	mu   sync.Mutex
	each func(WriteResult) error
	stop error
}

// NewResultStream returns the stream of each (nil: reports go nowhere).
func NewResultStream(each func(WriteResult) error) *ResultStream {
	return &ResultStream{each: each}
}

// Start reports that the first request for id is about to be sent; a
// non-nil error (the stream's stop error) means it must not be.
func (s *ResultStream) Start(id string) error {
	return s.report(WriteResult{ID: id, Pending: true})
}

// Done reports a resource's result. It returns the stream's stop error,
// if any.
func (s *ResultStream) Done(r WriteResult) error {
	return s.report(r)
}

// report calls each unless the stream has stopped.
func (s *ResultStream) report(r WriteResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return s.stop
	}
	if s.each == nil {
		return nil
	}
	if err := s.each(r); err != nil {
		s.stop = fmt.Errorf("writes stopped by the caller after %s: %w", r.ID, err)
	}
	return s.stop
}

// Stopped returns the stream's stop error, or nil while it runs.
func (s *ResultStream) Stopped() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stop
}

// NotStarted is the error of a resource not sent because the stream
// stopped with err.
func NotStarted(id string, err error) error {
	return fmt.Errorf("tags of %s not written: %w", id, err)
}
