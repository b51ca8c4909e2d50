package armsim_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

const rg = "MC_rg_aks_eastus"

// estate is the IDs of the seeded test estate.
type estate struct {
	uniform, flex, flexVM0, flexVM1, standalone, avsetVM, avset string
	disk, nic, lb, pip, storage, dns                            string
	instances                                                   []string
}

// seedEstate creates an AKS-like resource group through the Go API.
func seedEstate(t testing.TB, s *armsim.Server, sub string) estate {
	t.Helper()
	var e estate
	var err error
	must := func(id string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	e.uniform = must(s.CreateScaleSet(sub, rg, armsim.ScaleSet{Name: "aks-nodepool1-12345678-vmss",
		Tags: map[string]string{"env": "prod", "team": "a"}, Instances: []string{"0", "1", "2"}}))
	e.flex = must(s.CreateScaleSet(sub, rg, armsim.ScaleSet{Name: "aks-flex-vmss", Mode: armsim.Flexible}))
	e.flexVM0 = must(s.CreateVM(sub, rg, armsim.VirtualMachine{Name: "flex-0", ScaleSet: "aks-flex-vmss", Tags: map[string]string{"pool": "flex"}}))
	e.flexVM1 = must(s.CreateVM(sub, rg, armsim.VirtualMachine{Name: "flex-1", ScaleSet: e.flex}))
	e.standalone = must(s.CreateVM(sub, rg, armsim.VirtualMachine{Name: "standalone-vm", Tags: map[string]string{"role": "db"}}))
	e.avsetVM = must(s.CreateVM(sub, rg, armsim.VirtualMachine{Name: "as-vm", AvailabilitySet: "as1"}))
	e.avset = "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Compute/availabilitySets/as1"
	owned := map[string]string{"kubernetes.io_cluster.aks": "owned"}
	gen := func(typ, name string) string {
		return must(s.CreateResource(sub, rg, armsim.Resource{Type: typ, Name: name, Tags: owned}))
	}
	e.disk = gen(armsim.TypeDisk, "osdisk-0")
	e.nic = gen(armsim.TypeNetworkInterface, "nic-0")
	e.lb = gen(armsim.TypeLoadBalancer, "kubernetes")
	e.pip = gen(armsim.TypePublicIP, "pip-0")
	e.storage = gen(armsim.TypeStorageAccount, "aksstorage")
	e.dns = gen(armsim.TypeDNSZone, "example.com")
	for _, id := range []string{"0", "1", "2"} {
		e.instances = append(e.instances, e.uniform+"/virtualMachines/"+id)
	}
	_ = err
	return e
}

// transports runs f against an HTTPS and a plain-HTTP armsim.
func transports(t *testing.T, f func(t *testing.T, env *armsimtest.Env), opts ...armsimtest.Option) {
	for _, tc := range []struct {
		name string
		opts []armsimtest.Option
	}{
		{"https", opts},
		{"http", append([]armsimtest.Option{armsimtest.WithPlainHTTP()}, opts...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f(t, armsimtest.Start(t, tc.opts...))
		})
	}
}

// newClient builds an SDK client of the env's subscription.
func newClient[C any](t testing.TB, env *armsimtest.Env, build func(string, azcore.TokenCredential, *arm.ClientOptions) (C, error)) C {
	t.Helper()
	c, err := build(env.SubscriptionID, env.Credential, env.ClientOptions)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func vmClient(t testing.TB, env *armsimtest.Env) *armcompute.VirtualMachinesClient {
	return newClient(t, env, armcompute.NewVirtualMachinesClient)
}

func vmssClient(t testing.TB, env *armsimtest.Env) *armcompute.VirtualMachineScaleSetsClient {
	return newClient(t, env, armcompute.NewVirtualMachineScaleSetsClient)
}

func vmssVMClient(t testing.TB, env *armsimtest.Env) *armcompute.VirtualMachineScaleSetVMsClient {
	return newClient(t, env, armcompute.NewVirtualMachineScaleSetVMsClient)
}

func tagsClient(t testing.TB, env *armsimtest.Env) *armresources.TagsClient {
	return newClient(t, env, armresources.NewTagsClient)
}

func resourcesClient(t testing.TB, env *armsimtest.Env) *armresources.Client {
	return newClient(t, env, armresources.NewClient)
}

// noRetry returns a copy of the env's client options without retries.
func noRetry(env *armsimtest.Env) *arm.ClientOptions {
	o := *env.ClientOptions
	o.Retry = policy.RetryOptions{MaxRetries: -1}
	return &o
}

// ctx is a test context with a generous deadline.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// fastPoll polls LROs quickly.
var fastPoll = &runtime.PollUntilDoneOptions{Frequency: time.Millisecond}

// wantARMError checks err is an ARM error with status and code.
func wantARMError(t testing.TB, err error, status int, code string) *azcore.ResponseError {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("want ARM error %d %s, got %v", status, code, err)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("want %d %s, got %d %s: %v", status, code, re.StatusCode, re.ErrorCode, err)
	}
	return re
}

// rawRequest sends an HTTP request to armsim with a valid token.
func rawRequest(t testing.TB, env *armsimtest.Env, method, path string, body []byte) *http.Response {
	t.Helper()
	tok, err := env.Credential.GetToken(ctx(t), policy.TokenRequestOptions{Scopes: []string{env.Server.URL() + "/.default"}})
	if err != nil {
		t.Fatal(err)
	}
	return rawRequestToken(t, env, method, path, body, "Bearer "+tok.Token)
}

func rawRequestToken(t testing.TB, env *armsimtest.Env, method, path string, body []byte, auth string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, env.Server.URL()+path, bytesReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := env.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func ptr[T any](v T) *T { return &v }

func deref(m map[string]*string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

func ptrMap(m map[string]string) map[string]*string {
	out := map[string]*string{}
	for k, v := range m {
		out[k] = ptr(v)
	}
	return out
}
