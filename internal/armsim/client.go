package armsim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// CertPool returns a pool trusting armsim's CA (nil without TLS).
func (s *Server) CertPool() *x509.CertPool {
	if s.ca == nil {
		return nil
	}
	return s.ca.certPool()
}

// HTTPClient returns an *http.Client that trusts armsim's CA; use it as
// policy.ClientOptions.Transport for SDK clients and credentials.
func (s *Server) HTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if pool := s.CertPool(); pool != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// Credential returns an azcore.TokenCredential that gets tokens from this
// server's token endpoint with the client-credentials grant, over HTTP or
// HTTPS. It exists because azidentity refuses an http:// authority; with
// TLS on, azidentity's own credentials work too (see docs/armsim.md).
func (s *Server) Credential(clientID, secret string) azcore.TokenCredential {
	return &simCredential{s: s, client: s.HTTPClient(), clientID: clientID, secret: secret}
}

// UserCredential returns an azcore.TokenCredential that signs a person in
// (the resource owner password grant, as a public client such as the
// Azure CLI): its tokens carry idtyp "user" and the user's principal name
// (upn), so the events of their writes name a person.
func (s *Server) UserCredential(username, password string) azcore.TokenCredential {
	return &simCredential{s: s, client: s.HTTPClient(), clientID: AzureCLIAppID, user: username, secret: password}
}

// AzureCLIAppID is the Azure CLI's application ID, the public client a
// UserCredential signs in with.
const AzureCLIAppID = "04b07795-8ddb-461a-bbee-02f9e1bf7b46"

// simCredential is a minimal client-credentials (or, with user, password)
// TokenCredential.
type simCredential struct {
	s                *Server
	client           *http.Client
	clientID, secret string
	user             string

	mu    sync.Mutex
	cache map[string]azcore.AccessToken
}

// GetToken implements azcore.TokenCredential, caching tokens per scope.
func (c *simCredential) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	scope := strings.Join(opts.Scopes, " ")
	c.mu.Lock()
	defer c.mu.Unlock()
	if tk, ok := c.cache[scope]; ok && time.Until(tk.ExpiresOn) > 5*time.Minute {
		return tk, nil
	}
	tk, err := c.fetch(ctx, scope)
	if err != nil {
		return azcore.AccessToken{}, err
	}
	if c.cache == nil {
		c.cache = map[string]azcore.AccessToken{}
	}
	c.cache[scope] = tk
	return tk, nil
}

func (c *simCredential) fetch(ctx context.Context, scope string) (azcore.AccessToken, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.clientID}, "client_secret": {c.secret}, "scope": {scope}}
	if c.user != "" {
		form = url.Values{"grant_type": {"password"}, "client_id": {c.clientID}, "username": {c.user}, "password": {c.secret}, "scope": {scope}}
	}
	u := c.s.URL() + "/" + c.s.TenantID() + "/oauth2/v2.0/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return azcore.AccessToken{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.client.Do(req)
	if err != nil {
		return azcore.AccessToken{}, err
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return azcore.AccessToken{}, fmt.Errorf("armsim credential: decoding token response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return azcore.AccessToken{}, fmt.Errorf("armsim credential: %s: %s", body.Error, body.Description)
	}
	return azcore.AccessToken{Token: body.AccessToken, ExpiresOn: time.Now().Add(time.Duration(body.ExpiresIn) * time.Second)}, nil
}
