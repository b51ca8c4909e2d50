// Package operations_test checks what the chart ships for operators (the
// Grafana dashboard and the PrometheusRule alerts, charts/tagsync/files)
// against the code: every metric they name is one tagsync exports, and
// every label they select, group by or print is one of its labels. The
// alerts' own unit tests (Prometheus rule test format) run in rules_test.go
// with promtool, fed only with series the code can emit (checked here too).
package operations_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/tagsync/tagsync/internal/cloud"
	// Imported for the metrics they register with controller-runtime's
	// registry (the one `tagsync run` serves): the controllers', the event
	// hub's and sources', and tagsync_build_info (operator).
	_ "github.com/tagsync/tagsync/internal/cloudchange"
	_ "github.com/tagsync/tagsync/internal/cloudchange/eventgrid"
	"github.com/tagsync/tagsync/internal/cloudchange/sqs"
	_ "github.com/tagsync/tagsync/internal/controller/infratags"
	_ "github.com/tagsync/tagsync/internal/controller/labelsync"
	_ "github.com/tagsync/tagsync/internal/controller/metadata"
	_ "github.com/tagsync/tagsync/internal/controller/nodetags"
	_ "github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/version"
)

// targetLabels are the labels Prometheus adds to every series it scrapes
// through the chart's ServiceMonitor (the Prometheus Operator's target
// labels). With honorLabels a series' own namespace label wins.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container"}

// exportedMetrics are the series `tagsync run` can serve, by series name
// (histograms add _bucket with le, _sum and _count), each with its label
// names: the controllers', the event hub's and sources', both cloud
// providers' request metrics, and controller-runtime's and client-go's
// (leader election, workqueue, REST client).
func exportedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	reg := prometheus.NewRegistry()
	for _, provider := range []string{"azure", "aws"} {
		if _, err := cloud.NewRequestMetrics(provider, reg); err != nil {
			t.Fatal(err)
		}
	}
	// The SQS source registers its metrics when it is built (no request is
	// sent before Start).
	if _, err := sqs.New(sqs.Config{QueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/tagsync-events"}, nil,
		sqs.WithRegisterer(reg)); err != nil {
		t.Fatal(err)
	}
	desc := regexp.MustCompile(`fqName: "([^"]+)".*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for _, c := range []prometheus.Collector{crmetrics.Registry.(prometheus.Collector), reg} {
		ch := make(chan *prometheus.Desc, 1024)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := desc.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name and labels of %s", d)
			}
			var labels []string
			for _, l := range strings.Split(m[3], ",") {
				if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
					labels = append(labels, l)
				}
			}
			for _, l := range strings.Split(m[2], ",") {
				if name, _, ok := strings.Cut(l, "="); ok {
					labels = append(labels, name)
				}
			}
			for _, suffix := range []string{"", "_sum", "_count"} {
				out[m[1]+suffix] = labels
			}
			out[m[1]+"_bucket"] = append(slices.Clip(labels), "le")
		}
	}
	return out
}

// TestBuildInfo: tagsync_build_info is 1, labelled with what `tagsync
// version` prints.
func TestBuildInfo(t *testing.T) {
	v := version.Read()
	labels := map[string]string{"version": v.Version, "commit": v.Commit, "go_version": v.GoVersion}
	if got := testenv.Counter(t, "tagsync_build_info", labels); got != 1 {
		t.Fatalf("tagsync_build_info%v = %v, want 1", labels, got)
	}
}

// metricRef finds metric names in PromQL: tagsync's own and the
// controller-runtime / client-go ones the rules use.
var metricRef = regexp.MustCompile(`\b(tagsync_[a-z0-9_]+|leader_election_master_status|controller_runtime_[a-z0-9_]+|workqueue_[a-z0-9_]+|rest_client_[a-z0-9_]+)\b`)

var (
	quoted    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	selector  = regexp.MustCompile(`\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	matcher   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	grouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	labelRef  = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
	legendRef = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
)

// checkQuery reports what of a PromQL expression is not exported: metric
// names, the labels of each selector (on that metric), the labels of
// grouping clauses and of outputs (printed: $labels.x, {{x}}) among those
// of the metrics the expression names, besides the target labels.
func checkQuery(exported map[string][]string, expr string, outputs []string) []string {
	var problems []string
	for _, m := range selector.FindAllStringSubmatch(expr, -1) {
		labels, ok := exported[m[1]]
		if !ok {
			continue // reported below
		}
		for _, l := range matcher.FindAllStringSubmatch(quoted.ReplaceAllString(m[2], `""`), -1) {
			if l[1] != "__name__" && !slices.Contains(labels, l[1]) && !slices.Contains(targetLabels, l[1]) {
				problems = append(problems, fmt.Sprintf("selects %s{%s}, which has no label %s (labels: %v)", m[1], l[1], l[1], labels))
			}
		}
	}
	bare := quoted.ReplaceAllString(expr, `""`)
	union := map[string]bool{}
	for _, l := range targetLabels {
		union[l] = true
	}
	names := metricRef.FindAllString(bare, -1)
	if len(names) == 0 {
		problems = append(problems, "names no metric")
	}
	for _, name := range names {
		labels, ok := exported[name]
		if !ok && !strings.HasPrefix(name, "tagsync_test") {
			problems = append(problems, fmt.Sprintf("queries %s, which tagsync does not export", name))
		}
		for _, l := range labels {
			union[l] = true
		}
	}
	var used []string
	for _, g := range grouping.FindAllStringSubmatch(bare, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				used = append(used, l)
			}
		}
	}
	for _, text := range outputs {
		for _, r := range labelRef.FindAllStringSubmatch(text, -1) {
			used = append(used, r[1])
		}
		for _, r := range legendRef.FindAllStringSubmatch(text, -1) {
			used = append(used, r[1])
		}
	}
	for _, l := range used {
		if !union[l] {
			problems = append(problems, fmt.Sprintf("uses the label %s, which none of %v has (labels: %v)", l, names, slices.Sorted(maps.Keys(union))))
		}
	}
	return problems
}

// rule is an alert of prometheusrules.yaml.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func readRules(t *testing.T) []rule {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal([]byte(readText(t, chartFile(t, "prometheusrules.yaml"))), &f); err != nil {
		t.Fatal(err)
	}
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatal("prometheusrules.yaml has no rule")
	}
	return rules
}

// panel is a panel of dashboard.json.
type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
}

func readPanels(t *testing.T) []panel {
	t.Helper()
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal([]byte(readText(t, chartFile(t, "dashboard.json"))), &d); err != nil {
		t.Fatal(err)
	}
	return d.Panels
}

func chartFile(t *testing.T, name string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", "tagsync", "files", name)
}

// TestDashboardAndRulesUseExportedMetricsAndLabels: every metric the
// dashboard and the alerts query exists in the code with every label they
// select, group by, or print in annotations and legends, so a renamed
// metric or label cannot leave a panel empty or an alert silent.
func TestDashboardAndRulesUseExportedMetricsAndLabels(t *testing.T) {
	exported := exportedMetrics(t)
	for _, r := range readRules(t) {
		outputs := slices.Collect(maps.Values(r.Annotations))
		for _, p := range checkQuery(exported, r.Expr, outputs) {
			t.Errorf("alert %s %s", r.Alert, p)
		}
	}
	panels := readPanels(t)
	if len(panels) == 0 {
		t.Fatal("dashboard.json has no panel")
	}
	for _, pn := range panels {
		for _, target := range pn.Targets {
			for _, p := range checkQuery(exported, target.Expr, []string{target.LegendFormat}) {
				t.Errorf("panel %q %s", pn.Title, p)
			}
		}
	}
}

// TestRuleTestsUseOnlySeriesTheCodeEmits: the alerts' unit tests feed
// promtool only series tagsync exports, with labels the metric has (or the
// scrape adds), so an alert cannot pass its test on a series that never
// exists.
func TestRuleTestsUseOnlySeriesTheCodeEmits(t *testing.T) {
	exported := exportedMetrics(t)
	var f struct {
		Tests []struct {
			Name        string `json:"name"`
			InputSeries []struct {
				Series string `json:"series"`
			} `json:"input_series"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal([]byte(readText(t, filepath.Join("testdata", "rules_test.yaml"))), &f); err != nil {
		t.Fatal(err)
	}
	series := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}$`)
	for _, test := range f.Tests {
		for _, in := range test.InputSeries {
			m := series.FindStringSubmatch(strings.TrimSpace(in.Series))
			if m == nil {
				t.Errorf("test %q: cannot read the series %q", test.Name, in.Series)
				continue
			}
			labels, ok := exported[m[1]]
			if !ok {
				t.Errorf("test %q feeds %s, which tagsync does not export", test.Name, m[1])
				continue
			}
			for _, l := range matcher.FindAllStringSubmatch(quoted.ReplaceAllString(m[2], `""`), -1) {
				if !slices.Contains(labels, l[1]) && !slices.Contains(targetLabels, l[1]) {
					t.Errorf("test %q feeds %s with the label %s, which it does not have (labels: %v)", test.Name, m[1], l[1], labels)
				}
			}
		}
	}
}

// TestDashboardMatchesOperationsDoc: the dashboard table of
// docs/operations.md names every panel of dashboard.json, each with the
// metrics it queries.
func TestDashboardMatchesOperationsDoc(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc := readText(t, filepath.Join(root, "docs", "operations.md"))
	_, section, ok := strings.Cut(doc, "## The dashboard\n")
	if !ok {
		t.Fatal(`docs/operations.md has no "## The dashboard" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	documented := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.TrimSpace(cells[1]) == "panel" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		documented[strings.TrimSpace(cells[1])] = uniqueSorted(metricRef.FindAllString(cells[2], -1))
	}
	shown := map[string][]string{}
	for _, pn := range readPanels(t) {
		var names []string
		for _, target := range pn.Targets {
			for _, n := range metricRef.FindAllString(target.Expr, -1) {
				names = append(names, strings.TrimSuffix(n, "_bucket"))
			}
		}
		shown[pn.Title] = uniqueSorted(names)
	}
	for title, names := range shown {
		if doc, ok := documented[title]; !ok {
			t.Errorf("panel %q is not in the dashboard table of docs/operations.md", title)
		} else if !slices.Equal(doc, names) {
			t.Errorf("panel %q queries %v; docs/operations.md says %v", title, names, doc)
		}
	}
	for title := range documented {
		if _, ok := shown[title]; !ok {
			t.Errorf("docs/operations.md lists the panel %q, which the dashboard does not have", title)
		}
	}
}

func uniqueSorted(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
