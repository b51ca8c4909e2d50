package armsim

import (
	"net/http"
	"strings"
)

// routeKind says which pipeline a request takes.
type routeKind int

const (
	kindARM      routeKind = iota // auth, throttling, faults, counting
	kindIdentity                  // token service: faults and counting only
	kindAdmin                     // out of band: nothing
)

// handlerFunc serves one matched operation.
type handlerFunc func(s *Server, w http.ResponseWriter, r *http.Request, rt *route)

// route is a request matched to an operation. ARM paths are matched
// case-insensitively; segs keeps the caller's casing.
type route struct {
	op    string
	kind  routeKind
	h     handlerFunc
	segs  []string // path segments as sent
	low   []string // lower-cased segments
	sub   string   // subscription in the path, if any
	scope string   // Tags API scope
}

// methods maps an HTTP method to an operation.
type methods map[string]operation

// operation is an operation's name (as ARM's SDKs name it) and handler.
type operation struct {
	op string
	h  handlerFunc
}

// splitPath splits a URL path into non-empty segments.
func splitPath(p string) []string {
	raw := strings.Split(p, "/")
	segs := raw[:0]
	for _, s := range raw {
		if s != "" {
			segs = append(segs, s)
		}
	}
	return segs
}

// match resolves a request to a route. It never returns nil: unknown paths
// get a route whose handler answers 404.
func (s *Server) match(r *http.Request) *route {
	segs := splitPath(r.URL.Path)
	rt := &route{segs: segs, low: make([]string, len(segs))}
	for i, v := range segs {
		rt.low[i] = strings.ToLower(v)
	}
	var m methods
	switch {
	case len(rt.low) > 0 && rt.low[0] == "_admin":
		rt.kind = kindAdmin
		m = adminRoutes(rt)
	case identityRoute(rt) != nil:
		rt.kind = kindIdentity
		m = identityRoute(rt)
	case rt.is("providers", "microsoft.resourcegraph", "resources"):
		m = methods{http.MethodPost: {opGraph, (*Server).handleGraph}}
	case len(rt.low) >= 2 && rt.low[0] == "subscriptions":
		rt.sub = segs[1]
		m = subscriptionRoutes(rt)
	}
	return rt.pick(r.Method, m)
}

// pick selects the handler for method, or a 404/405 answer.
func (rt *route) pick(method string, m methods) *route {
	if m == nil {
		rt.op, rt.h = "Unknown", notFound
		return rt
	}
	e, ok := m[method]
	if !ok {
		rt.op, rt.h = "Unknown", methodNotAllowed
		return rt
	}
	rt.op, rt.h = e.op, e.h
	return rt
}

// is reports whether the lower-cased path is exactly parts ("*" matches any).
func (rt *route) is(parts ...string) bool {
	if len(rt.low) != len(parts) {
		return false
	}
	for i, p := range parts {
		if p != "*" && rt.low[i] != p {
			return false
		}
	}
	return true
}

// hasSuffix reports whether the lower-cased path ends with parts.
func (rt *route) hasSuffix(parts ...string) bool {
	n := len(rt.low) - len(parts)
	if n < 0 {
		return false
	}
	for i, p := range parts {
		if rt.low[n+i] != p {
			return false
		}
	}
	return true
}

func notFound(_ *Server, w http.ResponseWriter, r *http.Request, _ *route) {
	writeError(w, newError(http.StatusNotFound, "NotFound",
		"No HTTP resource was found that matches the request URI '%s'.", r.URL.Path))
}

func methodNotAllowed(_ *Server, w http.ResponseWriter, r *http.Request, _ *route) {
	writeError(w, newError(http.StatusMethodNotAllowed, "MethodNotAllowed",
		"The requested resource does not support http method '%s'.", r.Method))
}

// subscriptionRoutes matches paths under /subscriptions/{sub}.
func subscriptionRoutes(rt *route) methods {
	if rt.hasSuffix("providers", "microsoft.resources", "tags", "default") {
		rt.scope = "/" + strings.Join(rt.segs[:len(rt.segs)-4], "/")
		return tagsRoutes
	}
	switch {
	case rt.is("subscriptions", "*", "resources"):
		return get("Resources.List", (*Server).handleResourcesList)
	case rt.is("subscriptions", "*", "providers", "microsoft.authorization", "permissions"):
		return get("Permissions.ListForSubscription", (*Server).handlePermissions)
	case rt.is("subscriptions", "*", "resourcegroups"):
		return get("ResourceGroups.List", (*Server).handleGroupList)
	case rt.is("subscriptions", "*", "resourcegroups", "*"):
		return get("ResourceGroups.Get", (*Server).handleGroupGet)
	case rt.is("subscriptions", "*", "resourcegroups", "*", "resources"):
		return get("Resources.ListByResourceGroup", (*Server).handleResourcesList)
	case rt.is("subscriptions", "*", "providers", "microsoft.compute", "virtualmachines"):
		return get("VirtualMachines.ListAll", (*Server).handleVMList)
	case rt.is("subscriptions", "*", "providers", "microsoft.compute", "virtualmachinescalesets"):
		return get("VirtualMachineScaleSets.ListAll", (*Server).handleVMSSList)
	case rt.is("subscriptions", "*", "providers", "*", "locations", "*", "operations", "*"):
		return get("Operations.Status", (*Server).handleOperationStatus)
	case rt.is("subscriptions", "*", "providers", "*", "locations", "*", "operationresults", "*"):
		return get("Operations.Result", (*Server).handleOperationResult)
	case len(rt.low) >= 6 && rt.low[2] == "resourcegroups" && rt.low[4] == "providers":
		return providerRoutes(rt)
	case len(rt.low) >= 5 && rt.low[2] == "providers" && rt.low[3] == "microsoft.eventgrid":
		return eventGridRoutes(rt)
	}
	return nil
}

// providerRoutes matches /subscriptions/{sub}/resourceGroups/{rg}/providers/...
func providerRoutes(rt *route) methods {
	if rt.low[5] == "microsoft.compute" {
		if m := computeRoutes(rt); m != nil {
			return m
		}
	}
	if len(rt.low) >= 8 && len(rt.low)%2 == 0 {
		return get("Resources.GetByID", (*Server).handleGenericGet)
	}
	return nil
}

// computeRoutes matches the Microsoft.Compute paths armsim implements.
func computeRoutes(rt *route) methods {
	base := []string{"subscriptions", "*", "resourcegroups", "*", "providers", "microsoft.compute"}
	at := func(tail ...string) bool { return rt.is(append(append([]string{}, base...), tail...)...) }
	switch {
	case at("virtualmachines"):
		return get("VirtualMachines.List", (*Server).handleVMList)
	case at("virtualmachines", "*"):
		return getAndUpdate("VirtualMachines", (*Server).handleVMGet, http.MethodPatch, (*Server).handleVMUpdate)
	case at("virtualmachinescalesets"):
		return get("VirtualMachineScaleSets.List", (*Server).handleVMSSList)
	case at("virtualmachinescalesets", "*"):
		return getAndUpdate("VirtualMachineScaleSets", (*Server).handleVMSSGet, http.MethodPatch, (*Server).handleVMSSUpdate)
	case at("virtualmachinescalesets", "*", "virtualmachines"):
		return get("VirtualMachineScaleSetVMs.List", (*Server).handleInstanceList)
	case at("virtualmachinescalesets", "*", "virtualmachines", "*"):
		return getAndUpdate("VirtualMachineScaleSetVMs", (*Server).handleInstanceGet, http.MethodPut, (*Server).handleInstanceUpdate)
	}
	return nil
}

func get(op string, h handlerFunc) methods {
	return methods{http.MethodGet: {op, h}}
}

// getAndUpdate serves a resource of an ARM operation group: GET is
// {group}.Get, update (PATCH or PUT) {group}.Update.
func getAndUpdate(group string, get handlerFunc, update string, upd handlerFunc) methods {
	return methods{http.MethodGet: {group + ".Get", get}, update: {group + ".Update", upd}}
}

var tagsRoutes = methods{
	http.MethodGet:    {"Tags.GetAtScope", (*Server).handleTagsGet},
	http.MethodPut:    {"Tags.CreateOrUpdateAtScope", (*Server).handleTagsPut},
	http.MethodPatch:  {"Tags.UpdateAtScope", (*Server).handleTagsPatch},
	http.MethodDelete: {"Tags.DeleteAtScope", (*Server).handleTagsDelete},
}
