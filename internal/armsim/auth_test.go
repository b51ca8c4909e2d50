package armsim_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// staticToken is a credential that returns a fixed token.
type staticToken string

func (s staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: string(s), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func TestUnauthorized(t *testing.T) {
	clock := armsim.NewFakeClock(time.Now())
	env := armsimtest.Start(t, armsimtest.WithClock(clock))
	seedEstate(t, env.Server, env.SubscriptionID)
	path := "/subscriptions/" + env.SubscriptionID + "/resourceGroups/" + rg + "/providers/Microsoft.Compute/virtualMachines/flex-0?api-version=2026-04-01"
	resp := rawRequestToken(t, env, http.MethodGet, path, nil, "")
	var body struct{ Error struct{ Code string } }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusUnauthorized || body.Error.Code != "AuthenticationFailed" {
		t.Errorf("no token: %d %+v %v", resp.StatusCode, body, err)
	}
	if resp.Header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	bogus, err := armcompute.NewVirtualMachinesClient(env.SubscriptionID, staticToken("a.b.c"), noRetry(env))
	if err != nil {
		t.Fatal(err)
	}
	_, err = bogus.Get(ctx(t), rg, "flex-0", nil)
	wantARMError(t, err, http.StatusUnauthorized, "InvalidAuthenticationToken")

	c := vmClient(t, env)
	if _, err := c.Get(ctx(t), rg, "flex-0", nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(armsim.DefaultTokenLifetime + time.Minute)
	_, err = c.Get(ctx(t), rg, "flex-0", nil)
	wantARMError(t, err, http.StatusUnauthorized, "ExpiredAuthenticationToken")
	if n := env.Server.Calls().CountStatus("VirtualMachines.Get", http.StatusUnauthorized); n < 2 {
		t.Errorf("401s counted = %d", n)
	}
}

func TestWrongAudience(t *testing.T) {
	env := armsimtest.Start(t)
	seedEstate(t, env.Server, env.SubscriptionID)
	tok, err := env.Credential.GetToken(ctx(t), policy.TokenRequestOptions{Scopes: []string{"https://vault.azure.net/.default"}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := armcompute.NewVirtualMachinesClient(env.SubscriptionID, staticToken(tok.Token), noRetry(env))
	_, err = c.Get(ctx(t), rg, "flex-0", nil)
	wantARMError(t, err, http.StatusUnauthorized, "InvalidAuthenticationTokenAudience")
}

// getVM proves a credential works end to end.
func getVM(t *testing.T, env *armsimtest.Env, cred azcore.TokenCredential) {
	t.Helper()
	c, err := armcompute.NewVirtualMachinesClient(env.SubscriptionID, cred, env.ClientOptions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx(t), rg, "flex-0", nil); err != nil {
		t.Fatal(err)
	}
}

func TestAzidentityCredentials(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithOptions(func(o *armsim.Options) {
		o.ClientSecrets = map[string]string{armsimtest.ClientID: armsimtest.ClientSecret, "cert-app": "", "wi-app": ""}
	}))
	seedEstate(t, env.Server, env.SubscriptionID)
	co := env.IdentityClientOptions()
	tenant := env.Server.TenantID()
	t.Run("client secret", func(t *testing.T) {
		getVM(t, env, env.Credential)
		bad, _ := azidentity.NewClientSecretCredential(tenant, armsimtest.ClientID, "wrong",
			&azidentity.ClientSecretCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: true})
		if _, err := bad.GetToken(ctx(t), policy.TokenRequestOptions{Scopes: []string{env.Server.URL() + "/.default"}}); err == nil {
			t.Error("wrong secret accepted")
		}
	})
	t.Run("client certificate", func(t *testing.T) {
		cert, key := testenv.SelfSignedCert(t, "cert-app")
		cred, err := azidentity.NewClientCertificateCredential(tenant, "cert-app", []*x509.Certificate{cert}, key,
			&azidentity.ClientCertificateCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: true})
		if err != nil {
			t.Fatal(err)
		}
		getVM(t, env, cred)
	})
	t.Run("workload identity", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(file, []byte("eyJhbGciOiJub25lIn0.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a3ViZS1zeXN0ZW06dGFnc3luYyJ9.c2ln"), 0o600); err != nil {
			t.Fatal(err)
		}
		cred, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions: co, ClientID: "wi-app", TenantID: tenant, TokenFilePath: file, DisableInstanceDiscovery: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		getVM(t, env, cred)
	})
	// Not parallel: managed identity is configured through the environment.
	t.Run("managed identity", func(t *testing.T) {
		for k, v := range env.Server.ManagedIdentityEnv() {
			t.Setenv(k, v)
		}
		cred, err := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{
			ClientOptions: co, ID: azidentity.ClientID("mi-client"),
		})
		if err != nil {
			t.Fatal(err)
		}
		getVM(t, env, cred)
		if n := env.Server.Calls().Count("Identity.ManagedIdentity"); n == 0 {
			t.Error("managed identity endpoint not used")
		}
	})
}
