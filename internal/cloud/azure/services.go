package azure

import (
	"context"
	"strings"

	"github.com/tagsync/tagsync/internal/cloud"
)

// ServiceTag is the tag the Azure cloud provider (cloud-provider-azure,
// pkg/consts ServiceTagKey) writes on the public IPs it makes for Services
// of type LoadBalancer: namespace/name, several comma-joined when Services
// share the IP.
const ServiceTag = "k8s-azure-service"

// typePublicIP is a public IP's Resource Graph type.
const typePublicIP = "microsoft.network/publicipaddresses"

// servicesQuery lists every public IP that carries ServiceTag.
const servicesQuery = "resources | where type =~ '" + typePublicIP + "' | mv-expand bagexpansion=array tag = tags" +
	" | where tostring(tag[0]) =~ '" + ServiceTag + "' | project id, name, type, subscriptionId, resourceGroup, tags"

// ServiceResources finds the public IPs the Azure cloud provider made for
// the Services (namespace/name) with one Resource Graph query (pages of up
// to 1000 rows) over the default subscription (without one, the search is
// reported failed in ServiceResources.Failed): each IP whose ServiceTag
// names one Service alone is that Service's; one that names several is
// shared by each; an IP's tags are as the search read them. The search
// index lags: an IP made a moment ago may not be found yet, and its tags
// may be those of a few seconds ago. Failures are reported per subscription as Discover reports
// them; the error is for a search that could not run.
func (p *Provider) ServiceResources(ctx context.Context, services []string) (cloud.ServiceResources, error) {
	out := cloud.ServiceResources{Own: map[string][]cloud.Classified{}, Shared: map[string][]string{}}
	if len(services) == 0 {
		return out, nil
	}
	subs, err := p.discoveryScopes(nil)
	if err != nil {
		out.Failed = []cloud.ScopeError{{Scope: "the public IPs of Services", Err: err}}
		return out, nil
	}
	rows, failed, calls, err := p.runQueries(ctx, []string{servicesQuery}, subs)
	out.Failed, out.Calls = failed, calls
	if err != nil {
		return out, err
	}
	wanted := map[string]bool{}
	for _, s := range services {
		wanted[s] = true
	}
	seen := map[string]bool{}
	for _, row := range rows {
		id, _ := row["id"].(string)
		typ, _ := row["type"].(string)
		sub, _ := row["subscriptionId"].(string)
		if id == "" || seen[cloud.CanonicalID(id)] {
			continue
		}
		seen[cloud.CanonicalID(id)] = true
		t := rowTags(row["tags"])
		v, _ := t.Get(p.Rules().NameCase(), ServiceTag)
		names := strings.Split(v, ",")
		for _, n := range names {
			n = strings.TrimSpace(n)
			switch {
			case !wanted[n]:
			case len(names) == 1:
				out.Own[n] = append(out.Own[n], cloud.Classified{ID: id, Type: strings.ToLower(typ), Scope: sub, Tags: t, Rules: RulesFor(typ)})
			default:
				out.Shared[n] = append(out.Shared[n], id)
			}
		}
	}
	return out, nil
}
