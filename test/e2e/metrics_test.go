package e2e_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// insecureClient speaks HTTPS without verifying the server: the metrics
// endpoint's default certificate is self-signed (the chart's ServiceMonitor
// sets insecureSkipVerify likewise). Traffic is still encrypted, and the
// bearer token still checked.
var insecureClient = &http.Client{
	Timeout:   20 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

// scraperNamespace holds the ServiceAccounts the tests scrape metrics as.
const scraperNamespace = "tagsync-e2e-scrapers"

// The package's scraper, "Prometheus": a ServiceAccount bound to a copy of
// the chart's metrics-reader ClusterRole. It lives as long as the package's
// control plane, under its own names, so that tests installing and deleting
// the chart's roles do not take it away.
var (
	prometheusMu    sync.Mutex
	prometheusToken string
)

// scrape returns p's /metrics as Prometheus (the package scraper) reads it.
// Anything but a 200 fails the test.
func scrape(t testing.TB, p *tagsyncProc) string {
	t.Helper()
	status, body := scrapeStatus(t, p)
	if status != http.StatusOK {
		t.Fatalf("scraping %s: HTTP %d: %s", p.name, status, strings.TrimSpace(body))
	}
	return body
}

// scrapeStatus scrapes p's metrics as Prometheus (the package scraper's
// token, the self-signed certificate accepted) and returns the HTTP status
// and body.
func scrapeStatus(t testing.TB, p *tagsyncProc) (int, string) {
	t.Helper()
	status, body, err := get(insecureClient, "https://"+p.metrics+"/metrics", prometheus(t))
	if err != nil {
		t.Fatalf("scraping %s: %v", p.name, err)
	}
	return status, body
}

// prometheus returns the package scraper's token, creating the scraper on
// first use.
func prometheus(t testing.TB) string {
	t.Helper()
	prometheusMu.Lock()
	defer prometheusMu.Unlock()
	if prometheusToken == "" {
		prometheusToken = newScraper(t, "prometheus", "tagsync-e2e-prometheus")
	}
	return prometheusToken
}

// newScraper creates ServiceAccount name in scraperNamespace, binds it to
// ClusterRole role -- applied as a copy of the chart's metrics-reader rules
// when role is not the chart's -- and returns a token for it once the
// authorizer lets it get /metrics.
func newScraper(t testing.TB, name, role string) string {
	t.Helper()
	ctx := context.Background()
	reader := metricsReaderRole(t, renderChart(t, "tagsync-system"))
	if role != reader.GetName() {
		copied := reader.DeepCopy()
		copied.SetName(role)
		must(t, applyOne(ctx, copied))
	}
	token := serviceAccountToken(ctx, t, scraperNamespace, name)
	must(t, applyTyped(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: scraperNamespace, Name: name}},
	}))
	waitMetricsAllowed(t, scraperNamespace, name, true)
	return token
}

// metricsReaderRole is the chart's ClusterRole for scrapers.
func metricsReaderRole(t testing.TB, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range ofKind(objs, "ClusterRole") {
		if strings.HasSuffix(o.GetName(), "-metrics-reader") {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the rendered chart has %d ClusterRoles named *-metrics-reader, want 1", len(found))
	}
	return found[0]
}

// serviceAccountToken creates ServiceAccount namespace/name (unless it
// exists) and returns a token for it (TokenRequest, an hour long).
func serviceAccountToken(ctx context.Context, t testing.TB, namespace, name string) string {
	t.Helper()
	ensureNamespace(ctx, t, namespace)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	must(t, applyTyped(ctx, sa))
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := kube.Client.SubResource("token").Create(ctx, sa, req); err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", namespace, name, err)
	}
	return req.Status.Token
}

// applyTyped server-side-applies a typed object as the cluster admin.
func applyTyped(ctx context.Context, obj client.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	gvks, _, err := kube.Scheme.ObjectKinds(obj)
	if err != nil {
		return err
	}
	u.SetGroupVersionKind(gvks[0])
	return applyOne(ctx, u)
}

// waitMetricsAllowed waits until the authorizer answers allowed for
// ServiceAccount namespace/name getting /metrics (RBAC changes reach it
// through informers, a moment after the write).
func waitMetricsAllowed(t testing.TB, namespace, name string, allowed bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("the authorizer to answer allowed=%v for %s/%s getting /metrics", allowed, namespace, name), func() string {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: serviceAccountUser(namespace, name), Groups: serviceAccountGroups(namespace),
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		if err := kube.Client.Create(context.Background(), sar); err != nil {
			return err.Error()
		}
		if sar.Status.Allowed != allowed {
			return fmt.Sprintf("allowed=%v (%s)", sar.Status.Allowed, sar.Status.Reason)
		}
		return ""
	})
}

// get GETs url with the bearer token (none when "") and returns the
// status and body.
func get(c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	if resp.ProtoMajor != 1 {
		return 0, "", fmt.Errorf("served over %s, want HTTP/1.1 (HTTP/2 is off unless --enable-http2)", resp.Proto)
	}
	return resp.StatusCode, string(body), nil
}

// TestMetricsEndpointServesOnlyAuthorizedScrapers installs the chart's RBAC
// and runs `tagsync run` with the chart Deployment's arguments as the
// chart's ServiceAccount, with a serving certificate from a test CA in
// --metrics-cert-dir, against armsim. Over verified HTTPS (HTTP/1.1 only,
// though the client offers HTTP/2), /metrics refuses a scrape without a
// token (401) and one with the token of a ServiceAccount lacking the
// metrics-reader ClusterRole (403), and gives tagsync's metrics to one bound
// to the chart's metrics-reader ClusterRole (200). The controller's
// TokenReviews and SubjectAccessReviews are allowed by the chart's
// ClusterRole; the RBAC proof shows each is needed.
func TestMetricsEndpointServesOnlyAuthorizedScrapers(t *testing.T) {
	ctx := context.Background()
	const ns = chartNS
	objs := installDefaultChart(ctx, t)
	reader := metricsReaderRole(t, objs)
	if rules, _, _ := unstructured.NestedSlice(reader.Object, "rules"); fmt.Sprint(rules) != "[map[nonResourceURLs:[/metrics] verbs:[get]]]" {
		t.Fatalf("the metrics-reader ClusterRole grants %v, want get on /metrics only", rules)
	}

	cloud := armsimtest.Start(t)
	s := cloud.Server
	_, err := s.CreateResourceGroup(cloud.SubscriptionID, armsim.ResourceGroup{Name: "MC_metrics", Location: "westeurope"})
	must(t, err)
	vm, err := s.CreateVM(cloud.SubscriptionID, "MC_metrics", armsim.VirtualMachine{Name: "vm-metrics", Tags: map[string]string{"env": "prod"}})
	must(t, err)
	must(t, kube.Client.Create(ctx, build.Node("metrics-0", build.ProviderID("azure://"+vm))))
	must(t, kube.Client.Create(ctx, build.NodeTagSync("metrics")))

	certDir, ca := servingCertificate(t)
	sa := managerServiceAccount(t, objs).GetName()
	args := append(deploymentArgs(t, objs), "--kubeconfig="+writeKubeconfig(t, serviceAccountUser(ns, sa), serviceAccountGroups(ns)...),
		"--leader-elect=false", "--metrics-cert-dir="+certDir)
	p := startTagsync(t, "tagsync (secure metrics)", append(args, armsimFlags(t, cloud)...)...)
	verified := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}}
	url := "https://" + p.metrics + "/metrics"

	if status, body, err := get(verified, url, ""); err != nil || status != http.StatusUnauthorized {
		t.Fatalf("a scrape without a token: HTTP %d %q (%v), want 401", status, body, err)
	}
	nosy := serviceAccountToken(ctx, t, scraperNamespace, "nosy")
	waitMetricsAllowed(t, scraperNamespace, "nosy", false)
	if status, body, err := get(verified, url, nosy); err != nil || status != http.StatusForbidden {
		t.Fatalf("a scrape with the token of a ServiceAccount without the role: HTTP %d %q (%v), want 403", status, body, err)
	}

	// Prometheus bound to the chart's own metrics-reader ClusterRole.
	token := newScraper(t, "chart-prometheus", reader.GetName())
	binding := &unstructured.Unstructured{}
	binding.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"))
	binding.SetName(reader.GetName() + "-chart-prometheus")
	deleteOnCleanup(t, binding)
	eventually(t, "a sync pass in the metrics", func() string {
		status, body, err := get(verified, url, token)
		if err != nil || status != http.StatusOK {
			t.Fatalf("a scrape with the token of a ServiceAccount bound to %s: HTTP %d %q (%v), want 200", reader.GetName(), status, body, err)
		}
		if !strings.Contains(body, `tagsync_nodetags_passes_total{`) {
			return "no tagsync_nodetags_passes_total yet"
		}
		return ""
	})
	p.stop(t)
}

// servingCertificate writes a CA-signed serving certificate for 127.0.0.1
// as tls.crt and tls.key into a new directory, and returns the directory and
// a pool holding the CA.
func servingCertificate(t testing.TB) (string, *x509.CertPool) {
	t.Helper()
	caPub, caKey, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tagsync-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caPub, caKey)
	must(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	must(t, err)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "tagsync-metrics"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, pub, caKey)
	must(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	dir := tempFiles(t, map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	})
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return dir, pool
}
