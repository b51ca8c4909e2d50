package armsim

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// identityRoute matches the token service paths (Entra ID and managed
// identity); nil if the path is not one of them.
func identityRoute(rt *route) methods {
	switch {
	case rt.is("*", "oauth2", "v2.0", "token"):
		return methods{http.MethodPost: {"Identity.Token", (*Server).handleToken}}
	case rt.is("*", "v2.0", ".well-known", "openid-configuration"):
		return get("Identity.OpenIDConfiguration", (*Server).handleOpenIDConfig)
	case rt.is("*", "discovery", "v2.0", "keys"):
		return get("Identity.Keys", (*Server).handleJWKS)
	case rt.is("common", "discovery", "instance"):
		return get("Identity.InstanceDiscovery", (*Server).handleInstanceDiscovery)
	case rt.is("msi", "token"):
		return get("Identity.ManagedIdentity", (*Server).handleManagedIdentity)
	case rt.is("metadata", "identity", "oauth2", "token"):
		return get("Identity.IMDS", (*Server).handleIMDS)
	}
	return nil
}

// oauthError is the token service's error shape.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
	Codes       []int  `json:"error_codes,omitempty"`
}

func writeOAuthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, oauthError{Error: code, Description: desc})
}

// handleToken is the v2.0 token endpoint (client credentials grant, with a
// client secret or a client assertion).
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request, rt *route) {
	if err := r.ParseForm(); err != nil {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "AADSTS900144: The request body could not be parsed.")
		return
	}
	f := r.PostForm
	clientID := f.Get("client_id")
	if f.Get("grant_type") == "password" {
		s.handlePasswordGrant(w, f, rt)
		return
	}
	switch {
	case f.Get("grant_type") != "client_credentials":
		writeOAuthError(w, http.StatusBadRequest, "unsupported_grant_type",
			"AADSTS70003: armsim supports only the client_credentials and password grants.")
		return
	case clientID == "":
		writeOAuthError(w, http.StatusBadRequest, "invalid_request",
			"AADSTS900144: The request body must contain the following parameter: 'client_id'.")
		return
	}
	if msg := s.checkClient(clientID, f.Get("client_secret"), f.Get("client_assertion")); msg != "" {
		writeOAuthError(w, http.StatusUnauthorized, "invalid_client", msg)
		return
	}
	aud := audienceFromScope(f.Get("scope"))
	tok := s.issueToken(rt.segs[0], clientID, aud)
	secs := int64(s.opts.TokenLifetime / time.Second)
	writeJSON(w, http.StatusOK, map[string]any{
		"token_type": "Bearer", "expires_in": secs, "ext_expires_in": secs, "access_token": tok,
	})
}

// handlePasswordGrant signs a person in (resource owner password
// credentials, a public client): any non-empty user name and password
// are accepted, and the token names the user (idtyp "user", upn).
func (s *Server) handlePasswordGrant(w http.ResponseWriter, f url.Values, rt *route) {
	user, clientID := f.Get("username"), f.Get("client_id")
	if user == "" || f.Get("password") == "" || clientID == "" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request",
			"AADSTS900144: The request body must contain the following parameters: 'client_id', 'username', 'password'.")
		return
	}
	tok := s.issueUserToken(rt.segs[0], clientID, user, audienceFromScope(f.Get("scope")))
	secs := int64(s.opts.TokenLifetime / time.Second)
	writeJSON(w, http.StatusOK, map[string]any{
		"token_type": "Bearer", "expires_in": secs, "ext_expires_in": secs, "access_token": tok,
	})
}

// checkClient validates client credentials; "" means accepted.
func (s *Server) checkClient(clientID, secret, assertion string) string {
	if secret == "" && assertion == "" {
		return "AADSTS7000216: 'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type."
	}
	if assertion != "" && strings.Count(assertion, ".") != 2 {
		return "AADSTS50027: JWT token is invalid or malformed."
	}
	if len(s.opts.ClientSecrets) == 0 {
		return ""
	}
	want, ok := s.opts.ClientSecrets[clientID]
	switch {
	case !ok:
		return "AADSTS700016: Application with identifier '" + clientID + "' was not found in the directory."
	case secret != "" && secret != want:
		return "AADSTS7000215: Invalid client secret provided."
	}
	return ""
}

// audienceFromScope turns "https://host/.default" into "https://host".
func audienceFromScope(scope string) string {
	for _, sc := range strings.Fields(scope) {
		if strings.HasSuffix(sc, "/.default") {
			return strings.TrimSuffix(sc, "/.default")
		}
	}
	if f := strings.Fields(scope); len(f) > 0 {
		return f[0]
	}
	return ""
}

// handleOpenIDConfig serves the tenant's OpenID configuration.
func (s *Server) handleOpenIDConfig(w http.ResponseWriter, r *http.Request, rt *route) {
	base := baseURL(r) + "/" + rt.segs[0]
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                base + "/v2.0",
		"token_endpoint":                        base + "/oauth2/v2.0/token",
		"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
		"jwks_uri":                              baseURL(r) + "/" + rt.segs[0] + "/discovery/v2.0/keys",
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt"},
		"response_types_supported":              []string{"code", "id_token", "token"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"tenant_region_scope":                   "WW",
	})
}

// handleInstanceDiscovery answers MSAL's authority validation.
func (s *Server) handleInstanceDiscovery(w http.ResponseWriter, r *http.Request, _ *route) {
	tenant := "common"
	if ae := r.URL.Query().Get("authorization_endpoint"); ae != "" {
		if p := splitPath(strings.TrimPrefix(strings.TrimPrefix(ae, "https://"), "http://")); len(p) > 1 {
			tenant = p[1]
		}
	}
	host := r.Host
	writeJSON(w, http.StatusOK, map[string]any{
		"tenant_discovery_endpoint": baseURL(r) + "/" + tenant + "/v2.0/.well-known/openid-configuration",
		"api-version":               "1.1",
		"metadata": []map[string]any{{
			"preferred_network": host, "preferred_cache": host, "aliases": []string{host},
		}},
	})
}

// handleManagedIdentity is the App Service / Azure ML managed identity
// endpoint that IDENTITY_ENDPOINT (or MSI_ENDPOINT) points at.
func (s *Server) handleManagedIdentity(w http.ResponseWriter, r *http.Request, _ *route) {
	secret := r.Header.Get("X-IDENTITY-HEADER")
	if secret == "" {
		secret = r.Header.Get("secret")
	}
	if secret != s.idHeader {
		writeJSON(w, http.StatusUnauthorized, map[string]any{
			"statusCode": 401, "message": "X-IDENTITY-HEADER is missing or wrong.",
		})
		return
	}
	s.writeMIToken(w, r)
}

// handleIMDS is the IMDS token endpoint shape, for clients that route the
// IMDS address to armsim.
func (s *Server) handleIMDS(w http.ResponseWriter, r *http.Request, _ *route) {
	if !strings.EqualFold(r.Header.Get("Metadata"), "true") {
		writeJSON(w, http.StatusBadRequest, oauthError{Error: "invalid_request", Description: "Required metadata header not specified"})
		return
	}
	s.writeMIToken(w, r)
}

// writeMIToken answers a managed identity token request.
func (s *Server) writeMIToken(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	resource := q.Get("resource")
	if resource == "" {
		writeJSON(w, http.StatusBadRequest, oauthError{Error: "invalid_request", Description: "Required query variable 'resource' is missing"})
		return
	}
	clientID := firstNonEmpty(q.Get("client_id"), q.Get("clientid"), q.Get("mi_res_id"), q.Get("object_id"), "system-assigned")
	tok := s.issueToken(s.opts.TenantID, clientID, strings.TrimSuffix(resource, "/.default"))
	exp := time.Now().Add(s.opts.TokenLifetime).Unix()
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok, "expires_on": strconv.FormatInt(exp, 10), "resource": resource,
		"token_type": "Bearer", "client_id": clientID,
	})
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// ManagedIdentityEnv returns the environment variables that make
// azidentity's ManagedIdentityCredential (App Service source) get its tokens
// from this server: IDENTITY_ENDPOINT and IDENTITY_HEADER. With TLS the
// client must also trust CAFile.
func (s *Server) ManagedIdentityEnv() map[string]string {
	return map[string]string{
		"IDENTITY_ENDPOINT": s.URL() + "/msi/token",
		"IDENTITY_HEADER":   s.idHeader,
	}
}
