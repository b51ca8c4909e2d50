package aws

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tagsync/tagsync/internal/cloud/cloudtest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// moto is the moto_server every test of the package shares. Tests keep
// apart by account: each sends its own x-moto-account-id header (moto keeps
// resources per account and region), so they run in parallel without
// Reset.
var moto *testenv.Moto

// TestMain starts the shared moto_server. A missing moto_server fails the
// package (testenv.NewMoto says to run `make tools`), never skips it.
func TestMain(m *testing.M) {
	// The tests send through their own *http.Client (account header,
	// failure injection), which the SDK cannot give a custom CA bundle;
	// moto on loopback needs none.
	if err := os.Unsetenv("AWS_CA_BUNDLE"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var err error
	moto, err = testenv.NewMoto()
	if err != nil {
		fmt.Fprintf(os.Stderr, "aws tests need moto_server: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := moto.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping moto_server: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// testAMI is one of the AMIs moto knows in every region.
const testAMI = "ami-12c6146b"

// accounts hands out a fresh moto account per test.
var accounts atomic.Int64

// newAccount returns an account ID no other test uses.
func newAccount() string { return fmt.Sprintf("%012d", 200000000000+accounts.Add(1)) }

// testTransport sends requests to moto as one account and can answer some
// itself (failure injection).
type testTransport struct {
	account string
	base    http.RoundTripper

	mu     sync.Mutex
	inject func(r *http.Request, op, region string) *http.Response
}

// RoundTrip adds the account header, then answers with inject's response
// or moto's.
func (t *testTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-moto-account-id", t.account)
	t.mu.Lock()
	inject := t.inject
	t.mu.Unlock()
	if inject != nil {
		op, err := operationOf(r)
		if err != nil {
			return nil, err
		}
		if resp := inject(r, op, regionOf(r)); resp != nil {
			resp.Request = r
			return resp, nil
		}
	}
	return t.base.RoundTrip(r)
}

// setInject installs (nil: removes) a failure injection.
func (t *testTransport) setInject(f func(r *http.Request, op, region string) *http.Response) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inject = f
}

// operationOf returns a request's operation: the JSON target's suffix, or
// the Action of an EC2 query body (which it reads and restores).
func operationOf(r *http.Request) (string, error) {
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		_, op, _ := strings.Cut(target, ".")
		return op, nil
	}
	if r.Body == nil {
		return "", nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return "", err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	v, _ := url.ParseQuery(string(body))
	return v.Get("Action"), nil
}

// credentialScope matches the region in a SigV4 Authorization header.
var credentialScope = regexp.MustCompile(`Credential=[^/]+/[0-9]+/([^/]+)/`)

// regionOf returns the region a request is signed for.
func regionOf(r *http.Request) string {
	if m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		return m[1]
	}
	return ""
}

// ec2Error is an EC2 error answer.
func ec2Error(status int, code, msg string) *http.Response {
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>injected</RequestID></Response>`, code, msg)
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{"Content-Type": {"text/xml"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

// taggingError is a Resource Groups Tagging API error answer.
func taggingError(status int, code, msg string) *http.Response {
	body := fmt.Sprintf(`{"__type":%q,"Message":%q}`, code, msg)
	return &http.Response{StatusCode: status, Status: http.StatusText(status),
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.1"}, "X-Amzn-Errortype": {code}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

// env is one test's account at the shared moto, a Provider for it (own
// metrics registry, own throttle gates) and seeding helpers.
type env struct {
	t       *testing.T
	ctx     context.Context
	account string
	tr      *testTransport
	http    *http.Client
	reg     *prometheus.Registry
	gates   *ThrottleGates
	p       *Provider
}

// hermetic are LoadDefaultConfig options that keep the developer's AWS
// setup out: no shared files, no instance metadata.
func hermetic() []func(*config.LoadOptions) error {
	return []func(*config.LoadOptions) error{
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
		config.WithEC2IMDSClientEnableState(imds.ClientDisabled),
	}
}

// motoConfig is a Config aimed at the shared moto with static keys.
func motoConfig() Config {
	return Config{Region: testenv.MotoRegion, Endpoint: moto.URL, AccessKeyID: testenv.MotoAccessKeyID, SecretAccessKey: testenv.MotoSecretAccessKey}
}

// newEnv returns a fresh account and a Provider for it; opts override.
// steppedClock is a clock that starts at start and moves only when the test
// adds to now (nanoseconds), and the option that gives it to a provider.
func steppedClock(start time.Time) (now *atomic.Int64, clock Option) {
	now = new(atomic.Int64)
	now.Store(start.UnixNano())
	return now, WithClock(func() time.Time { return time.Unix(0, now.Load()) })
}

func newEnv(t *testing.T, opts ...Option) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, account: newAccount(), reg: prometheus.NewRegistry(), gates: NewThrottleGates()}
	e.tr = &testTransport{account: e.account, base: http.DefaultTransport}
	e.http = &http.Client{Transport: e.tr}
	e.p = e.newProvider(motoConfig(), opts...)
	return e
}

// newProvider builds another Provider for the env's account.
func (e *env) newProvider(cfg Config, opts ...Option) *Provider {
	e.t.Helper()
	all := append([]Option{
		WithRegisterer(e.reg),
		WithHTTPClient(e.http),
		WithThrottleGates(e.gates),
		WithLoadOptions(hermetic()...),
	}, opts...)
	p, err := NewProvider(e.ctx, cfg, all...)
	if err != nil {
		e.t.Fatalf("NewProvider: %v", err)
	}
	return p
}

// ec2 returns a seeding client of region (not counted by the Provider).
func (e *env) ec2(region string) *ec2.Client {
	cfg := moto.Config.Copy()
	cfg.HTTPClient = e.http
	return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = region })
}

// arn is the ARN moto gives an EC2 resource of the env's account.
func (e *env) arn(region, typ, id string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:%s/%s", region, e.account, typ, id)
}

// tagSpec tags a resource of type rt at creation with t.
func tagSpec(rt ec2types.ResourceType, t map[string]string) []ec2types.TagSpecification {
	if len(t) == 0 {
		return nil
	}
	spec := ec2types.TagSpecification{ResourceType: rt}
	for k, v := range t {
		spec.Tags = append(spec.Tags, ec2types.Tag{Key: sdkaws.String(k), Value: sdkaws.String(v)})
	}
	return []ec2types.TagSpecification{spec}
}

// instances runs n instances in region tagged t and returns their ARNs.
func (e *env) instances(region string, n int, t map[string]string) []string {
	e.t.Helper()
	out, err := e.ec2(region).RunInstances(e.ctx, &ec2.RunInstancesInput{
		ImageId: sdkaws.String(testAMI), MinCount: sdkaws.Int32(int32(n)), MaxCount: sdkaws.Int32(int32(n)),
		InstanceType: ec2types.InstanceTypeT3Micro, TagSpecifications: tagSpec(ec2types.ResourceTypeInstance, t),
	})
	if err != nil {
		e.t.Fatalf("RunInstances in %s: %v", region, err)
	}
	var arns []string
	for _, i := range out.Instances {
		arns = append(arns, e.arn(region, "instance", sdkaws.ToString(i.InstanceId)))
	}
	return arns
}

// volumes creates n volumes in region tagged t and returns their ARNs.
func (e *env) volumes(region string, n int, t map[string]string) []string {
	e.t.Helper()
	var arns []string
	for range n {
		out, err := e.ec2(region).CreateVolume(e.ctx, &ec2.CreateVolumeInput{
			AvailabilityZone: sdkaws.String(region + "a"), Size: sdkaws.Int32(1),
			TagSpecifications: tagSpec(ec2types.ResourceTypeVolume, t),
		})
		if err != nil {
			e.t.Fatalf("CreateVolume in %s: %v", region, err)
		}
		arns = append(arns, e.arn(region, "volume", sdkaws.ToString(out.VolumeId)))
	}
	return arns
}

// tagsOf reads a resource's tags with the seeding client.
func (e *env) tagsOf(id string) map[string]string {
	e.t.Helper()
	ref, err := e.p.parseRef(id)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := e.ec2(ref.region).DescribeTags(e.ctx, &ec2.DescribeTagsInput{
		Filters: []ec2types.Filter{{Name: sdkaws.String("resource-id"), Values: []string{ref.ec2ID}}},
	})
	if err != nil {
		e.t.Fatalf("DescribeTags %s: %v", id, err)
	}
	got := map[string]string{}
	for _, td := range out.Tags {
		got[sdkaws.ToString(td.Key)] = sdkaws.ToString(td.Value)
	}
	return got
}

// setTags tags resources with the seeding client.
func (e *env) setTags(t map[string]string, ids ...string) {
	e.t.Helper()
	byRegion := map[string][]string{}
	for _, id := range ids {
		ref, err := e.p.parseRef(id)
		if err != nil {
			e.t.Fatal(err)
		}
		byRegion[ref.region] = append(byRegion[ref.region], ref.ec2ID)
	}
	var tl []ec2types.Tag
	for k, v := range t {
		tl = append(tl, ec2types.Tag{Key: sdkaws.String(k), Value: sdkaws.String(v)})
	}
	for region, rids := range byRegion {
		if _, err := e.ec2(region).CreateTags(e.ctx, &ec2.CreateTagsInput{Resources: rids, Tags: tl}); err != nil {
			e.t.Fatalf("CreateTags: %v", err)
		}
	}
}

// ec2ID returns the resource ID at the end of an ARN.
func ec2ID(a string) string { return a[strings.LastIndex(a, "/")+1:] }

// sorted returns a sorted copy.
func sorted(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}

// counterValue reads a counter of the env's registry with the given labels.
func (e *env) counterValue(name string, labels map[string]string) float64 {
	e.t.Helper()
	return cloudtest.MetricSum(e.t, e.reg, name, labels)
}
