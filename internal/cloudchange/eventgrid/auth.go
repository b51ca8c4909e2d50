package eventgrid

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// minKeyLen is the shortest shared secret accepted.
const minKeyLen = 16

// authenticator checks a delivery against the configured modes; a nil mode
// is off. A delivery passes when one configured mode accepts it.
type authenticator struct {
	keys   *keyFile
	bearer *bearerAuth
}

// check returns nil when the request is authenticated, else the refusal:
// 401 when it carries no credential of a configured mode, 403 when what it
// carries does not verify, 503 when a mode cannot check (unreadable secret
// file, unreachable authority).
func (a *authenticator) check(r *http.Request) *refusal {
	key, hasKey := deliveryKey(r)
	raw, hasToken := bearerToken(r.Header.Get("Authorization"))
	var failed *refusal
	if a.keys != nil && hasKey {
		ok, err := a.keys.matches(key)
		if ok {
			return nil
		}
		failed = keyRefusal(err)
	}
	if a.bearer != nil && hasToken {
		err := a.bearer.verify(r.Context(), raw)
		if err == nil {
			return nil
		}
		failed = tokenRefusal(err)
	}
	if failed != nil {
		return failed
	}
	return &refusal{status: http.StatusUnauthorized, reason: reasonUnauthenticated,
		msg: "no credential: the " + KeyHeader + " header, the delivery URL's key or an Entra ID bearer token"}
}

// deliveryKey returns the shared secret a delivery carries: the KeyHeader
// header (a custom delivery property of the event subscription), else the
// URL's KeyParameter.
func deliveryKey(r *http.Request) (string, bool) {
	if v := r.Header.Values(KeyHeader); len(v) > 0 {
		return v[0], true
	}
	if v, ok := r.URL.Query()[KeyParameter]; ok {
		return v[0], true
	}
	return "", false
}

// bearerToken returns the token of an Authorization header of the Bearer
// scheme (named in any case).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

func keyRefusal(err error) *refusal {
	if err != nil {
		return &refusal{status: http.StatusServiceUnavailable, reason: reasonAuthUnavailable, msg: "the shared secret cannot be read", cause: err}
	}
	return &refusal{status: http.StatusForbidden, reason: reasonBadKey, msg: "wrong key"}
}

func tokenRefusal(err error) *refusal {
	if errors.Is(err, errDiscovery) || errors.Is(err, errKeysUnavailable) {
		return &refusal{status: http.StatusServiceUnavailable, reason: reasonAuthUnavailable, msg: "the Entra ID keys cannot be fetched", cause: err}
	}
	if errors.Is(err, errCallerNotAllowed) {
		return &refusal{status: http.StatusForbidden, reason: reasonCallerNotAllowed, msg: "bearer token of an application not allowed to deliver", cause: err}
	}
	return &refusal{status: http.StatusForbidden, reason: reasonBadToken, msg: "bearer token refused", cause: err}
}

// keyFile holds the shared secrets of a file, as SHA-256 digests so that
// comparing them takes the same time whatever the length guessed, and
// re-reads the file when its size or modification time changes.
type keyFile struct {
	path string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	digests [][sha256.Size]byte
}

// newKeyFile reads path once, so that a missing or weak secret stops the
// start.
func newKeyFile(path string) (*keyFile, error) {
	k := &keyFile{path: path}
	if _, err := k.current(); err != nil {
		return nil, err
	}
	return k, nil
}

// matches compares got with every secret in constant time.
func (k *keyFile) matches(got string) (bool, error) {
	digests, err := k.current()
	if err != nil {
		return false, err
	}
	want := sha256.Sum256([]byte(got))
	found := 0
	for _, d := range digests {
		found |= subtle.ConstantTimeCompare(d[:], want[:])
	}
	return found == 1, nil
}

// current returns the secrets' digests, reading the file again if it
// changed since the last read.
func (k *keyFile) current() ([][sha256.Size]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st, err := os.Stat(k.path)
	if err != nil {
		return nil, fmt.Errorf("eventgrid: secret file: %w", err)
	}
	if k.digests != nil && st.ModTime().Equal(k.modTime) && st.Size() == k.size {
		return k.digests, nil
	}
	data, err := os.ReadFile(k.path)
	if err != nil {
		return nil, fmt.Errorf("eventgrid: secret file: %w", err)
	}
	digests, err := parseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("eventgrid: secret file %s: %w", k.path, err)
	}
	k.digests, k.modTime, k.size = digests, st.ModTime(), st.Size()
	return digests, nil
}

// parseKeys returns the digests of the non-empty lines of data.
func parseKeys(data []byte) ([][sha256.Size]byte, error) {
	var digests [][sha256.Size]byte
	for line := range bytes.Lines(data) {
		key := bytes.TrimSpace(line)
		switch {
		case len(key) == 0:
			continue
		case len(key) < minKeyLen:
			return nil, fmt.Errorf("line %d: a secret shorter than %d characters", len(digests)+1, minKeyLen)
		}
		digests = append(digests, sha256.Sum256(key))
	}
	if len(digests) == 0 {
		return nil, errors.New("no secret in it")
	}
	return digests, nil
}

// errDiscovery marks a failure to fetch the tenant's discovery document.
var errDiscovery = errors.New("eventgrid: OpenID discovery failed")

// bearerAuth verifies Entra ID tokens: signature against the tenant's keys
// (go-oidc, from the discovery document's jwks_uri), audience, expiry, an
// issuer from an exact allow-list and, if Config.AllowedCallers lists
// any, the application that obtained the token.
type bearerAuth struct {
	cfg Config

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
}

// verify checks a raw JWT. It fails with errDiscovery or
// errKeysUnavailable when the token could not be checked because the
// authority could not be reached in time.
func (b *bearerAuth) verify(ctx context.Context, raw string) error {
	v, err := b.discover(ctx)
	if err != nil {
		return err
	}
	var fetch fetchFailure
	tok, err := v.Verify(withFetchFailure(ctx, &fetch), raw)
	if fetch.err != nil {
		return fmt.Errorf("%w: %w", errKeysUnavailable, fetch.err)
	}
	if err != nil {
		return err
	}
	if !slices.Contains(b.cfg.issuers(), tok.Issuer) {
		return fmt.Errorf("issuer %q is not accepted", tok.Issuer)
	}
	return checkCaller(tok, b.cfg.AllowedCallers)
}

// discover fetches the discovery document on first use, and again after a
// failure, so that an authority that is down at start does not stop the
// webhook for good.
func (b *bearerAuth) discover(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.verifier != nil {
		return b.verifier, nil
	}
	client := b.authorityClient()
	ctx, cancel := context.WithTimeout(oidc.ClientContext(context.WithoutCancel(ctx), client), b.cfg.AuthorityTimeout)
	defer cancel()
	p, err := oidc.NewProvider(ctx, b.cfg.issuer())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDiscovery, err)
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil || doc.JWKSURI == "" {
		return nil, fmt.Errorf("%w: the discovery document names no jwks_uri", errDiscovery)
	}
	// The issuer is checked against the allow-list (v2 and, if asked, v1)
	// after the signature; the keys are the tenant's either way.
	keys := newSigningKeys(doc.JWKSURI, client)
	b.verifier = oidc.NewVerifier(b.cfg.issuer(), keys, &oidc.Config{ClientID: b.cfg.Audience, SkipIssuerCheck: true,
		SupportedSigningAlgs: []string{oidc.RS256}})
	return b.verifier, nil
}

// authorityClient is Config.AuthorityClient bounded by
// Config.AuthorityTimeout per request (unless it has a shorter timeout of
// its own): an authority that accepts the connection and never answers
// must not hold deliveries, nor the fetches other deliveries wait for.
func (b *bearerAuth) authorityClient() *http.Client {
	c := *b.cfg.AuthorityClient
	if c.Timeout == 0 || c.Timeout > b.cfg.AuthorityTimeout {
		c.Timeout = b.cfg.AuthorityTimeout
	}
	return &c
}
