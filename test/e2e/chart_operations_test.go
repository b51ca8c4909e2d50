package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestChartShipsTheDashboardAndAlertsBehindSwitches: by default the chart
// renders neither; grafanaDashboard.enabled renders a ConfigMap the Grafana
// sidecar loads (grafana_dashboard: "1") holding files/dashboard.json
// unchanged, which the API server accepts; prometheusRule.enabled renders a
// PrometheusRule whose groups are files/prometheusrules.yaml's, with the
// selector labels given.
func TestChartShipsTheDashboardAndAlertsBehindSwitches(t *testing.T) {
	ctx := context.Background()
	const ns = "tagsync-system"
	ensureNamespace(ctx, t, ns)
	defaults := renderChart(t, ns)
	if n := len(ofKind(defaults, "ConfigMap")) + len(ofKind(defaults, "PrometheusRule")); n != 0 {
		t.Errorf("the defaults render %d dashboard ConfigMaps or PrometheusRules, want none", n)
	}
	objs := renderChart(t, ns, "--set", "grafanaDashboard.enabled=true,prometheusRule.enabled=true,prometheusRule.labels.release=prometheus")

	cm := oneOfKind(t, objs, "ConfigMap")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard ConfigMap's labels %v lack grafana_dashboard: \"1\"", cm.GetLabels())
	}
	got, _, _ := unstructured.NestedString(cm.Object, "data", "tagsync.json")
	var gotJSON, wantJSON any
	must(t, json.Unmarshal([]byte(got), &gotJSON))
	must(t, json.Unmarshal(readChartFile(t, "dashboard.json"), &wantJSON))
	if !reflect.DeepEqual(gotJSON, wantJSON) {
		t.Error("the dashboard ConfigMap does not hold files/dashboard.json")
	}
	apply(ctx, t, []*unstructured.Unstructured{cm}, client.DryRunAll)

	rule := oneOfKind(t, objs, "PrometheusRule")
	if rule.GetLabels()["release"] != "prometheus" {
		t.Errorf("the PrometheusRule's labels %v lack prometheusRule.labels", rule.GetLabels())
	}
	var want map[string]any
	must(t, yaml.Unmarshal(readChartFile(t, "prometheusrules.yaml"), &want))
	if spec, _, _ := unstructured.NestedMap(rule.Object, "spec"); !reflect.DeepEqual(spec, want) {
		t.Errorf("the PrometheusRule's spec is not files/prometheusrules.yaml:\n%v", spec)
	}
}

func readChartFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(), "files", name))
	must(t, err)
	return b
}
