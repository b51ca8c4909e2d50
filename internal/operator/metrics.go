package operator

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tagmetrics "github.com/tagsync/tagsync/internal/metrics"
	"github.com/tagsync/tagsync/internal/version"
)

// buildInfo is tagsync_build_info: 1, labelled with the binary's version,
// commit and Go version (what `tagsync version` prints), on every replica.
var buildInfo = tagmetrics.Subsystem("").Gauge("build_info",
	"Always 1, labelled with the running binary's version, commit and Go version.", "version", "commit", "go_version")

func init() {
	v := version.Read()
	buildInfo.WithLabelValues(v.Version, v.Commit, v.GoVersion).Set(1)
}

// The secure metrics endpoint asks the API server who a caller is and
// whether it may get /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Default names of the metrics serving certificate and key in
// Options.MetricsCertDir (those of a kubernetes.io/tls Secret).
const (
	DefaultMetricsCertName = "tls.crt"
	DefaultMetricsKeyName  = "tls.key"
)

// metricsServer is the metrics server configuration: plain HTTP, or HTTPS
// with authentication and authorisation by the API server, as kubebuilder
// scaffolds it.
func (o Options) metricsServer() metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr}
	if !o.MetricsSecure {
		return m
	}
	m.SecureServing = true
	m.FilterProvider = filters.WithAuthenticationAndAuthorization
	m.CertDir, m.CertName, m.KeyName = o.MetricsCertDir, o.certName(), o.keyName()
	if !o.EnableHTTP2 {
		m.TLSOpts = append(m.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return m
}

func (o Options) certName() string { return orDefault(o.MetricsCertName, DefaultMetricsCertName) }
func (o Options) keyName() string  { return orDefault(o.MetricsKeyName, DefaultMetricsKeyName) }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// validateMetricsCert checks that a configured certificate directory holds
// the certificate and the key: controller-runtime would otherwise quietly
// serve a self-signed certificate instead.
func (o Options) validateMetricsCert() error {
	if o.MetricsCertDir == "" {
		return nil
	}
	if !o.MetricsSecure {
		return errors.New("--metrics-cert-dir is for the HTTPS metrics endpoint: drop it, or drop --metrics-secure=false")
	}
	var errs []error
	for _, name := range []string{o.certName(), o.keyName()} {
		if _, err := os.Stat(filepath.Join(o.MetricsCertDir, name)); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-cert-dir %s has no %s (%w): mount the certificate and key there "+
				"(a kubernetes.io/tls Secret has tls.crt and tls.key), or drop the flag for a self-signed certificate", o.MetricsCertDir, name, err))
		}
	}
	return errors.Join(errs...)
}
