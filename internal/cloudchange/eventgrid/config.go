package eventgrid

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of the Config fields left zero.
const (
	DefaultPath            = "/eventgrid"
	DefaultAuthority       = "https://login.microsoftonline.com"
	DefaultMaxBodyBytes    = 1<<20 + 64<<10 // Event Grid's 1 MiB batch limit and room for the envelope
	DefaultMaxAge          = time.Hour
	DefaultDuplicateIDs    = 10000
	DefaultShutdownTimeout = 5 * time.Second
	// DefaultAuthorityTimeout bounds one request to the Entra ID
	// authority (the discovery document, the signing keys): well within
	// the 30 seconds Event Grid waits for an answer.
	DefaultAuthorityTimeout = 10 * time.Second
	// DefaultLeaderWait is how long a follower holds a delivery while no
	// leader answers (a takeover), within the 30 seconds Event Grid waits:
	// past a killed leader's Lease (15 s and up to two 2 s retry periods;
	// 20.3 s measured on a loaded machine), with 5 s left for the forward.
	DefaultLeaderWait = 25 * time.Second

	// DefaultProbeInterval is how often the webhook checks its public
	// endpoint (Config.PublicURL); ProbeFailures probes in a row that fail
	// take the source down, so a broken path is noticed within
	// ProbeFailures × DefaultProbeInterval + one probe's timeout.
	DefaultProbeInterval = 2 * time.Minute
	ProbeFailures        = 2
	probeTimeout         = 10 * time.Second
)

// KeyHeader is the request header that carries the shared secret: the
// event subscription sets it as a static delivery property (a custom
// header, marked secret). Preferred to KeyParameter, because the access
// logs of ingresses and load balancers record URLs with their query
// strings, and not request headers.
const KeyHeader = "X-Tagsync-Key"

// KeyParameter is the query parameter of the delivery URL that may carry
// the shared secret instead of KeyHeader:
// https://tagsync.example.com/eventgrid?key=<secret>.
const KeyParameter = "key"

// Config configures the webhook. Zero values take the defaults above. At
// least one authentication mode (SecretFile, or TenantID with Audience) must
// be configured.
type Config struct {
	// BindAddress is the listener's address, e.g. ":9443".
	BindAddress string
	// Path is the endpoint's URL path; default /eventgrid.
	Path string
	// CertDir holds tls.crt and tls.key (a mounted kubernetes.io/tls
	// Secret); the files are reloaded when they change. Empty serves plain
	// HTTP, for an Ingress that terminates TLS in front.
	CertDir string

	// SecretFile holds the shared secret deliveries carry in the KeyHeader
	// header or the URL's KeyParameter (the header wins when both are
	// there): one secret a line, each at least 16 characters; every line
	// is accepted, so a rotation lists the new secret next to the old one
	// until the subscription sends the new one. Re-read when it changes.
	SecretFile string

	// Authority is the Entra ID authority; default
	// https://login.microsoftonline.com.
	Authority string
	// TenantID is the Entra ID tenant whose tokens are accepted. Setting it
	// (with Audience) turns on bearer token authentication.
	TenantID string
	// Audience is the Entra application ID or application ID URI the event
	// subscription names; a token's aud must equal it.
	Audience string
	// AcceptV1Issuer also accepts tokens issued by
	// https://sts.windows.net/<TenantID>/ (Entra v1 access tokens, what an
	// application without accessTokenAcceptedVersion 2 receives). The
	// signature is checked against the same tenant keys.
	AcceptV1Issuer bool
	// AllowedCallers are the Entra application (client) IDs whose tokens
	// are accepted: the application that obtained the token (its azp
	// claim in a v2.0 token, appid in a v1.0 one) must be one of them,
	// else the delivery is refused 403 caller_not_allowed. Empty means
	// Event Grid's own application only (DefaultCallers: EventGridAppID,
	// or EventGridGovernmentAppID with Azure Government's authority), so
	// that no other application of the tenant that can get a token for
	// Audience may post deliveries.
	AllowedCallers []string
	// AuthorityClient fetches the discovery document and the keys; nil is
	// http.DefaultClient. Give one trusting a private CA for a simulator.
	AuthorityClient *http.Client
	// AuthorityTimeout bounds each request to the authority (the
	// discovery document, the signing keys); default 10s. A delivery
	// whose token cannot be checked because the authority did not answer
	// in time is refused 503 auth_unavailable, which Event Grid retries.
	AuthorityTimeout time.Duration

	// MaxBodyBytes bounds a delivery's body; default 1 MiB + 64 KiB.
	MaxBodyBytes int64
	// MaxAge drops events whose time is older; default 1h.
	MaxAge time.Duration
	// DuplicateIDs is how many recent event IDs are remembered to drop
	// redeliveries; default 10000.
	DuplicateIDs int
	// ShutdownTimeout bounds the graceful shutdown when Start's context
	// ends; default 5s.
	ShutdownTimeout time.Duration
	// LeaderWait bounds how long a follower holds a delivery while no
	// leader answers (a takeover) before it answers 503 (see
	// Webhook.FollowLeader); default 20s, well inside the 30s Event Grid
	// waits for an answer.
	LeaderWait time.Duration

	// PublicURL is the endpoint's address as Event Grid reaches it (the
	// Ingress's https://host/path), checked every ProbeInterval with the
	// abuse-protection handshake, which a replica of this webhook must
	// answer: a path that breaks (the Ingress, its certificate, DNS) takes
	// the source down, even on an estate where nothing changes. Empty: no
	// probe.
	PublicURL string
	// ProbeInterval is how often PublicURL is checked
	// (DefaultProbeInterval when 0).
	ProbeInterval time.Duration
	// ProbeClient sends the probes (a client with a timeout when nil).
	ProbeClient *http.Client
}

// Validate reports what makes the configuration unusable, without reading
// any file.
func (c Config) Validate() error {
	var errs []error
	if c.BindAddress == "" {
		errs = append(errs, errors.New("eventgrid: BindAddress is empty: give the listener's address, e.g. :9443"))
	}
	if c.Path != "" && !strings.HasPrefix(c.Path, "/") {
		errs = append(errs, fmt.Errorf("eventgrid: Path %q does not begin with /", c.Path))
	}
	if (c.TenantID == "") != (c.Audience == "") {
		errs = append(errs, errors.New("eventgrid: bearer tokens need both TenantID and Audience (the Entra application ID or URI)"))
	}
	if c.SecretFile == "" && c.TenantID == "" && c.Audience == "" {
		errs = append(errs, errors.New("eventgrid: no authentication configured: set SecretFile (a shared secret in the delivery URL), "+
			"TenantID and Audience (Entra ID bearer tokens), or both"))
	}
	if err := c.validateCallers(); err != nil {
		errs = append(errs, err)
	}
	if c.Authority != "" {
		if u, err := url.Parse(c.Authority); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("eventgrid: Authority %q is not an http(s) URL", c.Authority))
		}
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
			errs = append(errs, fmt.Errorf("eventgrid: PublicURL %q is not an http(s) URL without a query (the probe needs no key)", c.PublicURL))
		}
	}
	if c.MaxBodyBytes < 0 || c.MaxAge < 0 || c.DuplicateIDs < 0 || c.ShutdownTimeout < 0 || c.AuthorityTimeout < 0 || c.LeaderWait < 0 || c.ProbeInterval < 0 {
		errs = append(errs, errors.New("eventgrid: MaxBodyBytes, MaxAge, DuplicateIDs, ShutdownTimeout, AuthorityTimeout, LeaderWait and ProbeInterval must not be negative (0 takes the default)"))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with its zero fields set to the defaults.
func (c Config) withDefaults() Config {
	c.Path = or(c.Path, DefaultPath)
	c.Authority = strings.TrimSuffix(or(c.Authority, DefaultAuthority), "/")
	c.MaxBodyBytes = or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.MaxAge = or(c.MaxAge, DefaultMaxAge)
	c.DuplicateIDs = or(c.DuplicateIDs, DefaultDuplicateIDs)
	c.ShutdownTimeout = or(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.AuthorityTimeout = or(c.AuthorityTimeout, DefaultAuthorityTimeout)
	c.LeaderWait = or(c.LeaderWait, DefaultLeaderWait)
	c.ProbeInterval = or(c.ProbeInterval, DefaultProbeInterval)
	if c.ProbeClient == nil {
		c.ProbeClient = &http.Client{Timeout: probeTimeout}
	}
	if c.AuthorityClient == nil {
		c.AuthorityClient = http.DefaultClient
	}
	if c.TenantID != "" && len(c.AllowedCallers) == 0 {
		c.AllowedCallers = DefaultCallers(c.Authority)
	}
	return c
}

// or returns v, or def when v is the zero value.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// issuer is the v2.0 issuer of the tenant's tokens, also the base of its
// discovery document.
func (c Config) issuer() string { return c.Authority + "/" + c.TenantID + "/v2.0" }

// issuers are the token issuers accepted, exactly.
func (c Config) issuers() []string {
	if c.AcceptV1Issuer {
		return []string{c.issuer(), "https://sts.windows.net/" + c.TenantID + "/"}
	}
	return []string{c.issuer()}
}
