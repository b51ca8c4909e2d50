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
	writeJSON(w, http.StatusOK, map[string]any{"value": []map[string]any{{
		"actions": s.permissionsFor(c.AppID), "notActions": []string{}, "dataActions": []string{}, "notDataActions": []string{},
	}}})
}
