package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// operationsCases are the chart's rows for running it: the metrics
// settings, and the dashboard and alerts behind their switches.
func operationsCases() []chartCase {
	return []chartCase{
		// metrics.certSecret mounts a TLS Secret and points
		// --metrics-cert-dir at it.
		{name: "metrics.certSecret", set: "metrics.certSecret=tagsync-metrics-tls", controllers: "nodetags", check: checkMetricsCertSecret},
		// metrics.secure=false serves plain HTTP, with neither the review
		// rights nor the metrics-reader ClusterRole.
		{name: "metrics.secure=false", set: "metrics.secure=false,metrics.serviceMonitor.enabled=true", controllers: "nodetags",
			args: []string{"--metrics-secure=false"}, check: checkPlainMetrics},
		{name: "grafanaDashboard and prometheusRule enabled", controllers: "nodetags",
			set: "grafanaDashboard.enabled=true,prometheusRule.enabled=true,prometheusRule.labels.release=prometheus", check: checkDashboardAndAlerts},
	}
}

func checkMetricsCertSecret(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	pod := deployment(t, objs).Spec.Template.Spec
	var certDir string
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.Name == "metrics-cert" {
			certDir = m.MountPath
		}
	}
	if certDir == "" || !slices.Contains(pod.Containers[0].Args, "--metrics-cert-dir="+certDir) ||
		!slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "tagsync-metrics-tls" }) {
		t.Errorf("metrics.certSecret: mounts %+v, volumes %+v, args %v: want the Secret mounted and --metrics-cert-dir pointing at it",
			pod.Containers[0].VolumeMounts, pod.Volumes, pod.Containers[0].Args)
	}
}

func checkPlainMetrics(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	if n := len(ofKind(objs, "ClusterRole")); n != 1 {
		t.Errorf("metrics.secure=false: %d ClusterRoles, want only the manager's", n)
	}
	if g := grants(t, ofKind(objs, "ClusterRole")); slices.Contains(g, "create authentication.k8s.io/tokenreviews") {
		t.Errorf("metrics.secure=false: the manager may still create tokenreviews: %v", g)
	}
	endpoints, _, _ := unstructured.NestedSlice(oneOfKind(t, objs, "ServiceMonitor").Object, "spec", "endpoints")
	if ep := endpoints[0].(map[string]any); ep["port"] != "http" || ep["scheme"] != "http" || ep["bearerTokenFile"] != nil {
		t.Errorf("metrics.secure=false: ServiceMonitor endpoint %v, want plain http without a token", ep)
	}
}

// checkNoDashboardNorAlerts: by default the chart renders neither the
// dashboard nor the alerts.
func checkNoDashboardNorAlerts(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	if n := len(ofKind(objs, "ConfigMap")) + len(ofKind(objs, "PrometheusRule")); n != 0 {
		t.Errorf("the defaults render %d dashboard ConfigMaps or PrometheusRules, want none", n)
	}
}

// checkDashboardAndAlerts: grafanaDashboard.enabled renders a ConfigMap the
// Grafana sidecar loads (grafana_dashboard: "1") holding
// files/dashboard.json unchanged; prometheusRule.enabled renders a
// PrometheusRule whose groups are files/prometheusrules.yaml's, with the
// selector labels given.
func checkDashboardAndAlerts(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
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
