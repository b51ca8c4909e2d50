package azure

import (
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tagsync/tagsync/internal/cloud"
)

// providerName is the provider label of the metrics and Provider.Name.
const providerName = "azure"

// metricsPolicy is a per-retry pipeline policy that counts every attempt.
type metricsPolicy struct{ m *cloud.RequestMetrics }

// Do implements policy.Policy.
func (p metricsPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	op := operationName(raw.Method, raw.URL.Path)
	start := time.Now()
	resp, err := req.Next()
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	if err != nil {
		status = 0
	}
	p.m.Observe(op, status, status == http.StatusTooManyRequests, time.Since(start))
	return resp, err
}

// computeTypes names the compute collections by their lower-cased type path
// after providers/Microsoft.Compute.
var computeTypes = map[string]string{
	"virtualmachines":                         "VirtualMachines",
	"virtualmachinescalesets":                 "VirtualMachineScaleSets",
	"virtualmachinescalesets/virtualmachines": "VirtualMachineScaleSetVMs",
}

// itemVerbs names single-resource operations by HTTP method.
var itemVerbs = map[string]string{
	http.MethodGet: "Get", http.MethodHead: "Get", http.MethodPatch: "Update",
	http.MethodPut: "CreateOrUpdate", http.MethodDelete: "Delete", http.MethodPost: "Action",
}

// tagsVerbs names Tags API operations at a scope.
var tagsVerbs = map[string]string{
	http.MethodGet: "Tags.GetAtScope", http.MethodPut: "Tags.CreateOrUpdateAtScope",
	http.MethodPatch: "Tags.UpdateAtScope", http.MethodDelete: "Tags.DeleteAtScope",
}

// operationName derives a low-cardinality operation name, in the SDK's
// Client.Method style, from a request's method and path: never a resource
// name. Examples: "VirtualMachineScaleSets.List", "Tags.UpdateAtScope",
// "LRO.Poll".
func operationName(method, path string) string {
	segs := strings.Split(strings.ToLower(strings.Trim(path, "/")), "/")
	n := len(segs)
	if n >= 4 && strings.Join(segs[n-4:], "/") == "providers/microsoft.resources/tags/default" {
		if v, ok := tagsVerbs[method]; ok {
			return v
		}
	}
	prov := -1
	for i, s := range segs {
		switch s {
		case "operations", "operationresults", "operationstatuses", "asyncoperations":
			if prov >= 0 && method == http.MethodGet {
				return "LRO.Poll"
			}
		case "providers":
			prov = i
		}
	}
	if prov < 0 {
		return armBaseOperation(method, segs)
	}
	return providerOperation(method, segs, prov)
}

// armBaseOperation names requests outside a resource provider.
func armBaseOperation(method string, segs []string) string {
	switch {
	case len(segs) == 3 && segs[0] == "subscriptions" && segs[2] == "resources":
		return "Resources.List"
	case len(segs) == 3 && segs[2] == "resourcegroups":
		return "ResourceGroups.List"
	case len(segs) == 4 && segs[2] == "resourcegroups":
		return "ResourceGroups." + itemVerb(method)
	case len(segs) == 5 && segs[4] == "resources":
		return "Resources.ListByResourceGroup"
	}
	return "ARM." + method
}

// providerOperation names requests under providers/{namespace}/...
func providerOperation(method string, segs []string, prov int) string {
	if prov+1 >= len(segs) {
		return "ARM." + method
	}
	ns, rest := segs[prov+1], segs[prov+2:]
	if ns == "microsoft.resourcegraph" {
		return "ResourceGraph.Resources"
	}
	// rest alternates type, name, type, name...; an odd length is a list.
	var types []string
	for i := 0; i < len(rest); i += 2 {
		types = append(types, rest[i])
	}
	typ := strings.Join(types, "/")
	name, ok := computeTypes[typ]
	if ns != "microsoft.compute" || !ok {
		name = ns + "/" + typ
	}
	if len(rest)%2 == 1 {
		if method != http.MethodGet {
			return name + "." + itemVerb(method)
		}
		if prov == 2 { // /subscriptions/{s}/providers/...: subscription-wide
			return name + ".ListAll"
		}
		return name + ".List"
	}
	return name + "." + itemVerb(method)
}

// itemVerb names a single-resource operation.
func itemVerb(method string) string {
	if v, ok := itemVerbs[method]; ok {
		return v
	}
	return method
}
