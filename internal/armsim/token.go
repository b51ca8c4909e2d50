package armsim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
)

// tokenClaims are the claims armsim puts in (and checks on) access tokens.
type tokenClaims struct {
	Aud   string `json:"aud"`
	Iss   string `json:"iss"`
	Iat   int64  `json:"iat"`
	Nbf   int64  `json:"nbf"`
	Exp   int64  `json:"exp"`
	Tid   string `json:"tid"`
	Oid   string `json:"oid"`
	AppID string `json:"appid"`
	Sub   string `json:"sub"`
	Idtyp string `json:"idtyp"`
	UPN   string `json:"upn,omitempty"`
}

var b64 = base64.RawURLEncoding

// issueToken signs a JWT (HS256, key private to this server) for the
// client and audience.
func (s *Server) issueToken(tenant, clientID, audience string) string {
	now := s.opts.Clock.Now()
	c := tokenClaims{
		Aud: audience, Iss: "https://sts.windows.net/" + tenant + "/",
		Iat: now.Unix(), Nbf: now.Add(-5 * time.Minute).Unix(), Exp: now.Add(s.opts.TokenLifetime).Unix(),
		Tid: tenant, Oid: clientID, AppID: clientID, Sub: clientID, Idtyp: "app",
	}
	return s.signClaims(c)
}

// issueUserToken signs a JWT for a person signed in through clientID:
// idtyp "user", their principal name, an object ID of their own.
func (s *Server) issueUserToken(tenant, clientID, user, audience string) string {
	now := s.opts.Clock.Now()
	oid := newUUIDFrom(user)
	c := tokenClaims{
		Aud: audience, Iss: "https://sts.windows.net/" + tenant + "/",
		Iat: now.Unix(), Nbf: now.Add(-5 * time.Minute).Unix(), Exp: now.Add(s.opts.TokenLifetime).Unix(),
		Tid: tenant, Oid: oid, AppID: clientID, Sub: oid, Idtyp: "user", UPN: user,
	}
	return s.signClaims(c)
}

// signClaims renders and signs a token of claims c.
func (s *Server) signClaims(c tokenClaims) string {
	payload, _ := json.Marshal(c)
	head := b64.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	unsigned := head + "." + b64.EncodeToString(payload)
	return unsigned + "." + b64.EncodeToString(s.sign(unsigned))
}

func (s *Server) sign(data string) []byte {
	m := hmac.New(sha256.New, s.signKey)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// parseToken verifies a token's signature and returns its claims.
func (s *Server) parseToken(tok string) (*tokenClaims, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a JWT")
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, s.sign(parts[0]+"."+parts[1])) {
		return nil, errors.New("bad signature")
	}
	payload, err := b64.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// authenticate checks the bearer token of an ARM request.
func (s *Server) authenticate(r *http.Request) *Error {
	h := r.Header.Get("Authorization")
	if h == "" {
		return newError(http.StatusUnauthorized, "AuthenticationFailed",
			"Authentication failed. The 'Authorization' header is missing.")
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return newError(http.StatusUnauthorized, "AuthenticationFailed",
			"Authentication failed. The 'Authorization' header is provided in an invalid format.")
	}
	c, err := s.parseToken(strings.TrimSpace(tok))
	if err != nil {
		return newError(http.StatusUnauthorized, "InvalidAuthenticationToken", "The access token is invalid.")
	}
	if now := s.opts.Clock.Now(); now.Unix() >= c.Exp {
		return newError(http.StatusUnauthorized, "ExpiredAuthenticationToken",
			"The access token expiry UTC time '%s' is earlier than current UTC time '%s'.",
			time.Unix(c.Exp, 0).UTC().Format(time.RFC1123), now.UTC().Format(time.RFC1123))
	}
	if !s.audienceOK(r, c.Aud) {
		return newError(http.StatusUnauthorized, "InvalidAuthenticationTokenAudience",
			"The access token has been obtained for wrong audience or resource '%s'. It should exactly match with one of the allowed audiences '%s'.",
			c.Aud, strings.Join(s.audiences(r), "','"))
	}
	return nil
}

// audiences lists the token audiences ARM requests accept.
func (s *Server) audiences(r *http.Request) []string {
	a := []string{baseURL(r), "https://management.azure.com", "https://management.core.windows.net"}
	if u := s.URL(); u != "" {
		a = append(a, u)
	}
	return append(a, s.opts.Audiences...)
}

func (s *Server) audienceOK(r *http.Request, aud string) bool {
	norm := func(v string) string { return strings.ToLower(strings.TrimRight(v, "/")) }
	for _, a := range s.audiences(r) {
		if norm(a) == norm(aud) {
			return true
		}
	}
	return false
}

// writeAuthError answers 401 with ARM's body and a WWW-Authenticate challenge.
func writeAuthError(w http.ResponseWriter, authority, tenant string, e *Error) {
	w.Header().Set("WWW-Authenticate", `Bearer authorization_uri="`+authority+"/"+tenant+
		`", error="invalid_token", error_description="`+e.Code+`"`)
	writeError(w, e)
}

// authorityHost is this server as seen by the client.
func (s *Server) authorityHost(r *http.Request) string { return baseURL(r) }
