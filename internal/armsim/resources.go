package armsim

import (
	"net/http"
	"sort"
	"strings"
)

// renderGroup is a resource group's wire shape.
func renderGroup(g *group) any {
	m := map[string]any{
		"id": g.id, "name": g.name, "type": TypeResourceGroup, "location": g.location,
		"properties": map[string]any{"provisioningState": statusSucceeded},
	}
	if len(g.tags) > 0 {
		m["tags"] = g.tags.public()
	}
	return m
}

// renderGeneric is a resource as GET by ID returns it.
func renderGeneric(o *object) any {
	switch o.typ {
	case TypeVirtualMachine:
		return renderVM(o)
	case TypeScaleSet:
		return renderVMSS(o)
	}
	m := baseJSON(o)
	props := map[string]any{}
	for k, v := range o.props {
		props[k] = v
	}
	if _, ok := props["provisioningState"]; !ok {
		props["provisioningState"] = statusSucceeded
	}
	m["properties"] = props
	return m
}

// renderListItem is a resource as Resources - List returns it.
func renderListItem(withTags bool) func(*object) any {
	return func(o *object) any {
		m := baseJSON(o)
		if !withTags {
			delete(m, "tags")
		}
		return m
	}
}

func (s *Server) handleGroupGet(w http.ResponseWriter, _ *http.Request, rt *route) {
	s.serveRead(w, func() (any, *Error) {
		g, e := s.st.lookupGroup(rt.sub, rt.segs[3])
		if e != nil {
			return nil, e
		}
		return renderGroup(g), nil
	})
}

// handleGroupList lists a subscription's groups (one page: groups are few).
func (s *Server) handleGroupList(w http.ResponseWriter, _ *http.Request, rt *route) {
	s.st.mu.RLock()
	_, ok := s.st.subs[strings.ToLower(rt.sub)]
	var gs []*group
	for _, g := range s.st.groups {
		if strings.EqualFold(g.sub, rt.sub) {
			gs = append(gs, g)
		}
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].key < gs[j].key })
	page := listPage{Value: []any{}}
	for _, g := range gs {
		page.Value = append(page.Value, renderGroup(g))
	}
	s.st.mu.RUnlock()
	if !ok {
		writeError(w, errSubscriptionNotFound(rt.sub))
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// handleResourcesList is Resources - List for a subscription or a group.
// With a tag filter the items carry no tags, as in ARM.
func (s *Server) handleResourcesList(w http.ResponseWriter, r *http.Request, rt *route) {
	rf, e := parseResourceFilter(r.URL.Query().Get("$filter"))
	if e != nil {
		writeError(w, e)
		return
	}
	prefix, e := s.listScope(rt, len(rt.low) == 5, "/")
	if e != nil {
		writeError(w, e)
		return
	}
	s.listObjects(w, r, prefix, rf.match, renderListItem(!rf.hasTag))
}

// handleGenericGet is Resources - Get By ID for any top-level resource.
func (s *Server) handleGenericGet(w http.ResponseWriter, _ *http.Request, rt *route) {
	s.serveRead(w, func() (any, *Error) {
		if _, e := s.st.lookupGroup(rt.sub, rt.segs[3]); e != nil {
			return nil, e
		}
		o, ok := s.st.objectByID("/" + strings.Join(rt.segs, "/"))
		if !ok {
			typ, name := typeAndName(rt.segs)
			return nil, errResourceNotFound(typ, name, rt.segs[3])
		}
		return renderGeneric(o), nil
	})
}

// serveRead answers a GET: read runs under the state's read lock and
// returns the body to render (200) or the ARM error to answer.
func (s *Server) serveRead(w http.ResponseWriter, read func() (any, *Error)) {
	s.st.mu.RLock()
	body, e := read()
	s.st.mu.RUnlock()
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, body)
}
