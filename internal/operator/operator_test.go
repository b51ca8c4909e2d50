package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
)

// TestShutdownLoggerDemotesOnlyShutdownErrors: "leader election lost" and
// cancelled requests are errors while running and info once the context
// ends; other errors stay errors.
func TestShutdownLoggerDemotesOnlyShutdownErrors(t *testing.T) {
	var lines []string
	sink := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	log := ShutdownLogger(ctx, sink).WithName("leaderelection").WithValues("k", "v")

	lost := errors.New(errLeaderElectionLost)
	canceled := fmt.Errorf("renewing the Lease: %w", context.Canceled)
	log.Error(lost, "running")
	cancel()
	log.Error(lost, "stopping")
	log.Error(canceled, "stopping")
	log.Error(errors.New("forbidden"), "stopping")

	want := []bool{true, false, false, true} // error level?
	if len(lines) != len(want) {
		t.Fatalf("logged %d lines, want %d: %q", len(lines), len(want), lines)
	}
	for i, l := range lines {
		if isError := strings.Contains(l, `"error"=`); isError != want[i] {
			t.Errorf("line %d %q: error level = %v, want %v", i, l, isError, want[i])
		}
		if !strings.Contains(l, "leaderelection") || !strings.Contains(l, `"k"="v"`) {
			t.Errorf("line %d %q lost the logger's name or values", i, l)
		}
	}
	if !strings.Contains(lines[1], `"shutdown"=true`) || !strings.Contains(lines[1], errLeaderElectionLost) {
		t.Errorf("demoted line %q does not say it is part of the shutdown and why", lines[1])
	}
}

// TestMetricsServerOptions: secure metrics are HTTPS behind the API server's
// authentication and authorisation, HTTP/1.1 unless HTTP/2 is enabled;
// plain metrics have neither.
func TestMetricsServerOptions(t *testing.T) {
	secure := DefaultOptions().metricsServer()
	if !secure.SecureServing || secure.FilterProvider == nil || secure.BindAddress != ":8443" || len(secure.TLSOpts) != 1 {
		t.Fatalf("default metrics options %+v: want HTTPS on :8443 with the auth filter and HTTP/2 off", secure)
	}
	plain := Options{MetricsAddr: ":8080"}.metricsServer()
	if plain.SecureServing || plain.FilterProvider != nil {
		t.Fatalf("plain metrics options %+v: want neither TLS nor the auth filter", plain)
	}
	h2 := DefaultOptions()
	h2.EnableHTTP2 = true
	if n := len(h2.metricsServer().TLSOpts); n != 0 {
		t.Fatalf("with HTTP/2 enabled %d TLS options, want none", n)
	}
}

// TestValidateMetricsCertDir: a certificate directory must hold the
// certificate and the key, and only makes sense with HTTPS.
func TestValidateMetricsCertDir(t *testing.T) {
	dir := t.TempDir()
	o := DefaultOptions()
	o.MetricsCertDir = dir
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--metrics-cert-dir "+dir+" has no tls.crt") ||
		!strings.Contains(err.Error(), "has no tls.key") {
		t.Fatalf("error = %v, want one naming the missing tls.crt and tls.key", err)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	o.MetricsSecure = false
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--metrics-secure=false") {
		t.Fatalf("error = %v, want one saying the directory needs HTTPS", err)
	}
}

// TestProvidersGiveTheNodeSyncAWS: with an AWS region configured, the
// providers the controllers get include AWS, and the node sync may use it
// (the AWS provider is a cloud.NodeProvider). Building them sends no request.
func TestProvidersGiveTheNodeSyncAWS(t *testing.T) {
	o := Options{Clouds: clouds.Set{
		&azure.Settings{Options: []azure.Option{azure.WithRegisterer(prometheus.NewRegistry())}},
		&aws.Settings{Config: aws.Config{Region: "eu-west-1", Endpoint: "http://127.0.0.1:1", AccessKeyID: "AKIDTEST", SecretAccessKey: "test"},
			Options: []aws.Option{aws.WithRegisterer(prometheus.NewRegistry())}},
	}}
	ps, err := o.providers(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cloud.NewProviders(ps...).NodeProvider("aws")
	if err != nil {
		t.Fatalf("NodeProvider(aws): %v", err)
	}
	if p.Rules().CaseInsensitive {
		t.Fatalf("the node sync on AWS got %v, with case-insensitive tag names", p)
	}
}
