package azure

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/tagsync/tagsync/internal/cloud"
)

// Identity is who the provider's credential is, read from the claims of an
// ARM access token. The token itself is never kept.
type Identity struct {
	// TenantID is the Entra ID tenant (tid).
	TenantID string `json:"tenantID"`
	// ClientID is the application or managed identity's client ID (appid
	// or azp).
	ClientID string `json:"clientID,omitempty"`
	// ObjectID is the principal's object ID (oid), the one role
	// assignments name.
	ObjectID string `json:"objectID,omitempty"`
	// Type is the identity type (idtyp: "app", "user"), when the token says.
	Type string `json:"type,omitempty"`
}

// WhoAmI obtains an ARM token through the credential chain the provider
// was built with and returns the identity its claims name.
func (p *Provider) WhoAmI(ctx context.Context) (Identity, error) {
	aud := p.cfg.CloudConfiguration().Services[azcloud.ResourceManager].Audience
	tok, err := p.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{strings.TrimSuffix(aud, "/") + "/.default"}})
	if err != nil {
		return Identity{}, fmt.Errorf("azure: obtaining a token for %s: %w", aud, err)
	}
	return identityOf(tok.Token)
}

// identityOf reads the claims of an access token (unverified: the token
// comes from the identity provider itself).
func identityOf(token string) (Identity, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Identity{}, fmt.Errorf("azure: the access token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return Identity{}, fmt.Errorf("azure: the access token's claims do not decode: %w", err)
	}
	var c struct{ Tid, Oid, AppID, Azp, Idtyp string }
	if err := json.Unmarshal(payload, &c); err != nil {
		return Identity{}, fmt.Errorf("azure: the access token's claims do not decode: %w", err)
	}
	id := Identity{TenantID: c.Tid, ClientID: c.AppID, ObjectID: c.Oid, Type: c.Idtyp}
	if id.ClientID == "" {
		id.ClientID = c.Azp
	}
	return id, nil
}

// Check is one permission check of a login.
type Check struct {
	// Name says what was checked.
	Name string `json:"name"`
	// OK is true when the permission is there.
	OK bool `json:"ok"`
	// Detail says what was found, or what is missing and why tagsync needs it.
	Detail string `json:"detail,omitempty"`
}

// Actions tagsync needs on a subscription (or the resource groups in
// scope), and what for.
var neededActions = []struct{ action, why string }{
	{"Microsoft.Resources/tags/read", "read tags through the Tags API"},
	{"Microsoft.Resources/tags/write", "write tags through the Tags API (built-in role Tag Contributor)"},
	{"Microsoft.Compute/virtualMachines/read", "list the VMs behind nodes (NodeTagSync)"},
	{"Microsoft.Compute/virtualMachineScaleSets/read", "list the scale sets behind nodes (NodeTagSync)"},
	{"Microsoft.Resources/subscriptions/resources/read", "find classified resources with Resource Graph (CloudMetadata; built-in role Reader)"},
}

// CheckAccess checks, with cheap reads, what the credential may do in a
// subscription: the permissions ARM reports for it
// (Microsoft.Authorization/permissions) against the actions tagsync needs,
// and a one-row Resource Graph query.
//
// A subscription ARM does not know, or does not show to this identity
// (404 on the permissions read), fails both checks with one line saying
// so: Resource Graph would answer a query over it with no rows and no
// error, which is no proof of access.
func (p *Provider) CheckAccess(ctx context.Context, subscription string) []Check {
	perms, err := p.permissions(ctx, subscription)
	if errors.Is(err, cloud.ErrNotFound) {
		return []Check{{Name: "subscription " + subscription, Detail: "not found, or not visible to this identity: check the subscription ID " +
			"and that the identity has a role assignment in it"}, {Name: graphCheckName, Detail: "not run: the subscription is not visible"}}
	}
	checks := p.checkPermissions(perms, err)
	return append(checks, p.checkGraph(ctx, subscription))
}

// checkPermissions checks every needed action against the caller's
// permissions on the subscription (or reports why they could not be read).
func (p *Provider) checkPermissions(perms permissionSet, err error) []Check {
	if err != nil {
		return []Check{{Name: "Microsoft.Authorization/permissions/read", Detail: "could not read the permissions: " + describe(err)}}
	}
	out := make([]Check, 0, len(neededActions))
	for _, a := range neededActions {
		c := Check{Name: a.action, OK: perms.allows(a.action), Detail: a.why}
		if !c.OK {
			c.Detail = "missing: needed to " + a.why
		}
		out = append(out, c)
	}
	return out
}

// permissionSet is the permissions ARM reports for a caller at a scope.
type permissionSet struct {
	Value []struct {
		Actions    []string `json:"actions"`
		NotActions []string `json:"notActions"`
	} `json:"value"`
}

// allows reports whether some permission grants action and does not
// exclude it (patterns with "*", case-insensitive, as ARM matches them).
func (s permissionSet) allows(action string) bool {
	for _, v := range s.Value {
		if matchesAny(v.Actions, action) && !matchesAny(v.NotActions, action) {
			return true
		}
	}
	return false
}

// matchesAny reports whether an ARM action pattern matches action.
func matchesAny(patterns []string, action string) bool {
	for _, pat := range patterns {
		re := "(?i)^" + strings.ReplaceAll(regexp.QuoteMeta(pat), `\*`, ".*") + "$"
		if ok, _ := regexp.MatchString(re, action); ok {
			return true
		}
	}
	return false
}

// permissionsAPIVersion is the Microsoft.Authorization permissions API.
const permissionsAPIVersion = "2022-04-01"

// permissions reads the caller's permissions on a subscription through the
// provider's ARM pipeline (its budget, retries and metrics).
func (p *Provider) permissions(ctx context.Context, sub string) (permissionSet, error) {
	client, err := arm.NewClient("tagsync-login", "v1.0.0", p.cred, p.armOpts)
	if err != nil {
		return permissionSet{}, err
	}
	endpoint := p.cfg.CloudConfiguration().Services[azcloud.ResourceManager].Endpoint
	url := strings.TrimSuffix(endpoint, "/") + "/subscriptions/" + sub + "/providers/Microsoft.Authorization/permissions"
	req, err := runtime.NewRequest(ctx, http.MethodGet, url)
	if err != nil {
		return permissionSet{}, err
	}
	q := req.Raw().URL.Query()
	q.Set("api-version", permissionsAPIVersion)
	req.Raw().URL.RawQuery = q.Encode()
	resp, err := client.Pipeline().Do(req)
	if err != nil {
		return permissionSet{}, err
	}
	if !runtime.HasStatusCode(resp, http.StatusOK) {
		return permissionSet{}, p.armErr("azure: read the permissions on subscription "+sub, runtime.NewResponseError(resp))
	}
	var s permissionSet
	return s, runtime.UnmarshalAsJSON(resp, &s)
}

// graphCheckName names the Resource Graph check.
const graphCheckName = "Resource Graph query (Resources | limit 1)"

// checkGraph runs a one-row Resource Graph query over the subscription.
func (p *Provider) checkGraph(ctx context.Context, sub string) Check {
	c := Check{Name: graphCheckName}
	o := *p.armOpts
	client, err := armresourcegraph.NewClient(p.cred, &o)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	_, err = client.Resources(ctx, armresourcegraph.QueryRequest{Query: to.Ptr("Resources | limit 1"), Subscriptions: []*string{to.Ptr(sub)}}, nil)
	if err != nil {
		c.Detail = "failed: " + describe(err)
		return c
	}
	c.OK, c.Detail = true, "find classified resources (CloudMetadata)"
	return c
}
