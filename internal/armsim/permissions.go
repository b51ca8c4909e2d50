package armsim

import (
	"net/http"
	"strings"
	"sync"
)

// permissionTable holds what each client may do, for the permissions read
// (Microsoft.Authorization/permissions). armsim does not enforce it on other
// requests: it is what the caller is told it may do.
type permissionTable struct {
	mu      sync.Mutex
	actions map[string][]string // by lower-cased client ID
	// reads are the scopes a client may read, when restricted
	// (SetReadScopes).
	reads map[string][]string
}

// SetReadScopes restricts what a client may read to these scopes
// (subscription or resource group IDs; none: everything again), as role
// assignments on resource groups do. Resource Graph then leaves out the
// rows of everything else with HTTP 200 and no error, as it does on Azure
// ("Resource Graph returns only resources the caller can read"), and the
// permissions read of a subscription it cannot read whole reports only the
// configured actions that grant no read ("*" and "…/read" patterns are
// left out: they come from the groups' assignments, not the
// subscription's).
func (s *Server) SetReadScopes(clientID string, scopes ...string) {
	s.perms.mu.Lock()
	defer s.perms.mu.Unlock()
	if s.perms.reads == nil {
		s.perms.reads = map[string][]string{}
	}
	if len(scopes) == 0 {
		delete(s.perms.reads, strings.ToLower(clientID))
		return
	}
	clean := make([]string, len(scopes))
	for i, sc := range scopes {
		clean[i] = strings.TrimSuffix(sc, "/")
	}
	s.perms.reads[strings.ToLower(clientID)] = clean
}

// readable returns whether client may read id (a resource, group or
// subscription ID).
func (s *Server) readable(clientID, id string) bool {
	s.perms.mu.Lock()
	defer s.perms.mu.Unlock()
	scopes, ok := s.perms.reads[strings.ToLower(clientID)]
	if !ok {
		return true
	}
	for _, sc := range scopes {
		if under(id, sc) {
			return true
		}
	}
	return false
}

// grantsRead reports whether an action pattern grants reads.
func grantsRead(pattern string) bool {
	return pattern == "*" || strings.HasSuffix(strings.ToLower(pattern), "/read")
}

// SetPermissions sets the actions (ARM action patterns such as "*",
// "*/read", "Microsoft.Resources/tags/write") that the permissions read
// reports for a client on every subscription. A client without an entry
// is reported "*" (an owner). No action reports nothing allowed.
func (s *Server) SetPermissions(clientID string, actions ...string) {
	s.perms.mu.Lock()
	defer s.perms.mu.Unlock()
	if s.perms.actions == nil {
		s.perms.actions = map[string][]string{}
	}
	s.perms.actions[strings.ToLower(clientID)] = append([]string{}, actions...)
}

// permissionsFor returns the actions reported for a client.
func (s *Server) permissionsFor(clientID string) []string {
	s.perms.mu.Lock()
	defer s.perms.mu.Unlock()
	if a, ok := s.perms.actions[strings.ToLower(clientID)]; ok {
		return a
	}
	return []string{"*"}
}

// handlePermissions answers Permissions - List For Subscription
// (GET /subscriptions/{sub}/providers/Microsoft.Authorization/permissions)
// for the caller the bearer token names.
func (s *Server) handlePermissions(w http.ResponseWriter, r *http.Request, rt *route) {
	s.st.mu.RLock()
	_, e := s.st.resolveScope("/" + strings.Join(rt.segs[:2], "/"))
	s.st.mu.RUnlock()
	if e != nil {
		writeError(w, e)
		return
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	c, err := s.parseToken(strings.TrimSpace(tok))
	if err != nil {
		writeError(w, newError(http.StatusUnauthorized, "InvalidAuthenticationToken", "The access token is invalid."))
		return
	}
	actions := s.permissionsFor(c.AppID)
	if sub := "/" + strings.Join(rt.segs[:2], "/"); !s.readable(c.AppID, sub) {
		var kept []string
		for _, a := range actions {
			if !grantsRead(a) {
				kept = append(kept, a)
			}
		}
		actions = kept
	}
	writeJSON(w, http.StatusOK, map[string]any{"value": []map[string]any{{
		"actions": actions, "notActions": []string{}, "dataActions": []string{}, "notDataActions": []string{},
	}}})
}
