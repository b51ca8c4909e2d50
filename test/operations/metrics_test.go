// Package operations_test checks what the chart ships for operators (the
// Grafana dashboard and the PrometheusRule alerts, charts/tagsync/files)
// against the code: every metric they name is one the controllers export.
// The alerts' own unit tests (Prometheus rule test format) run in
// rules_test.go with promtool.
package operations_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tagsync/tagsync/internal/cloud"
	// Imported for the metrics they register with controller-runtime's
	// registry (the one `tagsync run` serves).
	_ "github.com/tagsync/tagsync/internal/controller/infratags"
	_ "github.com/tagsync/tagsync/internal/controller/labelsync"
	_ "github.com/tagsync/tagsync/internal/controller/metadata"
	_ "github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/testenv"
)

// exportedMetrics are the names of every metric `tagsync run` can serve:
// the controllers', both cloud providers' request metrics, and
// controller-runtime's and client-go's (leader election, workqueue, REST
// client), as series names (histograms add _bucket, _sum, _count).
func exportedMetrics(t *testing.T) []string {
	t.Helper()
	reg := prometheus.NewRegistry()
	for _, provider := range []string{"azure", "aws"} {
		if _, err := cloud.NewRequestMetrics(provider, reg); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, c := range []prometheus.Collector{crmetrics.Registry.(prometheus.Collector), reg} {
		ch := make(chan *prometheus.Desc, 1024)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name of %s", d)
			}
			for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
				names = append(names, m[1]+suffix)
			}
		}
	}
	return names
}

// metricRef finds metric names in PromQL: tagsync's own and the
// controller-runtime / client-go ones the rules use.
var metricRef = regexp.MustCompile(`\b(tagsync_[a-z0-9_]+|leader_election_master_status|controller_runtime_[a-z0-9_]+|workqueue_[a-z0-9_]+|rest_client_[a-z0-9_]+)\b`)

// TestDashboardAndRulesNameOnlyExportedMetrics: every metric the dashboard
// and the alerts query exists in the code, so a renamed metric cannot leave
// a panel empty or an alert silent.
func TestDashboardAndRulesNameOnlyExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"dashboard.json", "prometheusrules.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "charts", "tagsync", "files", file))
		if err != nil {
			t.Fatal(err)
		}
		refs := metricRef.FindAllString(string(b), -1)
		if len(refs) == 0 {
			t.Errorf("%s names no metric", file)
		}
		for _, name := range refs {
			if !slices.Contains(exported, name) && !strings.HasPrefix(name, "tagsync_test") {
				t.Errorf("%s queries %s, which tagsync does not export", file, name)
			}
		}
	}
}
