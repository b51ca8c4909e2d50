package armsim

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// The other writers of a subscription, so that tests meet the fights they
// cause: an Azure Policy assignment whose modify or append effect changes
// tag writes on their way in, and a reconciler that rewrites a resource's
// tags to its own declared set after anyone else writes them (as AKS's
// node-pool reconcile does; Azure/AKS#3832, #3707).

// PolicyEffect is how a policy assignment changes a write's tags.
type PolicyEffect string

// The effects armsim applies (Microsoft's "Azure Policy definitions modify
// effect" and "append effect").
const (
	// PolicyModify sets each of the policy's tags on every write (the
	// addOrReplace operation), whatever the request said.
	PolicyModify PolicyEffect = "Modify"
	// PolicyAppend adds each of the policy's tags a write would leave
	// without it, and keeps a value the write sets.
	PolicyAppend PolicyEffect = "Append"
)

// Policy is a policy assignment that writes tags.
type Policy struct {
	// Name names the assignment.
	Name string
	// Scope is a subscription, resource group or resource ID: the policy
	// applies to the writes of everything under it.
	Scope string
	// Effect is PolicyModify or PolicyAppend.
	Effect PolicyEffect
	// Tags are the tags it writes.
	Tags map[string]string
}

// Reconciler is a platform controller that owns a set of resources' tags:
// after another writer's ARM write of a resource under Scope, it rewrites
// that resource's tags to Tags (every other tag removed), as AppID.
type Reconciler struct {
	// Name names it.
	Name string
	// Scope is a subscription, resource group or resource ID.
	Scope string
	// Tags is the declared tag set it writes back.
	Tags map[string]string
	// AppID is the application its writes' events name in their claims
	// (appid, oid; idtyp app).
	AppID string
}

// actors are the policies and reconcilers in force.
type actors struct {
	mu          sync.Mutex
	policies    []Policy
	reconcilers []Reconciler
}

// AddPolicy assigns a tag policy. Its tags must pass ARM's rules.
func (s *Server) AddPolicy(p Policy) error {
	if p.Effect != PolicyModify && p.Effect != PolicyAppend {
		return fmt.Errorf("armsim: policy %q: effect %q is not Modify or Append", p.Name, p.Effect)
	}
	p.Scope = strings.TrimSuffix(p.Scope, "/")
	return s.addActor("policy", p.Name, p.Tags, func(a *actors) { a.policies = append(a.policies, p) })
}

// AddReconciler starts a reconciler. Its tags must pass ARM's rules.
func (s *Server) AddReconciler(r Reconciler) error {
	r.Scope = strings.TrimSuffix(r.Scope, "/")
	return s.addActor("reconciler", r.Name, r.Tags, func(a *actors) { a.reconcilers = append(a.reconcilers, r) })
}

// addActor checks an actor's tags, then adds it.
func (s *Server) addActor(kind, name string, tags map[string]string, add func(*actors)) error {
	if err := ValidateTags(TypeResourceGroup, tags); err != nil {
		return fmt.Errorf("armsim: %s %q: %w", kind, name, err)
	}
	s.actors.mu.Lock()
	defer s.actors.mu.Unlock()
	add(&s.actors)
	return nil
}

// RemoveActor removes the policies and reconcilers named name.
func (s *Server) RemoveActor(name string) {
	s.actors.mu.Lock()
	defer s.actors.mu.Unlock()
	s.actors.policies = removeNamed(s.actors.policies, name, func(p Policy) string { return p.Name })
	s.actors.reconcilers = removeNamed(s.actors.reconcilers, name, func(r Reconciler) string { return r.Name })
}

func removeNamed[T any](list []T, name string, nameOf func(T) string) []T {
	out := list[:0]
	for _, v := range list {
		if nameOf(v) != name {
			out = append(out, v)
		}
	}
	return out
}

// under reports whether id is scope or lies under it.
func under(id, scope string) bool {
	id, scope = strings.ToLower(id), strings.ToLower(scope)
	return id == scope || strings.HasPrefix(id, scope+"/")
}

// applyPolicies returns the tags a write of id stores once the policies
// under whose scope it lies changed them.
func (s *Server) applyPolicies(id string, next tagSet) tagSet {
	s.actors.mu.Lock()
	defer s.actors.mu.Unlock()
	for _, p := range s.actors.policies {
		if !under(id, p.Scope) {
			continue
		}
		next = next.clone()
		for _, k := range sortedKeys(p.Tags) {
			if _, has := next.get(k); p.Effect == PolicyModify || !has {
				next.set(k, p.Tags[k])
			}
		}
	}
	return next
}

// reconcileAfter runs the reconcilers whose scope holds the resource an ARM
// write just changed (before the write's answer leaves, after its event).
func (s *Server) reconcileAfter(r *http.Request, rt *route, status int) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || rt.kind != kindARM || rt.op == opGraph || status < 200 || status > 299 {
		return
	}
	id := rt.scope
	if id == "" {
		if !isComputeUpdate(rt) {
			return
		}
		id = "/" + strings.Join(rt.segs, "/")
	}
	s.actors.mu.Lock()
	var due []Reconciler
	for _, rc := range s.actors.reconcilers {
		if under(id, rc.Scope) {
			due = append(due, rc)
		}
	}
	s.actors.mu.Unlock()
	for _, rc := range due {
		typ, err := s.applyEdit(id, func(tagSet) (tagSet, map[string]string) { return tagSetFrom(rc.Tags), rc.Tags })
		if err == nil && s.eg.active() {
			claims := map[string]string{"appid": rc.AppID, "oid": rc.AppID, "idtyp": "app", "tid": s.opts.TenantID}
			s.publish(EventResourceWriteSuccess, id, typ+"/write", writeOrigin{claims: claims})
		}
	}
}
