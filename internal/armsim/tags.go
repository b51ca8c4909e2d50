package armsim

import (
	"net/http"
	"strings"
)

// tagTarget is something the Tags API can address: a subscription, a
// resource group, a resource or a Uniform instance (read-only: its tags
// never change).
type tagTarget struct {
	typ      string
	tags     *tagSet
	etag     *int64
	sub, loc string
	readOnly bool
	obj      *object
}

// resolveScope finds the target of a scope path; the caller holds the lock.
func (st *store) resolveScope(scope string) (*tagTarget, *Error) {
	segs := splitPath(scope)
	if len(segs) < 2 || !strings.EqualFold(segs[0], "subscriptions") {
		return nil, errBadRequest("InvalidScope", "The scope '%s' is not a subscription, resource group or resource.", scope)
	}
	sub, ok := st.subs[strings.ToLower(segs[1])]
	if !ok {
		return nil, errSubscriptionNotFound(segs[1])
	}
	if len(segs) == 2 {
		return &tagTarget{typ: "Microsoft.Resources/subscriptions", tags: &sub.tags, etag: &sub.etag, sub: sub.id}, nil
	}
	if len(segs) < 4 || !strings.EqualFold(segs[2], "resourceGroups") {
		return nil, errBadRequest("InvalidScope", "The scope '%s' is not a subscription, resource group or resource.", scope)
	}
	g, e := st.lookupGroup(segs[1], segs[3])
	if e != nil {
		return nil, e
	}
	if len(segs) == 4 {
		return &tagTarget{typ: TypeResourceGroup, tags: &g.tags, etag: &g.etag, sub: g.sub, loc: g.location}, nil
	}
	return st.resolveResourceScope(segs)
}

// resolveResourceScope finds a resource or Uniform instance by path.
func (st *store) resolveResourceScope(segs []string) (*tagTarget, *Error) {
	id := "/" + strings.Join(segs, "/")
	if o, ok := st.objectByID(id); ok {
		return &tagTarget{typ: o.typ, tags: &o.tags, etag: &o.etag, sub: o.sub, loc: o.location, obj: o}, nil
	}
	if n := len(segs); n == 10 && strings.EqualFold(segs[n-2], "virtualMachines") {
		if o, ok := st.objectByID("/" + strings.Join(segs[:8], "/")); ok && o.typ == TypeScaleSet {
			if in := o.findInstance(segs[9]); in != nil {
				empty := tagSet{}
				return &tagTarget{typ: TypeScaleSetVM, tags: &empty, etag: &in.etag, sub: o.sub, loc: o.location, readOnly: true}, nil
			}
		}
	}
	typ, name := typeAndName(segs)
	return nil, errResourceNotFound(typ, name, segs[3])
}

// typeAndName recovers "ns/type" and "name" from a resource path, for messages.
func typeAndName(segs []string) (string, string) {
	if len(segs) < 8 {
		return "", strings.Join(segs[4:], "/")
	}
	rest := segs[5:]
	types, names := []string{rest[0]}, []string{}
	for i := 1; i+1 < len(rest); i += 2 {
		types = append(types, rest[i])
		names = append(names, rest[i+1])
	}
	return strings.Join(types, "/"), strings.Join(names, "/")
}

// tagsResource is the Tags API's wire shape.
type tagsResource struct {
	ID         string `json:"id,omitempty"`
	Name       string `json:"name,omitempty"`
	Type       string `json:"type,omitempty"`
	Properties struct {
		Tags map[string]string `json:"tags"`
	} `json:"properties"`
}

// tagsPatchResource is the body of a Tags PATCH.
type tagsPatchResource struct {
	Operation  string `json:"operation"`
	Properties *struct {
		Tags map[string]string `json:"tags"`
	} `json:"properties"`
}

func renderTags(scope string, t tagSet) tagsResource {
	var tr tagsResource
	tr.ID = scope + "/providers/Microsoft.Resources/tags/default"
	tr.Name, tr.Type = "default", "Microsoft.Resources/tags"
	tr.Properties.Tags = t.public()
	return tr
}

func (s *Server) handleTagsGet(w http.ResponseWriter, _ *http.Request, rt *route) {
	s.st.mu.RLock()
	t, e := s.st.resolveScope(rt.scope)
	var body tagsResource
	if e == nil {
		body = renderTags(rt.scope, *t.tags)
	}
	s.st.mu.RUnlock()
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// handleTagsPut replaces all tags at the scope.
func (s *Server) handleTagsPut(w http.ResponseWriter, r *http.Request, rt *route) {
	var body tagsResource
	if e := readJSON(r, &body); e != nil {
		writeError(w, e)
		return
	}
	written := body.Properties.Tags
	s.writeTags(w, r, rt, func(tagSet) (tagSet, map[string]string, *Error) {
		return tagSetFrom(written), written, nil
	})
}

// handleTagsPatch merges, replaces or selectively deletes tags.
func (s *Server) handleTagsPatch(w http.ResponseWriter, r *http.Request, rt *route) {
	var body tagsPatchResource
	if e := readJSON(r, &body); e != nil {
		writeError(w, e)
		return
	}
	if body.Properties == nil {
		writeError(w, errBadRequest("InvalidRequestContent", "The request content must contain 'properties'."))
		return
	}
	written := body.Properties.Tags
	var apply func(tagSet) (tagSet, map[string]string, *Error)
	switch strings.ToLower(body.Operation) {
	case "merge":
		apply = func(cur tagSet) (tagSet, map[string]string, *Error) { return mergeTags(cur, written), written, nil }
	case "replace":
		apply = func(tagSet) (tagSet, map[string]string, *Error) { return tagSetFrom(written), written, nil }
	case "delete":
		apply = func(cur tagSet) (tagSet, map[string]string, *Error) { return deleteTags(cur, written), nil, nil }
	default:
		writeError(w, errBadRequest("InvalidTagOperation",
			"The tag operation '%s' is not supported; use 'Merge', 'Replace' or 'Delete'.", body.Operation))
		return
	}
	s.writeTags(w, r, rt, apply)
}

// handleTagsDelete removes all tags at the scope.
func (s *Server) handleTagsDelete(w http.ResponseWriter, r *http.Request, rt *route) {
	s.writeTags(w, r, rt, func(tagSet) (tagSet, map[string]string, *Error) { return tagSet{}, nil, nil })
}

// mergeTags writes each name of add into a copy of cur.
func mergeTags(cur tagSet, add map[string]string) tagSet {
	out := cur.clone()
	for _, k := range sortedKeys(add) {
		out.set(k, add[k])
	}
	return out
}

// deleteTags removes from a copy of cur each name of del whose value is
// empty or equal to the current value.
func deleteTags(cur tagSet, del map[string]string) tagSet {
	out := cur.clone()
	for name, v := range del {
		if old, ok := out.get(name); ok && (v == "" || v == old) {
			out.del(name)
		}
	}
	return out
}

// writeTags applies a tag write at the route's scope and answers it: 200
// at once, or 202 with polling headers when LROPolls > 0.
func (s *Server) writeTags(w http.ResponseWriter, r *http.Request, rt *route, apply func(tagSet) (tagSet, map[string]string, *Error)) {
	s.st.mu.Lock()
	t, e := s.st.resolveScope(rt.scope)
	var out tagSet
	if e == nil {
		out, e = s.applyTagWrite(rt.scope, t, apply)
	}
	s.st.mu.Unlock()
	if e != nil {
		writeError(w, e)
		return
	}
	if s.opts.LROPolls == 0 {
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusOK)
			return
		}
		writeJSON(w, http.StatusOK, renderTags(rt.scope, out))
		return
	}
	var done func()
	if t.obj != nil {
		done = s.finisher(t.obj)
	}
	s.startLRO(w, r, t.sub, "Microsoft.Resources", t.loc, done, s.tagsResult(r.Method, rt.scope))
	w.WriteHeader(http.StatusAccepted)
}

// applyTagWrite computes, validates and stores the new tag set; the caller
// holds the write lock.
func (s *Server) applyTagWrite(scope string, t *tagTarget, apply func(tagSet) (tagSet, map[string]string, *Error)) (tagSet, *Error) {
	next, written, e := apply(*t.tags)
	if e == nil {
		e = checkWrite(t.typ, *t.tags, next, written)
	}
	if e != nil {
		return nil, e
	}
	if t.readOnly {
		return *t.tags, nil
	}
	next = s.applyPolicies(scope, next)
	s.retagged(t.tags, *t.tags)
	*t.tags = next
	*t.etag++
	if t.obj != nil && s.opts.LROPolls > 0 {
		t.obj.provisioning = "Updating"
	}
	return next, nil
}

// tagsResult is the final answer of a Tags LRO's Location URL.
func (s *Server) tagsResult(method, scope string) func(*http.Request) (int, any) {
	return func(*http.Request) (int, any) {
		if method == http.MethodDelete {
			return http.StatusNoContent, nil
		}
		s.st.mu.RLock()
		defer s.st.mu.RUnlock()
		t, e := s.st.resolveScope(scope)
		if e != nil {
			return e.Status, errorBodyOf(e)
		}
		return http.StatusOK, renderTags(scope, *t.tags)
	}
}

func errorBodyOf(e *Error) errorBody {
	var b errorBody
	b.Error.Code, b.Error.Message = e.Code, e.Message
	return b
}
