package armsim

import (
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// EventGridAppID is the application ID of Microsoft.EventGrid in Entra ID:
// the appid (and azp) of the tokens Event Grid sends to protected webhooks.
const EventGridAppID = "4962773b-9cdb-44cf-a8bf-237846a00ab7"

// rsaKeyBits is the size of the key that signs delivery tokens.
const rsaKeyBits = 2048

// signingKey is the RSA key armsim signs Entra ID-style tokens with,
// generated on first use (key generation is too slow to pay on every
// start) and published at the tenant's jwks_uri.
type signingKey struct {
	once sync.Once
	jwk  jose.JSONWebKey
	err  error
}

// get returns the private key as a JWK with its key ID.
func (k *signingKey) get() (jose.JSONWebKey, error) {
	k.once.Do(func() {
		priv, err := rsa.GenerateKey(rand.Reader, rsaKeyBits)
		if err != nil {
			k.err = err
			return
		}
		k.jwk = jose.JSONWebKey{Key: priv, KeyID: randomHex(8), Algorithm: string(jose.RS256), Use: "sig"}
	})
	return k.jwk, k.err
}

// handleJWKS serves the public signing key as a JSON Web Key Set.
func (s *Server) handleJWKS(w http.ResponseWriter, _ *http.Request, _ *route) {
	k, err := s.rsaKey.get()
	if err != nil {
		writeOAuthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k.Public()}})
}

// Issuer is the issuer of the RS256 tokens armsim signs for tenant (""
// means the server's tenant): {URL}/{tenant}/v2.0, the issuer of the
// tenant's OpenID configuration, so go-oidc's NewProvider(ctx, Issuer(""))
// finds the jwks_uri that verifies Event Grid's delivery tokens.
func (s *Server) Issuer(tenant string) string {
	return s.URL() + "/" + firstNonEmpty(tenant, s.opts.TenantID) + "/v2.0"
}

// deliveryClaims are the claims of the token Event Grid presents to a
// webhook protected by Entra ID.
type deliveryClaims struct {
	jwt.Claims
	AppID string `json:"appid"`
	Azp   string `json:"azp"`
	Tid   string `json:"tid"`
	Oid   string `json:"oid"`
	Ver   string `json:"ver"`
	Idtyp string `json:"idtyp"`
}

// deliveryToken signs (RS256, kid header) an Entra ID v2.0 app token from
// Event Grid for audience, issued by {URL}/{tenant}/v2.0: the issuer the
// tenant's OpenID configuration advertises.
func (s *Server) deliveryToken(tenant, audience string) (string, error) {
	k, err := s.rsaKey.get()
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	now := s.opts.Clock.Now()
	c := deliveryClaims{
		Claims: jwt.Claims{
			Issuer: s.Issuer(tenant), Subject: EventGridAppID,
			Audience: jwt.Audience{audience}, IssuedAt: jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now.Add(-5 * time.Minute)), Expiry: jwt.NewNumericDate(now.Add(time.Hour)),
			ID: newUUID(),
		},
		AppID: EventGridAppID, Azp: EventGridAppID, Tid: tenant, Oid: EventGridAppID, Ver: "2.0", Idtyp: "app",
	}
	return jwt.Signed(signer).Claims(c).Serialize()
}
