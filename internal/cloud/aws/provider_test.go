package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// TestNameAndRules: the provider is "aws" with AWS's tag rules.
func TestNameAndRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if e.p.Name() != "aws" || e.p.Rules().MaxTags != TagRules.MaxTags || e.p.Rules().CaseInsensitive {
		t.Fatalf("Name %q, Rules %+v", e.p.Name(), e.p.Rules())
	}
}

// TestConfigRedacted: static credentials appear in no rendering of a
// Config or Provider.
func TestConfigRedacted(t *testing.T) {
	t.Parallel()
	const key, secret, token = "AKIAEXAMPLEKEYID1234", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "session-token-value"
	cfg := Config{Region: "eu-west-1", Endpoint: moto.URL, AccessKeyID: key, SecretAccessKey: secret, SessionToken: token}
	e := newEnv(t)
	p := e.newProvider(cfg)
	j, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	renderings := []string{string(j), cfg.String()}
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		renderings = append(renderings, fmt.Sprintf(f, cfg), fmt.Sprintf(f, &cfg), fmt.Sprintf(f, p))
	}
	for _, r := range renderings {
		for _, s := range []string{key, secret, token} {
			if strings.Contains(r, s) {
				t.Fatalf("%q shows a credential", r)
			}
		}
	}
	if !strings.Contains(cfg.String(), "eu-west-1") || !strings.Contains(cfg.String(), cloud.Redacted) {
		t.Fatalf("String() = %s, want the region and [redacted]", cfg)
	}
	if cfg.SecretAccessKey.Reveal() != secret {
		t.Fatal("Reveal lost the secret")
	}
}

// cleanAWSEnv clears every variable the SDK's configuration reads, points
// the shared files at nothing and turns instance metadata off.
func cleanAWSEnv(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{EnvRegion, EnvDefaultRegion, EnvProfile, "AWS_DEFAULT_PROFILE", EnvAccessKeyID, EnvSecretAccessKey, EnvSessionToken,
		EnvRoleARN, EnvWebIdentityTokenFile, "AWS_ROLE_SESSION_NAME", EnvContainerCredsFullURI, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", EnvContainerAuthTokenFile, "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL_EC2", "AWS_CA_BUNDLE"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv(EnvEC2MetadataDisabled, "true")
}

// TestNewProviderErrors: configuration errors name the flags and
// variables to set.
func TestNewProviderErrors(t *testing.T) {
	cleanAWSEnv(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"no region", Config{}, []string{"no AWS region", FlagRegion, EnvRegion}},
		{"key without secret", Config{Region: "us-east-1", AccessKeyID: "AKIA"}, []string{FlagAccessKeyID, FlagSecretAccessKeyFile}},
		{"secret without key", Config{Region: "us-east-1", SecretAccessKey: "s"}, []string{FlagAccessKeyID}},
		{"token without keys", Config{Region: "us-east-1", SessionToken: "s"}, []string{FlagSessionTokenFile}},
		{"bad endpoint", Config{Region: "us-east-1", Endpoint: "localhost:5000"}, []string{FlagEndpoint}},
		{"missing profile", Config{Region: "us-east-1", Profile: "nope"}, []string{`"nope"`, FlagProfile, EnvProfile}},
	} {
		_, err := NewProvider(ctx, c.cfg, WithRegisterer(prometheus.NewRegistry()))
		if err == nil {
			t.Errorf("%s: NewProvider succeeded", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v does not say %s", c.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "AKIA") {
			t.Errorf("%s: %v shows the key", c.name, err)
		}
	}
	// The region may come from the environment.
	t.Setenv(EnvRegion, "eu-central-1")
	p, err := NewProvider(ctx, Config{}, WithRegisterer(prometheus.NewRegistry()))
	if err != nil || p.Region() != "eu-central-1" {
		t.Fatalf("NewProvider with AWS_REGION: %v, %v", p, err)
	}
}

// signedWith records the operations that reach moto and the access keys
// GetResources requests (the Provider's, not the seeding client's) are
// signed with.
type signedWith struct {
	mu   sync.Mutex
	keys map[string]bool
	ops  map[string]bool
}

// hook returns an injection that records and lets every request pass.
func (s *signedWith) hook() func(*http.Request, string, string) *http.Response {
	s.keys, s.ops = map[string]bool{}, map[string]bool{}
	return func(r *http.Request, op, _ string) *http.Response {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.ops[op] = true
		if _, rest, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok && op == "GetResources" {
			key, _, _ := strings.Cut(rest, "/")
			s.keys[key] = true
		}
		return nil
	}
}

// only reports whether GetResources requests were all signed with key.
func (s *signedWith) only(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys) == 1 && s.keys[key]
}

// sawOp reports whether a request of op passed.
func (s *signedWith) sawOp(op string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ops[op]
}

// discoverWithChain finds an instance through a provider with no static
// keys (the SDK's default chain) and returns how its requests were signed.
func discoverWithChain(t *testing.T, e *env) *signedWith {
	t.Helper()
	s := &signedWith{}
	e.tr.setInject(s.hook())
	discoverOne(t, e, e.newProvider(Config{Region: "us-east-1", Endpoint: moto.URL}))
	return s
}

// setenvFile writes content to a temporary file and points the
// environment variable env at it for the test.
func setenvFile(t *testing.T, env, content string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), strings.ToLower(env))
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(env, path)
}

// discoverOne tags an instance and finds it through p.
func discoverOne(t *testing.T, e *env, p *Provider) {
	t.Helper()
	want := e.instances("us-east-1", 1, map[string]string{"cred": "test"})[0]
	d, err := p.Discover(e.ctx, []cloud.Classifier{{Name: "cred", Value: "test"}}, cloud.DiscoverOptions{})
	if err != nil || len(d.Failed) != 0 || len(d.Resources) != 1 || d.Resources[0].ID != want {
		t.Fatalf("Discover = %+v, %v; want %s", d, err, want)
	}
}

// TestCredentialsFromEnvironment: without static keys the default chain
// takes AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
func TestCredentialsFromEnvironment(t *testing.T) {
	cleanAWSEnv(t)
	t.Setenv(EnvAccessKeyID, "AKIAFROMENVIRONMENT1")
	t.Setenv(EnvSecretAccessKey, "env-secret")
	e := newEnv(t)
	s := discoverWithChain(t, e)
	if !s.only("AKIAFROMENVIRONMENT1") {
		t.Fatalf("requests were signed with %v, want the environment's key", s.keys)
	}
}

// TestCredentialsWebIdentity: IRSA — AWS_ROLE_ARN and
// AWS_WEB_IDENTITY_TOKEN_FILE make the chain call STS
// AssumeRoleWithWebIdentity (moto's, through AWS_ENDPOINT_URL_STS) and
// sign with the role's temporary keys.
func TestCredentialsWebIdentity(t *testing.T) {
	cleanAWSEnv(t)
	e := newEnv(t)
	setenvFile(t, EnvWebIdentityTokenFile, "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGFnc3luYzp0YWdzeW5jIn0.c2ln")
	t.Setenv(EnvRoleARN, "arn:aws:iam::"+e.account+":role/tagsync")
	t.Setenv("AWS_ENDPOINT_URL_STS", moto.URL)
	s := discoverWithChain(t, e)
	if !s.sawOp("AssumeRoleWithWebIdentity") {
		t.Fatalf("no AssumeRoleWithWebIdentity call (operations seen: %v)", s.ops)
	}
	if len(s.keys) != 1 || s.keys["testing"] || s.keys[""] {
		t.Fatalf("GetResources was signed with %v, want the role's temporary key", s.keys)
	}
	t.Logf("signed with the role's key %v", s.keys)
}

// TestCredentialsPodIdentity: EKS Pod Identity — the chain fetches keys
// from AWS_CONTAINER_CREDENTIALS_FULL_URI with the token of
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE and signs with them.
func TestCredentialsPodIdentity(t *testing.T) {
	cleanAWSEnv(t)
	e := newEnv(t)
	const podToken = "pod-identity-token"
	var asked sync.Once
	var gotAuth string
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Do(func() { gotAuth = r.Header.Get("Authorization") })
		_ = json.NewEncoder(w).Encode(map[string]string{
			"AccessKeyId": "ASIAPODIDENTITYKEY01", "SecretAccessKey": "pod-secret", "Token": "pod-session",
			"Expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		})
	}))
	t.Cleanup(agent.Close)
	setenvFile(t, EnvContainerAuthTokenFile, podToken)
	t.Setenv(EnvContainerCredsFullURI, agent.URL+"/v1/credentials")
	s := discoverWithChain(t, e)
	if gotAuth != podToken {
		t.Fatalf("the credentials agent got Authorization %q, want the pod token", gotAuth)
	}
	if !s.only("ASIAPODIDENTITYKEY01") {
		t.Fatalf("requests were signed with %v, want the pod identity key", s.keys)
	}
}

// TestMetricsCountEveryAttempt: AWS requests are counted per attempt (the
// shared cloud.RequestMetrics, provider="aws"), SDK retries included.
func TestMetricsCountEveryAttempt(t *testing.T) {
	t.Parallel()
	// Counted per attempt: a 500 answered first is retried and both count.
	e := newEnv(t, WithLoadOptions(config.WithRetryer(func() sdkaws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.Backoff = noBackoff{} })
	})))
	id := e.instances("us-east-1", 1, nil)[0]
	var failed sync.Once
	e.tr.setInject(func(_ *http.Request, op, _ string) *http.Response {
		var resp *http.Response
		if op == "CreateTags" {
			failed.Do(func() { resp = ec2Error(http.StatusInternalServerError, "InternalError", "try again") })
		}
		return resp
	})
	if res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: []string{id}, Patch: tags.Patch{Set: tags.Set{"a": "b"}}}}, nil); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if got := e.p.Calls(); got["ec2:CreateTags"] != 2 || len(got) != 1 {
		t.Fatalf("calls = %v, want 2 CreateTags (one retried)", got)
	}
	for _, c := range []struct {
		code string
		want float64
	}{{"500", 1}, {"200", 1}} {
		if got := e.counterValue(cloud.MetricRequests, map[string]string{"provider": "aws", "operation": "ec2:CreateTags", "code": c.code}); got != c.want {
			t.Errorf("requests{CreateTags,%s} = %v, want %v", c.code, got, c.want)
		}
	}
	if got := e.counterValue(cloud.MetricRequestDuration, map[string]string{"provider": "aws", "operation": "ec2:CreateTags"}); got != 2 {
		t.Errorf("duration samples of CreateTags = %v, want 2", got)
	}
}
