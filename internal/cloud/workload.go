package cloud

import (
	"context"

	"github.com/tagsync/tagsync/internal/tags"
)

// WorkloadProvider is a cloud whose resources the workload tags controller
// (WorkloadTagPolicy) tags: resources it knows by ID from Kubernetes (a
// PersistentVolume's disk), read in bulk and written key by key.
type WorkloadProvider interface {
	Provider
	// ReadTags reads the tags of the resources ids name, in bulk (Azure:
	// Resource Graph pages of the resource types and groups the IDs name,
	// then one Tags API read per ID the search index does not show yet;
	// AWS: DescribeVolumes per region with at most 200 IDs per filter).
	// IDs also in fresh (a cloud change named them) are read past any
	// search index (Azure: the Tags API). A scope that cannot be read is
	// reported in Reading.Failed and its IDs in Reading.Unread; the error
	// is for a read that could not run at all.
	ReadTags(ctx context.Context, ids, fresh []string) (Reading, error)
	// CreatorKeys are the keys the creators of workloads' resources (CSI
	// drivers, the cloud's Kubernetes cloud provider) write and own: a
	// policy may not write them.
	CreatorKeys() []tags.PlatformKey
	// TagWriter writes the resources' tags; the workload controller's
	// writes are not Fresh (ReadTags just read them).
	TagWriter
}

// Reading is what ReadTags found.
type Reading struct {
	// Resources are the resources found, with all their tags and their
	// rules; ID is as the caller gave it.
	Resources []Classified
	// Missing are the IDs the cloud says do not exist (yet), as given.
	Missing []string
	// Unread are the IDs that could not be read (their scope is in
	// Failed), as given.
	Unread []string
	// Failed lists the scopes that could not be read and why.
	Failed []ScopeError
	// Calls is the number of cloud requests the read took.
	Calls int
}

// ServiceFinder is a WorkloadProvider that also finds the resources the
// cloud's Kubernetes cloud provider made for Services of type
// LoadBalancer (Azure: public IPs).
type ServiceFinder interface {
	WorkloadProvider
	// ServiceResources finds, in bulk, the resources made for the
	// Services (namespace/name): those of one Service alone, and those
	// several share.
	ServiceResources(ctx context.Context, services []string) (ServiceResources, error)
}

// ServiceResources is what ServiceResources found, by Service
// (namespace/name).
type ServiceResources struct {
	// Own are, per Service, the resources made for it alone, with all
	// their tags as the search read them.
	Own map[string][]Classified
	// Shared are, per Service, the IDs of resources it shares with other
	// Services: reported, never tagged for one workload.
	Shared map[string][]string
	// Failed lists the scopes that could not be searched.
	Failed []ScopeError
	// Calls is the number of cloud requests the search took.
	Calls int
}

// IngressFinder is a WorkloadProvider that also finds the load balancers
// an ingress controller made for Ingresses (AWS: the AWS Load Balancer
// Controller's Application Load Balancers).
type IngressFinder interface {
	WorkloadProvider
	// IngressResources finds, in bulk, the load balancers made for the
	// ingress stacks (the controller's name of an Ingress, or of the
	// IngressGroup several share), by stack.
	IngressResources(ctx context.Context, stacks []string) (ServiceResources, error)
}
