package eventgrid

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tenant is an Entra ID stand-in: the discovery document and the JWKS of
// one RSA key, served over HTTP, and tokens it signs.
type tenant struct {
	id        string
	authority string
	key       *rsa.PrivateKey
	kid       string
}

// newTenant serves a tenant's discovery document and keys.
func newTenant(t *testing.T) *tenant {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tn := &tenant{id: "11111111-2222-3333-4444-555555555555", key: key, kid: "test-key-1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/"+tn.id+"/v2.0/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeTestJSON(w, map[string]any{"issuer": tn.issuer(), "jwks_uri": tn.authority + "/" + tn.id + "/discovery/v2.0/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/"+tn.id+"/discovery/v2.0/keys", func(w http.ResponseWriter, _ *http.Request) {
		writeTestJSON(w, map[string]any{"keys": []map[string]string{{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": tn.kid,
			"n": b64url(key.N.Bytes()), "e": b64url(big.NewInt(int64(key.E)).Bytes())}}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	tn.authority = srv.URL
	return tn
}

func writeTestJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// issuer is the tenant's v2.0 issuer.
func (tn *tenant) issuer() string { return tn.authority + "/" + tn.id + "/v2.0" }

// config is a webhook Config trusting the tenant's tokens for audience.
func (tn *tenant) config(audience string) Config {
	return Config{Authority: tn.authority, TenantID: tn.id, Audience: audience}
}

// claims are a valid token's claims for audience, valid for an hour.
func (tn *tenant) claims(audience string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": tn.issuer(), "aud": audience, "tid": tn.id, "sub": "eventgrid",
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix()}
}

// eventGridClaims are claims as Event Grid's tokens carry them: a v2.0
// token its own application obtained.
func (tn *tenant) eventGridClaims(audience string) map[string]any {
	c := tn.claims(audience)
	c["ver"], c["azp"] = "2.0", EventGridAppID
	return c
}

// sign returns an RS256 JWT of the claims, signed with key under the
// tenant's key ID.
func (tn *tenant) sign(t *testing.T, claims map[string]any, key *rsa.PrivateKey) string {
	t.Helper()
	return signWithKeyID(t, claims, key, tn.kid)
}

// signWithKeyID signs claims with key, naming the key kid.
func signWithKeyID(t *testing.T, claims map[string]any, key *rsa.PrivateKey, kid string) string {
	t.Helper()
	head, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": kid})
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	unsigned := b64url(head) + "." + b64url(payload)
	digest := sha256.Sum256([]byte(unsigned))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return unsigned + "." + b64url(sig)
}

// bearer is the Authorization header of a token.
func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// writeSecret writes a secret file and returns its path.
func writeSecret(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newTenantKey is an RSA key no tenant publishes.
func newTenantKey() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) }

// writeFileChanged rewrites a file so that its modification time changes
// even on a file system with coarse timestamps.
func writeFileChanged(path, content string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	later := st.ModTime().Add(time.Second)
	return os.Chtimes(path, later, later)
}
