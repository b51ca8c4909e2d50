package armsimtest

import (
	"fmt"
	"strings"

	"github.com/tagsync/tagsync/internal/armsim"
)

// ClusterTypes are the resource types a Kubernetes cluster owns in Azure
// besides its VMs and scale sets, as ARM spells them: disks, network
// interfaces, public IPs, load balancers, network security groups, route
// tables, virtual networks, storage accounts (tag names of at most 128
// characters), public and private DNS zones (at most 15 tags). Treat it as
// read-only.
var ClusterTypes = []string{
	armsim.TypeDisk,
	armsim.TypeNetworkInterface,
	armsim.TypePublicIP,
	armsim.TypeLoadBalancer,
	armsim.TypeNetworkSecurityGroup,
	armsim.TypeRouteTable,
	armsim.TypeVirtualNetwork,
	armsim.TypeStorageAccount,
	armsim.TypeDNSZone,
	armsim.TypePrivateDNSZone,
}

// ClusterEstate describes the resources of one cluster (an "infra") in one
// resource group of each of several subscriptions: PerType resources of
// each of Types, every one and the group itself carrying Tags (e.g. the
// cluster's classifier tag). It is plain data: State builds the
// armsim.State, Seed loads it, and the ID methods name what it creates
// without asking the server. 10,000 resources (PerType 200, the 10
// ClusterTypes, 5 subscriptions) load in well under a second.
type ClusterEstate struct {
	// Infra is the cluster's infrastructure name; every resource name
	// starts with it (storage accounts: its letters and digits).
	Infra string
	// ResourceGroup is the group in each subscription; default "rg-" + Infra.
	ResourceGroup string
	// Location of the group and its resources; default armsim's.
	Location string
	// Subscriptions hold one group each; default SubscriptionID.
	Subscriptions []string
	// PerType is the number of resources of each type in each
	// subscription; default 1.
	PerType int
	// Types are the resource types (top-level, "Namespace/type"); default
	// ClusterTypes.
	Types []string
	// Tags are set on every resource and on the group.
	Tags map[string]string
}

// withDefaults fills the zero fields.
func (c ClusterEstate) withDefaults() ClusterEstate {
	if c.ResourceGroup == "" {
		c.ResourceGroup = "rg-" + c.Infra
	}
	if len(c.Subscriptions) == 0 {
		c.Subscriptions = []string{SubscriptionID}
	}
	if c.PerType <= 0 {
		c.PerType = 1
	}
	if len(c.Types) == 0 {
		c.Types = ClusterTypes
	}
	return c
}

// State is the estate as an armsim.State, for Server.Add or Server.Load.
func (c ClusterEstate) State() armsim.State {
	c = c.withDefaults()
	var st armsim.State
	for _, sub := range c.Subscriptions {
		rg := armsim.ResourceGroup{Name: c.ResourceGroup, Location: c.Location, Tags: clone(c.Tags)}
		rg.Resources = make([]armsim.Resource, 0, len(c.Types)*c.PerType)
		for _, typ := range c.Types {
			for i := range c.PerType {
				r := armsim.Resource{Type: typ, Name: c.Name(typ, i), Tags: clone(c.Tags)}
				if strings.EqualFold(typ, armsim.TypeStorageAccount) {
					r.Kind = "StorageV2"
				}
				rg.Resources = append(rg.Resources, r)
			}
		}
		st.Subscriptions = append(st.Subscriptions, armsim.Subscription{ID: sub, ResourceGroups: []armsim.ResourceGroup{rg}})
	}
	return st
}

// Seed adds the estate to s (groups that exist keep their settings and
// get the resources).
func (c ClusterEstate) Seed(s *armsim.Server) error { return s.Add(c.State()) }

// Name is the name of the i-th resource of type typ (from 0): e.g.
// "<infra>-disk-0007", "<infra>-0007.example.com" for a DNS zone,
// "st<infra letters and digits>0007" for a storage account (at most 24
// characters, as Azure requires).
func (c ClusterEstate) Name(typ string, i int) string {
	c = c.withDefaults()
	n := fmt.Sprintf("%0*d", max(4, len(fmt.Sprint(c.PerType-1))), i)
	switch strings.ToLower(typ) {
	case strings.ToLower(armsim.TypeStorageAccount):
		infra := alnum(c.Infra)
		return "st" + infra[:min(len(infra), max(0, 22-len(n)))] + n
	case strings.ToLower(armsim.TypeDNSZone):
		return c.Infra + "-" + n + ".example.com"
	case strings.ToLower(armsim.TypePrivateDNSZone):
		return c.Infra + "-" + n + ".privatelink.example.internal"
	}
	short := map[string]string{
		"microsoft.compute/disks":                 "disk",
		"microsoft.network/networkinterfaces":     "nic",
		"microsoft.network/publicipaddresses":     "pip",
		"microsoft.network/loadbalancers":         "lb",
		"microsoft.network/networksecuritygroups": "nsg",
		"microsoft.network/routetables":           "rt",
		"microsoft.network/virtualnetworks":       "vnet",
	}[strings.ToLower(typ)]
	if short == "" {
		short = strings.ToLower(typ[strings.LastIndex(typ, "/")+1:])
	}
	return c.Infra + "-" + short + "-" + n
}

// ID is the resource ID of the i-th resource of type typ in subscription
// sub.
func (c ClusterEstate) ID(sub, typ string, i int) string {
	c = c.withDefaults()
	ns, t, _ := strings.Cut(typ, "/")
	return c.GroupID(sub) + "/providers/" + ns + "/" + t + "/" + c.Name(typ, i)
}

// GroupID is the ID of the estate's resource group in subscription sub.
func (c ClusterEstate) GroupID(sub string) string {
	return "/subscriptions/" + sub + "/resourceGroups/" + c.withDefaults().ResourceGroup
}

// ResourceIDs are the IDs of every resource of the estate (not the
// groups), by subscription, type and index.
func (c ClusterEstate) ResourceIDs() []string {
	c = c.withDefaults()
	out := make([]string, 0, len(c.Subscriptions)*len(c.Types)*c.PerType)
	for _, sub := range c.Subscriptions {
		for _, typ := range c.Types {
			for i := range c.PerType {
				out = append(out, c.ID(sub, typ, i))
			}
		}
	}
	return out
}

// GroupIDs are the IDs of the estate's resource groups, one per
// subscription.
func (c ClusterEstate) GroupIDs() []string {
	c = c.withDefaults()
	out := make([]string, 0, len(c.Subscriptions))
	for _, sub := range c.Subscriptions {
		out = append(out, c.GroupID(sub))
	}
	return out
}

// alnum keeps the lower-cased letters and digits of s.
func alnum(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// clone copies a tag map (nil stays nil).
func clone(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
