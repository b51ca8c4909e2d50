package eventgrid

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// EventGridAppID is the application ID of Azure Event Grid
// (Microsoft.EventGrid) in Azure's public cloud: the caller of the tokens
// it presents to an Entra ID-protected webhook, and what
// Config.AllowedCallers defaults to. Microsoft's sample script "Secure
// WebHook delivery with Microsoft Entra Application in Azure Event Grid"
// (https://learn.microsoft.com/azure/event-grid/scripts/powershell-webhook-secure-delivery-microsoft-entra-app,
// which "Deliver events to Microsoft Entra protected endpoints",
// https://learn.microsoft.com/azure/event-grid/secure-webhook-delivery,
// runs) gives it as "Azure Public Cloud", noting that the ID differs
// between clouds.
const EventGridAppID = "4962773b-9cdb-44cf-a8bf-237846a00ab7"

// EventGridGovernmentAppID is Event Grid's application ID in Azure
// Government, from the same script ("Azure Government Cloud").
const EventGridGovernmentAppID = "54316b56-3481-47f9-8f30-0300f5542a7b"

// governmentAuthority is Azure Government's Entra ID authority.
const governmentAuthority = "login.microsoftonline.us"

// DefaultCallers is what Config.AllowedCallers defaults to: Event Grid's
// own application in the cloud of the authority (Azure Government's for
// https://login.microsoftonline.us, else the public cloud's). Other
// clouds' Event Grid IDs are not published there: give AllowedCallers.
func DefaultCallers(authority string) []string {
	if u, err := url.Parse(authority); err == nil && strings.EqualFold(u.Hostname(), governmentAuthority) {
		return []string{EventGridGovernmentAppID}
	}
	return []string{EventGridAppID}
}

// errCallerNotAllowed marks a valid token obtained by an application that
// is not in Config.AllowedCallers.
var errCallerNotAllowed = errors.New("eventgrid: the token's caller application is not allowed")

// appIDPattern is the form of an Entra application (client) ID.
var appIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// validateCallers checks that every allowed caller is an application ID,
// and that there are bearer tokens to check them in.
func (c Config) validateCallers() error {
	if len(c.AllowedCallers) == 0 {
		return nil
	}
	var errs []error
	if c.TenantID == "" {
		errs = append(errs, errors.New("eventgrid: AllowedCallers need Entra ID bearer tokens (TenantID and Audience)"))
	}
	for _, id := range c.AllowedCallers {
		if !appIDPattern.MatchString(id) {
			errs = append(errs, fmt.Errorf("eventgrid: allowed caller %q is not an application (client) ID such as %s", id, EventGridAppID))
		}
	}
	return errors.Join(errs...)
}

// callerClaims are the claims that name the application that obtained a
// token.
type callerClaims struct {
	Ver   string `json:"ver"`
	AppID string `json:"appid"`
	Azp   string `json:"azp"`
}

// caller returns the application that obtained the token, and the claim
// that names it: azp in a v2.0 token, appid in a v1.0 one, as its ver
// claim says; without a ver, appid if present, else azp.
func (c callerClaims) caller() (id, claim string) {
	switch {
	case c.Ver == "2.0":
		return c.Azp, "azp"
	case c.Ver == "1.0" || c.AppID != "":
		return c.AppID, "appid"
	}
	return c.Azp, "azp"
}

// checkCaller returns nil when allowed is empty (no bearer tokens: see
// Config.withDefaults) or names the application that obtained tok (compared without regard to case), else an
// errCallerNotAllowed that names the claim and its value (an application
// ID, no secret).
func checkCaller(tok *oidc.IDToken, allowed []string) error {
	if len(allowed) == 0 {
		return nil
	}
	var c callerClaims
	if err := tok.Claims(&c); err != nil {
		return err
	}
	id, claim := c.caller()
	if id == "" {
		return fmt.Errorf("%w: a version %q token without the %s claim", errCallerNotAllowed, c.Ver, claim)
	}
	if !slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, id) }) {
		return fmt.Errorf("%w: %s %s", errCallerNotAllowed, claim, id)
	}
	return nil
}
