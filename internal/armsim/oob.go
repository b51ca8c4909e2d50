package armsim

import (
	"errors"
	"strconv"
	"strings"
)

// errInstanceTags is returned when an out-of-band tag edit addresses a
// Uniform instance, which has no tags of its own.
var errInstanceTags = errors.New("armsim: Uniform scale-set instances carry no tags; tag the scale set")

// opTagsWrite is the operation of a write through the Tags API.
const opTagsWrite = "Microsoft.Resources/tags/write"

// editTags applies an out-of-band tag edit at a scope (subscription,
// group, resource): no auth, no throttling, no counting; ARM's tag rules
// still apply, the ETag changes and Event Grid subscriptions get a
// ResourceWriteSuccess. A portal edit's operation is the Tags API's write,
// a platform rewrite's the resource type's write.
func (s *Server) editTags(scope string, portal bool, apply func(cur tagSet) (tagSet, map[string]string)) error {
	scope = strings.TrimSuffix(scope, "/")
	typ, err := s.applyEdit(scope, apply)
	if err != nil {
		return err
	}
	op, uri := opTagsWrite, tagsEventID(scope)
	if !portal {
		op, uri = typ+"/write", scope
	}
	s.publishOutOfBand(EventResourceWriteSuccess, uri, op)
	return nil
}

// applyEdit stores an out-of-band tag edit and returns the scope's type.
func (s *Server) applyEdit(scope string, apply func(cur tagSet) (tagSet, map[string]string)) (string, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	t, e := s.st.resolveScope(scope)
	if e != nil {
		return "", e
	}
	if t.readOnly {
		return "", errInstanceTags
	}
	next, written := apply(*t.tags)
	if e := checkWrite(t.typ, *t.tags, next, written); e != nil {
		return "", e
	}
	s.retagged(t.tags, *t.tags)
	*t.tags = next
	*t.etag++
	return t.typ, nil
}

// SetTags is a portal-style edit: it sets the given tags (names matched
// case-insensitively, other tags kept) on the resource, group or
// subscription with ID id, and bumps its ETag.
func (s *Server) SetTags(id string, tags map[string]string) error {
	return s.editTags(id, true, func(cur tagSet) (tagSet, map[string]string) { return mergeTags(cur, tags), tags })
}

// DeleteTags removes the named tags (case-insensitively) and bumps the ETag.
func (s *Server) DeleteTags(id string, names ...string) error {
	return s.editTags(id, true, func(cur tagSet) (tagSet, map[string]string) {
		next := cur.clone()
		for _, n := range names {
			next.del(n)
		}
		return next, nil
	})
}

// ReplaceTags rewrites the whole tag set, as a platform reconcile (e.g. an
// AKS node-pool update) does, and bumps the ETag.
func (s *Server) ReplaceTags(id string, tags map[string]string) error {
	return s.editTags(id, false, func(tagSet) (tagSet, map[string]string) { return tagSetFrom(tags), tags })
}

// Tags returns a copy of the tags at id (empty for a Uniform instance).
func (s *Server) Tags(id string) (map[string]string, error) {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	t, e := s.st.resolveScope(strings.TrimSuffix(id, "/"))
	if e != nil {
		return nil, e
	}
	return t.tags.public(), nil
}

// ETag returns the current ETag at id as clients see it, e.g. `"3"`.
func (s *Server) ETag(id string) (string, error) {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	t, e := s.st.resolveScope(strings.TrimSuffix(id, "/"))
	if e != nil {
		return "", e
	}
	return `"` + strconv.FormatInt(*t.etag, 10) + `"`, nil
}

// Exists reports whether a subscription, group, resource or Uniform
// instance with this ID exists.
func (s *Server) Exists(id string) bool {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	_, e := s.st.resolveScope(strings.TrimSuffix(id, "/"))
	return e == nil
}

// ResourceCount returns the number of top-level resources.
func (s *Server) ResourceCount() int {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	return len(s.st.objs)
}

// Reset empties the estate and clears operations, call counts, faults,
// throttling buckets and Event Grid subscriptions (with what they had not
// delivered).
func (s *Server) Reset() {
	s.st.mu.Lock()
	s.st.subs, s.st.groups, s.st.objs, s.st.sorted = map[string]*subscription{}, map[string]*group{}, map[string]*object{}, nil
	s.st.mu.Unlock()
	s.ops.mu.Lock()
	s.ops.m = map[string]*lroOp{}
	s.ops.mu.Unlock()
	s.calls.reset()
	s.ClearFaults()
	s.throttle.reset()
	s.eg.removeAll()
	s.actors.mu.Lock()
	s.actors.policies, s.actors.reconcilers = nil, nil
	s.actors.mu.Unlock()
}
