package cloud

import "github.com/tagsync/tagsync/internal/tags"

// Classifier is a tag that puts a resource in scope of a metadata object:
// the resource carries the tag Name with exactly the value Value. Names
// match as the cloud compares them (Rules.NameCase); values exactly.
type Classifier struct {
	// Name is the tag name.
	Name string
	// Value is the tag value, matched exactly.
	Value string
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
}

// WriteResult is the outcome of a TagWrite for one resource.
type WriteResult struct {
	// ID is the resource.
	ID string
	// Err is nil when the patch was applied; errors.Is reports the cloud
	// error kinds of this package (ErrThrottled, ErrForbidden, ErrNotFound,
	// ErrTooManyTags).
	Err error
}
