package eventgrid

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/time/rate"
)

// errKeysUnavailable marks a token that could not be checked because the
// tenant's signing keys could not be fetched (the authority is down, slow
// or unreachable): Event Grid is told to retry (503), since the token may
// well be valid.
var errKeysUnavailable = errors.New("eventgrid: the tenant's signing keys cannot be fetched")

// maxKeysBytes bounds the JWKS document read (Entra's is a few KiB).
const maxKeysBytes = 1 << 20

// Key fetches are rate-limited: keyFetchBurst at once, then one every
// keyFetchEvery. Tokens naming made-up key IDs, or an authority that keeps
// failing, cost the authority that much and no more; a token that names a
// key not fetched yet while the limit holds is answered 503 (Event Grid
// retries it 10 s or more later, when a fetch is allowed again).
const (
	keyFetchBurst = 3
	keyFetchEvery = 10 * time.Second
)

// errFetchLimited is the fetch the rate limit declined.
var errFetchLimited = fmt.Errorf("the keys were fetched %d times within %s: a key the token names may be new, retry", keyFetchBurst, keyFetchBurst*keyFetchEvery)

// signingKeys is an oidc.KeySet over the tenant's JWKS (the discovery
// document's jwks_uri): the keys are cached and fetched again when a token
// names a key the cache does not hold (a rotation), each fetch bounded by
// the client's timeout. Unlike go-oidc's RemoteKeySet it says when a
// signature could not be checked because the keys could not be fetched
// (keyFetchFailed), which is no proof that the token is bad.
type signingKeys struct {
	url    string
	client *http.Client

	mu      sync.Mutex // serializes fetches
	fetches uint64     // fetches done, guarded by mu
	lastErr error      // the last fetch's error, guarded by mu
	keys    []jose.JSONWebKey
	limit   *rate.Limiter
}

// newSigningKeys is the key set at url, fetched with client.
func newSigningKeys(url string, client *http.Client) *signingKeys {
	return &signingKeys{url: url, client: client, limit: rate.NewLimiter(rate.Every(keyFetchEvery), keyFetchBurst)}
}

// fetchFailure is where VerifySignature reports, through the context, that
// the keys could not be fetched: go-oidc wraps the KeySet's error as text.
type fetchFailure struct{ err error }

type fetchFailureKey struct{}

// withFetchFailure returns a context in which VerifySignature records a
// failed key fetch into f.
func withFetchFailure(ctx context.Context, f *fetchFailure) context.Context {
	return context.WithValue(ctx, fetchFailureKey{}, f)
}

// VerifySignature implements oidc.KeySet.
func (k *signingKeys) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, fmt.Errorf("malformed token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("a token needs exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, seen := k.cached()
	if payload, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	}
	keys, err = k.fetch(ctx, seen)
	if err != nil {
		if f, ok := ctx.Value(fetchFailureKey{}).(*fetchFailure); ok {
			f.err = err
		}
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, err)
	}
	if payload, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	}
	return nil, errors.New("no signing key of the tenant verifies the token's signature")
}

// cached returns the keys held and how many fetches they come after.
func (k *signingKeys) cached() ([]jose.JSONWebKey, uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.fetches
}

// fetch gets the keys again, unless a fetch ended since the caller looked
// at the cache (seen): then its result serves, so that a burst of tokens
// naming an unknown key, or an authority that does not answer, costs one
// fetch and not one per token.
func (k *signingKeys) fetch(ctx context.Context, seen uint64) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fetches != seen {
		return k.keys, k.lastErr
	}
	if !k.limit.Allow() {
		fetchesLimitedTotal.WithLabelValues().Inc()
		return k.keys, errFetchLimited
	}
	keys, err := k.get(context.WithoutCancel(ctx))
	k.fetches++
	k.lastErr = err
	if err == nil {
		k.keys = keys
	}
	return k.keys, err
}

// get fetches and parses the JWKS, keeping the keys go-jose reads (an
// unknown key type is skipped, as RFC 7517 asks).
func (k *signingKeys) get(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeysBytes))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", k.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", k.url, resp.Status)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("%s: not a key set: %w", k.url, err)
	}
	keys := make([]jose.JSONWebKey, 0, len(set.Keys))
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) == nil && key.Valid() && key.Use != "enc" {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s holds no key tagsync can use", k.url)
	}
	return keys, nil
}

// verifyWith checks the signature with the key of ID kid (every key when
// the token names none).
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) ([]byte, bool) {
	for _, key := range keys {
		if kid != "" && key.KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(&key); err == nil {
			return payload, true
		}
	}
	return nil, false
}
