package operations_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tagsync/tagsync/internal/cli"
	"github.com/tagsync/tagsync/internal/testenv"
)

// userDocs are the texts a user reads: docs/, the README, and the chart's
// README and NOTES.txt (printed by helm install).
func userDocs(t *testing.T) map[string]string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join(root, "README.md"), filepath.Join(root, "charts", "tagsync", "README.md"),
		filepath.Join(root, "charts", "tagsync", "templates", "NOTES.txt"))
	out := map[string]string{}
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		out[rel] = readText(t, p)
	}
	return out
}

// lineOf is the 1-based line of offset in text.
func lineOf(text string, offset int) int { return strings.Count(text[:offset], "\n") + 1 }

// docMetric finds metric names in docs; a name followed by * or ending in _
// names a family (tagsync_events_sqs_*).
var docMetric = regexp.MustCompile(`(^|[^a-zA-Z0-9_/.-])(tagsync_[a-z0-9_]+)(\*?)`)

// docLabels reads the label list after a metric name in docs.
var docLabels = regexp.MustCompile(`^\{([^}]*)\}`)

// TestDocsNameOnlyExportedMetrics: every tagsync_ metric the docs, the
// READMEs and the chart's NOTES.txt name is one `tagsync run` serves (a
// family tagsync_x_* must have a member), with the labels it names in
// braces.
func TestDocsNameOnlyExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	for file, text := range userDocs(t) {
		for _, m := range docMetric.FindAllStringSubmatchIndex(text, -1) {
			name, family := text[m[4]:m[5]], m[6] < m[7] || strings.HasSuffix(text[m[4]:m[5]], "_")
			if strings.HasPrefix(text[m[5]:], ".yaml") || strings.HasPrefix(text[m[5]:], ".json") ||
				(m[3] > m[2] && text[m[2]:m[3]] == `"` && strings.HasPrefix(text[m[5]:], `"`)) {
				continue // a file name (config/samples/tagsync_v1alpha1_...), a quoted Terraform name
			}
			if family {
				if !slices.ContainsFunc(slices.Collect(mapsKeys(exported)), func(e string) bool { return strings.HasPrefix(e, name) }) {
					t.Errorf("%s:%d names the metrics %s*, and tagsync exports none", file, lineOf(text, m[4]), name)
				}
				continue
			}
			labels, ok := exported[name]
			if !ok {
				t.Errorf("%s:%d names the metric %s, which tagsync does not export", file, lineOf(text, m[4]), name)
				continue
			}
			// name{a,b} or name{a="x"}: every label named is the metric's.
			if sel := docLabels.FindStringSubmatch(text[m[5]:]); sel != nil {
				for _, l := range strings.Split(sel[1], ",") {
					l, _, _ = strings.Cut(strings.TrimSpace(l), "=")
					l = strings.TrimRight(l, "!~")
					if l != "" && l != "..." && !slices.Contains(labels, l) {
						t.Errorf("%s:%d names the label %s of %s, which has only %v", file, lineOf(text, m[4]), l, name, labels)
					}
				}
			}
		}
	}
}

func mapsKeys(m map[string][]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// otherTools are the flags the docs name in prose that belong to other
// tools (kubectl, helm, kubelet, az, aws, eksctl), not to tagsync.
var otherTools = []string{
	"--set", "--overwrite", "--as", "--node-labels", "--register-with-taints", "--node-taints", "--server-side",
	"--create-namespace", "--reuse-values", "--field-selector", "--namespace", "--from-literal", "--from-file",
	"--dry-run", "--all-namespaces", "--enable-oidc-issuer", "--enable-workload-identity", "--include-full-endpoint-url",
	"--max-events-per-batch", "--max-delivery-attempts", "--event-ttl", "--event-delivery-schema", "--advanced-filter",
	"--included-event-types", "--deadletter-endpoint", "--endpoint-type", "--azure-active-directory-tenant-id",
	"--azure-active-directory-application-id-or-uri", "--system-site-packages", "--as-group", "--take-ownership",
	"--extra-create-metadata", "--k8s-tag-cluster-id", "--extra-tags", // the CSI drivers' (docs/workload-tags.md)
	"--external-managed-tags", "--default-tags", // the AWS Load Balancer Controller's (docs/workload-tags.md)
}

// docFlag finds --flags in a code span or a command line; --x-* names the
// family of flags starting with --x-.
var docFlag = regexp.MustCompile(`(?:^|[\s"'\[(,=])(--[a-z][a-z0-9-]*[a-z0-9])(-\*)?`)

// TestDocsNameOnlyRealFlags: every --flag the docs name on a tagsync command
// line (tagsync VERB ..., kubectl tagsync VERB ...) is a flag of that verb,
// and every --flag a code span names in prose is a flag of some tagsync
// verb, `tagsync run` above all, or one of otherTools'.
func TestDocsNameOnlyRealFlags(t *testing.T) {
	root := cli.NewCommandTree("tagsync")
	all := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, f := range flagsOf(c) {
			all[f] = true
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	fence := regexp.MustCompile("(?s)```[a-z]*\n.*?```")
	span := regexp.MustCompile("`([^`\n]+)`")
	for file, text := range userDocs(t) {
		for _, block := range fence.FindAllStringIndex(text, -1) {
			code := strings.ReplaceAll(text[block[0]:block[1]], "\\\n", " ")
			for _, line := range strings.Split(code, "\n") {
				for _, p := range checkCommandLine(root, line) {
					t.Errorf("%s:%d: %s", file, lineOf(text, block[0]), p)
				}
			}
		}
		prose := fence.ReplaceAllStringFunc(text, func(s string) string { return strings.Repeat("\n", strings.Count(s, "\n")) })
		for _, m := range span.FindAllStringSubmatchIndex(prose, -1) {
			code := prose[m[2]:m[3]]
			if problems := checkCommandLine(root, code); isTagsyncLine(code) {
				for _, p := range problems {
					t.Errorf("%s:%d: %s", file, lineOf(prose, m[2]), p)
				}
				continue
			}
			if !strings.HasPrefix(code, "--") {
				continue
			}
			for _, f := range docFlag.FindAllStringSubmatch(code, 1) {
				if f[2] != "" {
					if !slices.ContainsFunc(slices.Collect(mapsKeysBool(all)), func(name string) bool { return strings.HasPrefix(name, f[1]+"-") }) {
						t.Errorf("%s:%d names the flags %s-*, and no tagsync verb has one", file, lineOf(prose, m[2]), f[1])
					}
					continue
				}
				if !all[f[1]] && !slices.Contains(otherTools, f[1]) {
					t.Errorf("%s:%d names the flag %s, which no tagsync verb has", file, lineOf(prose, m[2]), f[1])
				}
			}
		}
	}
}

// tagsyncCommand finds the tagsync invocation in a shell line: the command
// word of the line (after a prompt, variables, go run) or of a pipe, list
// or command substitution.
var tagsyncCommand = regexp.MustCompile(`(?:^\s*(?:\$\s+)?|[;|&]\s*|\$\(\s*)(?:[A-Z_]+=\S*\s+)*(?:go run |kubectl[ -])?(?:\S*/)?tagsync((?:\s+[a-z][a-z-]*)*)(.*)$`)

func isTagsyncLine(line string) bool {
	m := tagsyncCommand.FindStringSubmatch(line)
	return m != nil && !strings.HasPrefix(m[2], ".") && !strings.HasPrefix(m[2], "-") && !strings.HasPrefix(m[2], "_")
}

// checkCommandLine checks the flags of a tagsync command line against its
// verb (what follows a pipe or && is another command).
func checkCommandLine(root *cobra.Command, line string) []string {
	if !isTagsyncLine(line) {
		return nil
	}
	m := tagsyncCommand.FindStringSubmatch(line)
	cmd := root
	rest := strings.Fields(m[1])
	for len(rest) > 0 {
		sub := findSub(cmd, rest[0])
		if sub == nil {
			break
		}
		cmd, rest = sub, rest[1:]
	}
	args := strings.Join(rest, " ") + m[2]
	for _, sep := range []string{"|", "&&", ";", ">", "#"} {
		args, _, _ = strings.Cut(args, sep)
	}
	flags := flagsOf(cmd)
	var problems []string
	for _, f := range docFlag.FindAllStringSubmatch(args, -1) {
		if !slices.Contains(flags, f[1]) {
			problems = append(problems, fmt.Sprintf("%q: %s has no flag %s", strings.TrimSpace(line), cmd.CommandPath(), f[1]))
		}
	}
	return problems
}

func findSub(c *cobra.Command, name string) *cobra.Command {
	for _, sub := range c.Commands() {
		if sub.Name() == name || slices.Contains(sub.Aliases, name) {
			return sub
		}
	}
	return nil
}

// flagsOf are the --flags a command takes: its own, its parents'
// persistent ones, and --help (and --version on the root).
func flagsOf(c *cobra.Command) []string {
	out := []string{"--help"}
	if !c.HasParent() {
		out = append(out, "--version")
	}
	add := func(f *pflag.Flag) { out = append(out, "--"+f.Name) }
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	return out
}

// notValue matches dotted names that start like a chart value and are not:
// Go identifiers (events.Hub), files (metrics.go), domains (events.k8s.io).
var notValue = regexp.MustCompile(`\.[A-Z]|\.(go|io|com|net|org)$|\.k8s\.|\.amazonaws\.`)

// notValues are such names the docs use in another sense: label prefixes,
// object fields, EventBridge sources.
var notValues = []string{"azure.tags", "aws.tags", "metadata.generation", "aws.tag", "aws.ec2", "aws.elasticloadbalancing", "aws.autoscaling", "aws.tagging"}

// TestDocsNameOnlyRealChartValues: every chart value path the docs name
// (`metrics.serviceMonitor.enabled`, `--set events.sqs.queueURL=...`) is a
// value of the chart (values.yaml, or values.schema.json for the values it
// leaves unset).
func TestDocsNameOnlyRealChartValues(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(readText(t, filepath.Join(root, "charts", "tagsync", "values.schema.json"))), &schema); err != nil {
		t.Fatal(err)
	}
	top, _ := schema["properties"].(map[string]any)
	path := regexp.MustCompile("(?:`|--set(?:-string|-file)?[ =])([a-z][a-zA-Z0-9]*(?:\\.[a-zA-Z][a-zA-Z0-9]*)+)(?:[`=:\\[ ,]|$)")
	for file, text := range userDocs(t) {
		for _, m := range path.FindAllStringSubmatchIndex(text, -1) {
			p := text[m[2]:m[3]]
			first, _, _ := strings.Cut(p, ".")
			if _, ok := top[first]; !ok || notValue.MatchString(p) || slices.Contains(notValues, p) || strings.HasPrefix(text[m[3]:], "/") {
				continue // not a chart value (a file name, a domain, a Go identifier, a label prefix)
			}
			if !schemaHas(schema, strings.Split(p, ".")) {
				t.Errorf("%s:%d names the chart value %s, which the chart does not have", file, lineOf(text, m[2]), p)
			}
		}
	}
}

// schemaHas reports whether a path of keys exists in a JSON schema: every
// key a property, or anything under an object with additionalProperties
// (a free map such as serviceAccount.annotations).
func schemaHas(s map[string]any, keys []string) bool {
	if len(keys) == 0 {
		return true
	}
	if props, ok := s["properties"].(map[string]any); ok {
		if sub, ok := props[keys[0]].(map[string]any); ok {
			return schemaHas(sub, keys[1:])
		}
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		return schemaHas(ap, keys[1:])
	}
	if ap, ok := s["additionalProperties"].(bool); ok && ap {
		return true
	}
	if _, ok := s["properties"]; !ok && s["type"] == "object" {
		return true // a free object
	}
	return false
}

func mapsKeysBool(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
