package benchkit

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/testenv"
)

// StartControlPlane starts a kube-apiserver and etcd (internal/testenv) and
// makes a temporary directory (named after pattern, as os.MkdirTemp) for
// the benchmark's files. StopControlPlane undoes both.
func StartControlPlane(pattern string) (env *testenv.Env, dir string, err error) {
	dir, err = os.MkdirTemp("", pattern)
	if err != nil {
		return nil, "", err
	}
	Logf("starting kube-apiserver and etcd (internal/testenv)")
	env, err = testenv.New()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	return env, dir, nil
}

// StopControlPlane stops the control plane and removes the temporary
// directory.
func StopControlPlane(env *testenv.Env, dir string) {
	if err := env.Stop(); err != nil {
		Logf("stopping the control plane: %v", err)
	}
	_ = os.RemoveAll(dir)
}

// WriteKubeconfig writes the control plane's kubeconfig into dir for
// `tagsync run --kubeconfig`.
func WriteKubeconfig(env *testenv.Env, dir string) (string, error) {
	return WriteSecret(dir, "kubeconfig", string(env.KubeConfig))
}

// WriteSecret writes a file only its owner can read into dir and returns
// its path.
func WriteSecret(dir, name, content string) (string, error) {
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, []byte(content), 0o600)
}

// StartARM starts armsim on loopback over HTTPS (its CA in dir) with the
// test service principal (armsimtest.ClientID) able to log in; opts sets
// the rest (throttling, request log).
func StartARM(dir string, opts armsim.Options) (*armsim.Server, error) {
	opts.TLS = true
	opts.CADir = dir
	opts.ClientSecrets = map[string]string{armsimtest.ClientID: armsimtest.ClientSecret}
	s, err := armsim.New(opts)
	if err != nil {
		return nil, err
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return s, nil
}

// AzureFlags writes the service principal's secret into dir and returns the
// `tagsync run` flags that point the Azure provider at armsim with a
// client-secret login.
func AzureFlags(s *armsim.Server, dir string) ([]string, error) {
	secret, err := WriteSecret(dir, "client-secret", armsimtest.ClientSecret)
	if err != nil {
		return nil, err
	}
	return []string{
		"--azure-arm-endpoint", s.URL(),
		"--azure-authority-host", s.URL(),
		"--azure-ca-file", s.CAFile(),
		"--azure-auth-mode", "client-secret",
		"--azure-tenant-id", s.TenantID(),
		"--azure-client-id", armsimtest.ClientID,
		"--azure-client-secret-file", secret,
	}, nil
}

// AWSFlags writes moto's secret access key into dir and returns the
// `tagsync run` flags that point the AWS provider at moto with static
// credentials.
func AWSFlags(m *testenv.Moto, dir string) ([]string, error) {
	secret, err := WriteSecret(dir, "aws-secret", testenv.MotoSecretAccessKey)
	if err != nil {
		return nil, err
	}
	return []string{
		"--aws-region", testenv.MotoRegion,
		"--aws-endpoint", m.URL,
		"--aws-access-key-id", testenv.MotoAccessKeyID,
		"--aws-secret-access-key-file", secret,
	}, nil
}

// ARMTally is armsim's counts of a phase, classified.
type ARMTally struct {
	// Discovery counts Resource Graph queries (one per page).
	Discovery int `json:"discovery"`
	// Reads counts every read (ARM's GET bucket), Discovery included.
	Reads int `json:"reads"`
	// Writes counts every other call but identity requests.
	Writes    int            `json:"writes"`
	Identity  int            `json:"identityRequests"`
	Throttled int            `json:"throttled429"`
	ByOp      map[string]int `json:"byOperation"`
}

// TallyARM classifies armsim's call counts.
func TallyARM(c armsim.Calls) ARMTally {
	t := ARMTally{ByOp: map[string]int{}}
	for _, op := range c.Ops() {
		n := c.Count(op)
		t.ByOp[op] = n
		t.Throttled += c.CountStatus(op, http.StatusTooManyRequests)
		switch {
		case strings.HasPrefix(op, "Identity."):
			t.Identity += n
		case op == "ResourceGraph.Resources":
			t.Discovery += n
			t.Reads += n
		case strings.Contains(op, ".Get") || strings.Contains(op, ".List") || strings.HasPrefix(op, "Operations."):
			t.Reads += n
		default:
			t.Writes += n
		}
	}
	return t
}

// AzureProvider builds the Azure provider on armsim s as `tagsync run`
// does with no tuning flags but --azure-subscription sub (may be empty): a client-secret credential against armsim's
// authority, a client trusting its CA (a clone of the default transport,
// no client timeout), the default read cache TTL, client-side budget,
// retries and polling, and metrics on controller-runtime's registry.
func AzureProvider(ctx context.Context, s *armsim.Server, sub string) (*azure.Provider, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: s.CertPool(), MinVersion: tls.VersionTLS12}
	hc := &http.Client{Transport: tr}
	set := &azure.Settings{Config: azure.Config{
		ARMEndpoint:         s.URL(),
		DefaultSubscription: sub,
		HTTPClient:          hc,
		Auth: azure.AuthConfig{
			Mode:          azure.AuthClientSecret,
			TenantID:      s.TenantID(),
			ClientID:      armsimtest.ClientID,
			ClientSecret:  azure.Secret(armsimtest.ClientSecret),
			AuthorityHost: s.URL(),
			HTTPClient:    hc,
		},
	}, Options: []azure.Option{azure.WithWriteMethod(azure.WriteTagsAPI), azure.WithCacheTTL(azure.DefaultCacheTTL)}}
	if err := set.Complete(); err != nil {
		return nil, err
	}
	p, err := set.NewProvider(ctx, cloud.ProviderOptions{Registerer: crmetrics.Registry})
	if err != nil {
		return nil, err
	}
	return p.(*azure.Provider), nil
}
