package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// chartNS is the namespace the chart is rendered for.
const chartNS = "tagsync-system"

// authModes are the chart's values files, one per auth mode (the same
// files `make helm-check` lints and renders).
var authModes = map[string]string{
	"workloadIdentity": "charts/tagsync/ci/workload-identity-values.yaml",
	"managedIdentity":  "charts/tagsync/ci/managed-identity-values.yaml",
	"servicePrincipal": "charts/tagsync/ci/service-principal-values.yaml",
}

// awsModes are the chart's values files for the metadata controller with
// AWS credentials (the same files `make helm-check` lints and renders).
var awsModes = map[string]string{
	"awsIRSA":       "charts/tagsync/ci/aws-irsa-values.yaml",
	"awsStaticKeys": "charts/tagsync/ci/aws-static-keys-values.yaml",
}

// chartCase is one row of the chart's render tests: the values it is
// rendered with, and what the Deployment and the objects must then be.
type chartCase struct {
	name   string
	values string // a values file, relative to the repository ("": none)
	set    string // helm --set values ("": none)
	// controllers is the --controllers value, in order: the controllers
	// the chart runs, whose registry rules it must grant.
	controllers string
	args        []string // flags the Deployment must pass
	noArgs      []string // flags it must not pass, with or without a value
	namespaces  []string // the --namespaces value as a set (nil: not checked)
	// check checks the rest: objects, RBAC shape, volumes.
	check func(t *testing.T, objs []*unstructured.Unstructured)
}

func (c chartCase) flags() []string {
	var out []string
	if c.values != "" {
		out = append(out, "--values", filepath.Join(kube.RootDir, c.values))
	}
	if c.set != "" {
		out = append(out, "--set", c.set)
	}
	return out
}

// TestChartRenders renders the chart for each row of chartCases and checks
// what every rendering must show -- every flag the Deployment passes is a
// flag of `tagsync run`, --controllers and the row's flags, the rules each
// running controller declares in the registry granted and none of a
// controller that does not run (checkRegistryGrants) -- then the row's own
// checks, and has the real API server validate every object (server-side
// dry-run apply, strict fields; the custom resources against their CRDs'
// schemas and CEL rules; the Prometheus Operator's kinds aside, their CRDs
// are not installed here).
func TestChartRenders(t *testing.T) {
	ctx := context.Background()
	ensureNamespace(ctx, t, chartNS)
	runFlags := tagsyncRunFlags(t)
	for _, c := range chartCases() {
		t.Run(c.name, func(t *testing.T) {
			objs := renderChart(t, chartNS, c.flags()...)
			args := deploymentArgs(t, objs)
			for _, arg := range args {
				if flag, _, _ := strings.Cut(arg, "="); !slices.Contains(runFlags, flag) {
					t.Errorf("the chart passes %s, which `tagsync run` does not know", flag)
				}
			}
			wantArgs(t, args, append([]string{"--controllers=" + c.controllers}, c.args...)...)
			noArgs(t, args, c.noArgs...)
			if got := argValue(args, "--namespaces"); c.namespaces != nil && !sameSet(strings.Split(got, ","), c.namespaces) {
				t.Errorf("--namespaces=%s, want %v", got, c.namespaces)
			}
			checkRegistryGrants(t, objs, strings.Split(c.controllers, ","))
			if c.check != nil {
				c.check(t, objs)
			}
			ensureNamespaces(ctx, t, objs)
			var serverSide []*unstructured.Unstructured
			for _, o := range objs {
				// The CRDs, the same in every rendering, are checked by
				// TestChartCRDsAreTheGeneratedOnes.
				if !slices.Contains([]string{"ServiceMonitor", "PrometheusRule", "CustomResourceDefinition"}, o.GetKind()) {
					serverSide = append(serverSide, o)
				}
			}
			apply(ctx, t, serverSide, client.DryRunAll)
		})
	}
}

// chartCases are the renderings TestChartRenders checks: the defaults and
// each auth mode (the node sync alone), EKS (the node sync on AWS), the
// metrics settings, the
// dashboard and alerts, the metadata controller (each AWS values file,
// the defaults, the audit settings), the label sync (Roles in one
// namespace; on the defaults with a ClusterRole without Secrets and a Role
// granting get on secrets in the release namespace only; with
// labelSync.secrets.namespaces; Secrets cluster-wide; with the metadata
// controller on the same namespaces), the OpenShift adapter (its values,
// owned tags, with the node sync and metadata.namespaces), cloud events
// (eventsCases; the defaults pass no --events-* flag), each controller's
// values without its switch (they change nothing), and the controllers'
// other combinations.
func chartCases() []chartCase {
	cases := []chartCase{{name: "defaults", controllers: "nodetags", noArgs: eventsFlags, check: func(t *testing.T, objs []*unstructured.Unstructured) {
		checkNodeSyncChart(t, "defaults", objs)
		checkNoDashboardNorAlerts(t, objs)
		checkNoWebhook(t, objs)
	}}}
	for _, mode := range slices.Sorted(maps.Keys(authModes)) {
		cases = append(cases, chartCase{name: mode, values: authModes[mode], controllers: "nodetags",
			check: func(t *testing.T, objs []*unstructured.Unstructured) { checkNodeSyncChart(t, mode, objs) }})
	}
	// EKS: the node sync on AWS with IRSA, labelPrefix left to the
	// provider's default.
	cases = append(cases, chartCase{name: "eks", values: "charts/tagsync/ci/eks-values.yaml", controllers: "nodetags",
		args: []string{"--aws-region=us-east-1"}, noArgs: eventsFlags,
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkAWSNodeTagSync(t, objs)
			if got := managerServiceAccount(t, objs).GetAnnotations()["eks.amazonaws.com/role-arn"]; got != "arn:aws:iam::111122223333:role/tagsync" {
				t.Errorf("ServiceAccount role-arn annotation %q, want the values' role", got)
			}
		}})
	cases = append(cases, operationsCases()...)
	cases = append(cases, metadataCases()...)
	cases = append(cases, labelSyncCases()...)
	cases = append(cases, openShiftCases()...)
	cases = append(cases, eventsCases()...)
	cases = append(cases, chartCase{name: "hardened", values: "charts/tagsync/ci/hardened-values.yaml", controllers: "nodetags",
		check: checkHardened})
	// Workload tags on AWS: its policies name their cloud, so the chart
	// passes the AWS settings whenever the controller runs.
	cases = append(cases, chartCase{name: "workload tags on AWS", controllers: "workloadtags",
		set:  "workloadTags.enabled=true,nodeTagSync.enabled=false,aws.region=eu-west-1,aws.endpoint=https://vpce.example,aws.existingSecret=aws-keys",
		args: []string{"--aws-region=eu-west-1", "--aws-endpoint=https://vpce.example"},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			env := fmt.Sprint(deployment(t, objs).Spec.Template.Spec.Containers[0].Env)
			if !strings.Contains(env, "AWS_ACCESS_KEY_ID") || !strings.Contains(env, "aws-keys") {
				t.Errorf("the Deployment's environment lacks the AWS keys of aws.existingSecret: %s", env)
			}
		}})
	// The controllers' other combinations: each gets its registry rules.
	for _, c := range []struct{ set, controllers string }{
		{"metadata.enabled=true,nodeTagSync.enabled=false", "metadata"},
		{"metadata.enabled=true,openshift.enabled=true", "nodetags,metadata,infratags"},
		{"metadata.enabled=true,openshift.enabled=true,nodeTagSync.enabled=false", "metadata,infratags"},
		{"metadata.enabled=true,openshift.enabled=true,nodeTagSync.enabled=false,metadata.namespaces={tagsync-system}", "metadata,infratags"},
		{"labelSync.enabled=true,nodeTagSync.enabled=false", "labelsync"},
		{"labelSync.enabled=true,nodeTagSync.enabled=false,labelSync.namespaces={metal3}", "labelsync"},
		{"metadata.enabled=true,openshift.enabled=true,labelSync.enabled=true", "nodetags,metadata,infratags,labelsync"},
	} {
		cases = append(cases, chartCase{name: c.set, set: c.set, controllers: c.controllers})
	}
	return cases
}

// TestChartValuesFilesAreAllTested: every ci/*-values.yaml is the values
// file of a row of chartCases, so it is rendered and checked, not only
// linted.
func TestChartValuesFilesAreAllTested(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(chartDir(), "ci", "*-values.yaml"))
	if len(files) == 0 {
		t.Fatal("charts/tagsync/ci holds no values files")
	}
	var rendered []string
	for _, c := range chartCases() {
		rendered = append(rendered, c.values)
	}
	for _, f := range files {
		rel := filepath.ToSlash(filepath.Join("charts", "tagsync", "ci", filepath.Base(f)))
		if !slices.Contains(rendered, rel) {
			t.Errorf("%s is the values file of no row of chartCases: add one so a test renders and checks it", rel)
		}
	}
}

// TestChartRefusesSettingsThatCannotWork: helm template fails, saying what
// to set, on auth settings that cannot work, on replicas without leader
// election, on no controller at all, on audit log paths the chart cannot
// give a volume, on the OpenShift adapter without the metadata controller
// or outside the namespaces it serves, on namespaces the metadata
// controller and the label sync disagree on (one --namespaces flag confines
// the whole process), on the label sync's Secrets settings that contradict
// each other, on event settings that cannot work (a webhook without
// authentication, half the Entra settings, on a port taken, an Ingress
// without a host, webhook settings with the webhook off, events no
// controller acts on), on the AWS node sync without an Azure mode that
// starts, and (the schema) on malformed AWS regions, namespaces, Azure
// owned tags, SQS queue URLs, durations and providers, on AWS keys in the
// values and on unknown values.
func TestChartRefusesSettingsThatCannotWork(t *testing.T) {
	webhook := func(set ...string) []string {
		return append([]string{"events.webhook.enabled=true", "events.webhook.sharedSecret.existingSecret=s"}, set...)
	}
	const sqsQueue = "events.sqs.queueURL=https://sqs.us-east-1.amazonaws.com/111122223333/q"
	cases := []struct {
		name, want string
		set        []string
	}{
		{"service principal without its secret", "needs azure.clientID, azure.tenantID and azure.existingSecret",
			[]string{"azure.authMode=servicePrincipal", "azure.clientID=x", "azure.tenantID=y"}},
		{"managed identity without a client ID", "azure.authMode managedIdentity needs azure.clientID", []string{"azure.authMode=managedIdentity"}},
		{"an unknown auth mode", "authMode", []string{"azure.authMode=podIdentity"}},
		{"two replicas without leader election", "replicas > 1 needs leaderElection.enabled", []string{"leaderElection.enabled=false"}},
		{"no controller", "enable at least one controller", []string{"nodeTagSync.enabled=false"}},
		{"every controller off", "enable at least one controller", []string{"nodeTagSync.enabled=false", "labelSync.enabled=false"}},
		{"an audit log file in /", "put the file in a directory of its own", []string{"metadata.enabled=true", "metadata.auditLog=/audit.log"}},
		{"a relative audit log path", "/metadata/auditLog", []string{"metadata.enabled=true", "metadata.auditLog=audit.log"}},
		{"an AWS region that is none", "/aws/region", []string{"metadata.enabled=true", "aws.region=us-east"}},
		// AWS keys only ever come from a Secret: values have no place for them.
		{"an AWS key in the values", "additional properties 'accessKeyID' not allowed", []string{"metadata.enabled=true", "aws.accessKeyID=AKIAEXAMPLE"}},
		{"a namespace that is none", "/metadata/namespaces/0", []string{"metadata.enabled=true", "metadata.namespaces={Platform}"}},
		{"the OpenShift adapter without the metadata controller", "openshift.enabled needs metadata.enabled: true", []string{"openshift.enabled=true"}},
		{"the OpenShift adapter without the metadata controller, node sync off", "openshift.enabled needs metadata.enabled: true",
			[]string{"openshift.enabled=true", "nodeTagSync.enabled=false"}},
		{"the OpenShift adapter's namespace not served", "add the release namespace default",
			[]string{"metadata.enabled=true", "openshift.enabled=true", "metadata.namespaces={platform}"}},
		{"an Azure owned tag Azure refuses", "/openshift/azureOwnedTag", []string{"metadata.enabled=true", "openshift.enabled=true", "openshift.azureOwnedTag=a/b"}},
		{"different namespaces", "metadata.namespaces [a] and labelSync.namespaces [b] differ",
			[]string{"metadata.enabled=true", "labelSync.enabled=true", "metadata.namespaces={a}", "labelSync.namespaces={b}"}},
		{"namespaces for one, all for the other", "metadata.namespaces [] and labelSync.namespaces [metal3] differ",
			[]string{"metadata.enabled=true", "labelSync.enabled=true", "labelSync.namespaces={metal3}"}},
		{"a label sync namespace that is none", "/labelSync/namespaces/0", []string{"labelSync.enabled=true", "labelSync.namespaces={Metal3}"}},
		{"an unknown labelSync value", "additional properties 'prefixes' not allowed", []string{"labelSync.enabled=true", "labelSync.prefixes={a}"}},
		{"Secrets cluster-wide and in namespaces", "labelSync.secrets.clusterWide and labelSync.secrets.namespaces [a] are both set",
			[]string{"labelSync.enabled=true", "labelSync.secrets.clusterWide=true", "labelSync.secrets.namespaces={a}"}},
		{"Secrets settings with labelSync.namespaces", "labelSync.secrets is set while labelSync.namespaces [metal3] is",
			[]string{"labelSync.enabled=true", "labelSync.namespaces={metal3}", "labelSync.secrets.namespaces={a}"}},
		{"an unknown labelSync.secrets value", "additional properties 'names' not allowed", []string{"labelSync.enabled=true", "labelSync.secrets.names={a}"}},
		{"a webhook without authentication", "events.webhook.enabled needs a way to authenticate Event Grid", []string{"events.webhook.enabled=true"}},
		{"a webhook with half the Entra settings", "events.webhook.entra needs both tenantID and audience", []string{"events.webhook.enabled=true", "events.webhook.entra.tenantID=t"}},
		{"a webhook on the metrics port", "events.webhook.port 8443 is already the metrics or health port", webhook("events.webhook.port=8443")},
		{"a webhook Ingress without a host", "events.webhook.ingress.enabled needs events.webhook.ingress.host", webhook("events.webhook.ingress.enabled=true")},
		{"webhook settings with the webhook off", "events.webhook settings are set but events.webhook.enabled is false", []string{"events.webhook.certSecret=s"}},
		{"events without a controller to act on them", "no controller would act on the events", []string{"nodeTagSync.enabled=false", "labelSync.enabled=true", sqsQueue}},
		{"an SQS queue URL that is none", "/events/sqs/queueURL", []string{"events.sqs.queueURL=tagsync-events"}},
		{"an events duration that is none", "/events/resyncInterval", []string{"events.resyncInterval=hourly"}},
		{"an unknown events.webhook value", "additional properties 'path' not allowed", []string{"events.webhook.path=/x"}},
		{"a provider that is none", "/nodeTagSync/spec/provider", []string{"nodeTagSync.spec.provider=gcp"}},
		{"the AWS node sync with workload identity and no client ID", "set azure.authMode=default", []string{"nodeTagSync.spec.provider=aws"}},
		{"a ServiceMonitor with no token to send", "set metrics.serviceMonitor.authorization.existingSecret",
			[]string{"metrics.serviceMonitor.enabled=true", "rbac.create=false"}},
		{"fixedIDs that is no boolean", "/fixedIDs", []string{"fixedIDs=maybe"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "tagsync", chartDir()}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := exec.Command(helmBinary(t), args...).CombinedOutput()
			if err == nil {
				t.Fatalf("helm template --set %v succeeded, want a failure", tc.set)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("helm template --set %v failed without saying %q:\n%s", tc.set, tc.want, out)
			}
		})
	}
}

// eventsFlags are the `tagsync run` flags of the cloud event sources
// (docs/events.md); the defaults row checks the chart passes none.
var eventsFlags = []string{
	"--events-webhook-bind-address", "--events-webhook-cert-dir", "--events-webhook-secret-file",
	"--events-webhook-entra-tenant-id", "--events-webhook-entra-audience", "--events-webhook-entra-authority",
	"--events-webhook-entra-allowed-callers", "--events-max-age", "--events-sqs-queue-url", "--events-sqs-region",
	"--events-sqs-max-hold", "--events-sqs-attribution-wait", "--events-resync-interval", "--events-queue-size", "--events-silent-after",
}

// eventsCases are the renderings with cloud events on (the defaults row
// checks they are off): ci/events-values.yaml, an Entra-only webhook with its own
// certificate behind a LoadBalancer, the SQS queue with the metadata
// controller, the AWS node sync with static keys. Each checks the events
// flags it must and must not pass, and the webhook's Service, Ingress,
// container port and Secret mounts.
func eventsCases() []chartCase {
	common := []string{"--events-resync-interval=1h", "--events-queue-size=10000", "--events-max-age=1h", "--events-silent-after=10m"}
	const secretFile = "--events-webhook-secret-file=/etc/tagsync/events-webhook-secret/key"
	return []chartCase{
		{name: "ci/events-values.yaml", values: "charts/tagsync/ci/events-values.yaml", controllers: "nodetags",
			args:   append([]string{"--events-webhook-bind-address=:9443", secretFile}, common...),
			noArgs: []string{"--events-webhook-cert-dir", "--events-webhook-entra-tenant-id", "--events-webhook-entra-audience", "--events-sqs-queue-url"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkWebhookService(t, objs, "ClusterIP", 9443)
				checkWebhookMounts(t, objs, map[string]string{"events-webhook-secret": "tagsync-events-webhook"})
				checkWebhookIngress(t, objs, "nginx", "tagsync-events.example.com", "tagsync-events-ingress-tls")
				checkPodIPEnv(t, objs, true)
			}},
		{name: "Entra only, own certificate, LoadBalancer",
			set: "events.webhook.enabled=true,events.webhook.port=10443,events.webhook.certSecret=tagsync-events-tls," +
				"events.webhook.entra.tenantID=00000000-0000-0000-0000-000000000071,events.webhook.entra.audience=api://tagsync-eventgrid," +
				"events.webhook.entra.authority=https://login.microsoftonline.us,events.webhook.service.type=LoadBalancer," +
				"events.webhook.entra.allowedCallers={4962773b-9cdb-44cf-a8bf-237846a00ab7}," +
				"events.webhook.service.loadBalancerSourceRanges={20.0.0.0/8},events.resyncInterval=30m,events.queueSize=500,events.maxAge=2h,events.silentAfter=0s",
			controllers: "nodetags",
			args: []string{"--events-webhook-bind-address=:10443", "--events-webhook-cert-dir=/etc/tagsync/events-webhook-tls",
				"--events-webhook-entra-tenant-id=00000000-0000-0000-0000-000000000071", "--events-webhook-entra-audience=api://tagsync-eventgrid",
				"--events-webhook-entra-authority=https://login.microsoftonline.us",
				"--events-webhook-entra-allowed-callers=4962773b-9cdb-44cf-a8bf-237846a00ab7",
				"--events-resync-interval=30m", "--events-queue-size=500", "--events-max-age=2h", "--events-silent-after=0s"},
			noArgs: []string{"--events-webhook-secret-file", "--events-sqs-queue-url"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				svc := checkWebhookService(t, objs, "LoadBalancer", 10443)
				if ranges, _, _ := unstructured.NestedStringSlice(svc.Object, "spec", "loadBalancerSourceRanges"); !slices.Equal(ranges, []string{"20.0.0.0/8"}) {
					t.Errorf("loadBalancerSourceRanges %v, want [20.0.0.0/8]", ranges)
				}
				checkWebhookMounts(t, objs, map[string]string{"events-webhook-cert": "tagsync-events-tls"})
				if n := len(ofKind(objs, "Ingress")); n != 0 {
					t.Errorf("%d Ingresses, want none", n)
				}
			}},
		{name: "SQS with the metadata controller (IRSA)", values: awsModes["awsIRSA"],
			set:         "events.sqs.queueURL=https://sqs.us-east-1.amazonaws.com/111122223333/tagsync-events,events.sqs.region=us-east-1,events.sqs.maxHold=30m,events.sqs.attributionWait=2m",
			controllers: "metadata",
			args: append([]string{"--events-sqs-queue-url=https://sqs.us-east-1.amazonaws.com/111122223333/tagsync-events",
				"--events-sqs-region=us-east-1", "--events-sqs-max-hold=30m", "--events-sqs-attribution-wait=2m", "--aws-region=us-east-1"}, common...),
			noArgs: []string{"--events-webhook-bind-address", "--events-webhook-secret-file"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkNoWebhook(t, objs)
				checkPodIPEnv(t, objs, false)
			}},
		{name: "AWS node sync with static keys and SQS",
			set: "azure.authMode=default,nodeTagSync.spec.provider=aws,nodeTagSync.spec.labelPrefix=aws.tags,aws.region=eu-west-1," +
				"aws.existingSecret=tagsync-aws,events.sqs.queueURL=https://sqs.eu-west-1.amazonaws.com/111122223333/tagsync-events",
			controllers: "nodetags",
			args:        append([]string{"--events-sqs-queue-url=https://sqs.eu-west-1.amazonaws.com/111122223333/tagsync-events", "--aws-region=eu-west-1"}, common...),
			noArgs:      []string{"--events-sqs-region", "--events-webhook-bind-address"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkAWSKeysFromSecret(t, deployment(t, objs).Spec.Template.Spec.Containers[0].Env, "tagsync-aws")
				checkAWSNodeTagSync(t, objs)
				checkNoWebhook(t, objs)
			}},
	}
}

// checkAWSNodeTagSync: the NodeTagSync is on AWS with labelPrefix aws.tags,
// and the admission policy guards that prefix.
func checkAWSNodeTagSync(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	nts := oneOfKind(t, objs, "NodeTagSync")
	provider, _, _ := unstructured.NestedString(nts.Object, "spec", "provider")
	prefix, _, _ := unstructured.NestedString(nts.Object, "spec", "labelPrefix")
	if provider != "aws" || prefix != "aws.tags" {
		t.Errorf("NodeTagSync provider %q labelPrefix %q, want aws and aws.tags", provider, prefix)
	}
	guarded, _, _ := unstructured.NestedSlice(oneOfKind(t, objs, "ValidatingAdmissionPolicy").Object, "spec", "variables")
	if !strings.Contains(fmt.Sprint(guarded), `["aws.tags"]`) {
		t.Errorf("the admission policy does not guard aws.tags: %v", guarded)
	}
}

// checkNoWebhook: no webhook Service, Ingress or container port.
func checkNoWebhook(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if strings.HasSuffix(o.GetName(), "-events-webhook") {
			t.Errorf("%s %s rendered without the webhook", o.GetKind(), o.GetName())
		}
	}
	for _, p := range deployment(t, objs).Spec.Template.Spec.Containers[0].Ports {
		if p.Name == "events-webhook" {
			t.Errorf("container port events-webhook rendered without the webhook")
		}
	}
}

// checkWebhookService: the webhook has a Service of its own (the metrics
// Service stays as it is) of type typ, whose port reaches the container
// port events-webhook, which is port; it returns the Service.
func checkWebhookService(t *testing.T, objs []*unstructured.Unstructured, typ string, port int) *unstructured.Unstructured {
	t.Helper()
	var svc *unstructured.Unstructured
	for _, o := range ofKind(objs, "Service") {
		switch o.GetName() {
		case "tagsync-events-webhook":
			svc = o
		case "tagsync-metrics":
		default:
			t.Errorf("unexpected Service %s", o.GetName())
		}
	}
	if svc == nil {
		t.Fatal("no Service tagsync-events-webhook")
	}
	gotType, _, _ := unstructured.NestedString(svc.Object, "spec", "type")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if want := fmt.Sprintf("[map[name:events-webhook port:%d protocol:TCP targetPort:events-webhook]]", port); gotType != typ || fmt.Sprint(ports) != want {
		t.Errorf("Service tagsync-events-webhook: type %s ports %v, want %s with %s", gotType, ports, typ, want)
	}
	var found bool
	for _, p := range deployment(t, objs).Spec.Template.Spec.Containers[0].Ports {
		found = found || (p.Name == "events-webhook" && int(p.ContainerPort) == port)
	}
	if !found {
		t.Errorf("no container port events-webhook %d", port)
	}
	return svc
}

// checkWebhookMounts: the webhook's volumes (by name, with their Secrets)
// are exactly want, each mounted read-only where the flag naming its file
// or directory points.
func checkWebhookMounts(t *testing.T, objs []*unstructured.Unstructured, want map[string]string) {
	t.Helper()
	pod := deployment(t, objs).Spec.Template.Spec
	c := pod.Containers[0]
	got := map[string]string{}
	for _, v := range pod.Volumes {
		if v.Secret != nil && strings.HasPrefix(v.Name, "events-webhook-") {
			got[v.Name] = v.Secret.SecretName
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("webhook volumes %v, want %v", got, want)
	}
	flagOf := map[string]string{"events-webhook-cert": "--events-webhook-cert-dir", "events-webhook-secret": "--events-webhook-secret-file"}
	for _, m := range c.VolumeMounts {
		flag, ok := flagOf[m.Name]
		if !ok {
			continue
		}
		if !m.ReadOnly || !strings.HasPrefix(argValue(c.Args, flag), m.MountPath) {
			t.Errorf("mount %+v: want read-only, and %s under it (args %v)", m, flag, c.Args)
		}
	}
}

// checkWebhookIngress: one Ingress of class className for host, with TLS
// from tlsSecret, sending every path to the webhook's Service.
func checkWebhookIngress(t *testing.T, objs []*unstructured.Unstructured, className, host, tlsSecret string) {
	t.Helper()
	ing := oneOfKind(t, objs, "Ingress").Object
	class, _, _ := unstructured.NestedString(ing, "spec", "ingressClassName")
	rules, _, _ := unstructured.NestedSlice(ing, "spec", "rules")
	want := fmt.Sprintf("[map[host:%s http:map[paths:[map[backend:map[service:map[name:tagsync-events-webhook port:map[name:events-webhook]]] path:/ pathType:Prefix]]]]]", host)
	if class != className || fmt.Sprint(rules) != want {
		t.Errorf("Ingress class %q rules %v, want class %q and %s", class, rules, className, want)
	}
	tls, _, _ := unstructured.NestedSlice(ing, "spec", "tls")
	if len(tls) != 1 || tls[0].(map[string]any)["secretName"] != tlsSecret {
		t.Errorf("Ingress TLS %v, want the Secret %s", tls, tlsSecret)
	}
}

// TestChartCRDsAreTheGeneratedOnes: the chart ships exactly the CRDs
// controller-gen writes to config/crd/bases (`make generate` copies them to
// files/crds, `make verify-generated` catches a stale copy; this catches a
// hand edit), and renders them (crds.enabled, the default) as they are,
// with the chart's labels and helm.sh/resource-policy: keep (crds.keep, the
// default; none with crds.keep=false), or not at all with
// crds.enabled=false; the API server accepts them; and the chart has no
// crds/ folder, which Helm would install once and never upgrade.
func TestChartCRDsAreTheGeneratedOnes(t *testing.T) {
	gen, _ := filepath.Glob(filepath.Join(kube.RootDir, "config", "crd", "bases", "*.yaml"))
	shipped, _ := filepath.Glob(filepath.Join(chartDir(), "files", "crds", "*.yaml"))
	if len(gen) == 0 || len(gen) != len(shipped) {
		t.Fatalf("config/crd/bases has %d CRDs, charts/tagsync/files/crds %d: run `make generate`", len(gen), len(shipped))
	}
	if _, err := os.Stat(filepath.Join(chartDir(), "crds")); !os.IsNotExist(err) {
		t.Errorf("charts/tagsync/crds exists (%v): Helm would install those CRDs once and never upgrade them", err)
	}
	want := map[string]*unstructured.Unstructured{}
	for _, g := range gen {
		b, err := os.ReadFile(g)
		must(t, err)
		got, err := os.ReadFile(filepath.Join(chartDir(), "files", "crds", filepath.Base(g)))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("charts/tagsync/files/crds/%s differs from config/crd/bases (%v): run `make generate`", filepath.Base(g), err)
		}
		objs, err := decodeObjects(b)
		must(t, err)
		for _, o := range objs {
			want[o.GetName()] = o
		}
	}
	for _, c := range []struct {
		set    string
		n      int
		policy string
	}{{"", len(gen), "keep"}, {"crds.keep=false", len(gen), ""}, {"crds.enabled=false", 0, ""}} {
		objs := renderChart(t, chartNS, "--set", c.set)
		crds := ofKind(objs, "CustomResourceDefinition")
		if len(crds) != c.n {
			t.Errorf("--set %q renders %d CRDs, want %d", c.set, len(crds), c.n)
		}
		for _, crd := range crds {
			w, ok := want[crd.GetName()]
			if !ok {
				t.Errorf("--set %q renders CRD %s, which config/crd/bases lacks", c.set, crd.GetName())
				continue
			}
			if got := crd.GetAnnotations()["helm.sh/resource-policy"]; got != c.policy {
				t.Errorf("--set %q: CRD %s has helm.sh/resource-policy %q, want %q", c.set, crd.GetName(), got, c.policy)
			}
			if crd.GetLabels()["app.kubernetes.io/part-of"] != "tagsync" {
				t.Errorf("--set %q: CRD %s lacks the chart's labels: %v", c.set, crd.GetName(), crd.GetLabels())
			}
			bare := crd.DeepCopy()
			bare.SetLabels(nil)
			annotations := bare.GetAnnotations()
			delete(annotations, "helm.sh/resource-policy")
			bare.SetAnnotations(annotations)
			if !equality.Semantic.DeepEqual(bare.Object, w.Object) {
				t.Errorf("--set %q: the rendered CRD %s is not config/crd/bases' one with the chart's labels", c.set, crd.GetName())
			}
		}
		if c.set == "" {
			apply(context.Background(), t, crds, client.DryRunAll)
		}
	}
}

// TestChartRBACStaysWithinTheControllerMarkers compares the chart's
// controller rules with config/rbac/role.yaml, which controller-gen writes
// from the controllers' +kubebuilder:rbac markers: the chart grants nothing
// the markers do not declare (the leader-election Role is the manager's, not
// a controller's), and what the markers declare but the chart leaves out is
// exactly what TestChartRBACIsEnoughAndEveryRuleIsNeeded shows unneeded.
func TestChartRBACStaysWithinTheControllerMarkers(t *testing.T) {
	// Every controller, so every marker has its rule in the chart.
	objs := renderChart(t, chartNS, "--set", "metadata.enabled=true,openshift.enabled=true,labelSync.enabled=true,workloadTags.enabled=true")
	generated := grants(t, readObjects(t, "config/rbac/role.yaml"))
	chart := grants(t, ofKind(objs, "ClusterRole"))
	for _, role := range ofKind(objs, "Role") {
		if role.GetName() != "tagsync-leader-election" {
			chart = append(chart, grants(t, []*unstructured.Unstructured{role})...)
		}
	}
	for _, g := range chart {
		if !slices.Contains(generated, g) {
			t.Errorf("the chart grants %s, which no +kubebuilder:rbac marker declares", g)
		}
	}
	// The controller reads through its informer cache (list, watch) and
	// writes status with a merge patch, so these are never used.
	unneeded := []string{"get /nodes", "get tagsync.io/nodetagsyncs", "get tagsync.io/nodetagsyncs/status", "update tagsync.io/nodetagsyncs/status"}
	for _, g := range generated {
		if !slices.Contains(chart, g) && !slices.Contains(unneeded, g) {
			t.Errorf("the markers declare %s, which the chart does not grant: add it to charts/tagsync/templates/rbac.yaml (the RBAC proof will show whether it is needed)", g)
		}
	}
}

// TestSampleIsTheChartWithComments: config/samples/tagsync-aks.yaml is the
// chart rendered with its defaults but crds.enabled=false (and the
// placeholder IDs it asks to edit), object for object, apart from Helm's bookkeeping labels; and the
// API server accepts it and the NodeTagSync sample.
func TestSampleIsTheChartWithComments(t *testing.T) {
	ctx := context.Background()
	const placeholder = "00000000-0000-0000-0000-000000000000"
	sample := slices.DeleteFunc(readObjects(t, "config/samples/tagsync-aks.yaml"), func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "Namespace"
	})
	// The sample leaves the CRDs to `kubectl apply -f config/crd/bases`.
	chart := renderChart(t, chartNS, "--set", "crds.enabled=false,azure.clientID="+placeholder+",azure.tenantID="+placeholder+",azure.subscriptionID="+placeholder)
	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	rendered := map[string]*unstructured.Unstructured{}
	for _, o := range chart {
		rendered[key(o)] = o
	}
	seen := map[string]bool{}
	for _, o := range sample {
		k := key(o)
		seen[k] = true
		c, ok := rendered[k]
		if !ok {
			t.Errorf("the sample has %s, the chart does not", k)
			continue
		}
		a, b := withoutHelmLabels(o), withoutHelmLabels(c)
		if !equality.Semantic.DeepEqual(a.Object, b.Object) {
			t.Errorf("the sample's %s differs from the chart's:\nsample: %v\nchart:  %v", k, a.Object, b.Object)
		}
	}
	for k := range rendered {
		if !seen[k] {
			t.Errorf("the chart renders %s, the sample lacks it", k)
		}
	}
	ensureNamespace(ctx, t, chartNS)
	apply(ctx, t, append(sample, readObjects(t, "config/samples/tagsync_v1alpha1_nodetagsync.yaml")...), client.DryRunAll)
}

// withoutHelmLabels drops the labels Helm adds (chart version, managed-by,
// app version), which a hand-applied sample does not carry.
func withoutHelmLabels(o *unstructured.Unstructured) *unstructured.Unstructured {
	out := o.DeepCopy()
	labels := out.GetLabels()
	for _, k := range []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"} {
		delete(labels, k)
	}
	out.SetLabels(labels)
	return out
}

// grants flattens the rules of roles into "verb group/resource" strings.
func grants(t testing.TB, roles []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, role := range roles {
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		for _, r := range rules {
			field := func(name string) []string {
				v, _, _ := unstructured.NestedStringSlice(r.(map[string]any), name)
				return v
			}
			for _, g := range field("apiGroups") {
				for _, res := range field("resources") {
					for _, v := range field("verbs") {
						out = append(out, fmt.Sprintf("%s %s/%s", v, g, res))
					}
				}
			}
		}
	}
	return out
}

// deployment decodes the chart's Deployment.
func deployment(t testing.TB, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(oneOfKind(t, objs, "Deployment").Object, &d))
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", n)
	}
	return &d
}

// wantArgs fails unless args holds every one of want.
func wantArgs(t *testing.T, args []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Errorf("args %v lack %s", args, w)
		}
	}
}

// noArgs fails if args holds any of flags (with or without a value).
func noArgs(t *testing.T, args []string, flags ...string) {
	t.Helper()
	for _, a := range args {
		if flag, _, _ := strings.Cut(a, "="); slices.Contains(flags, flag) {
			t.Errorf("args %v hold %s", args, a)
		}
	}
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// sameElements reports whether a and b hold the same strings, each as
// often.
func sameElements(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// tagsyncRunFlags lists the long flags `tagsync run --help` prints.
func tagsyncRunFlags(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command(tagsyncBinary(t), "run", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("tagsync run --help: %v\n%s", err, out)
	}
	var flags []string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "--") {
			flags = append(flags, strings.TrimRight(f, ",="))
		}
	}
	return flags
}

// checkPodIPEnv checks that the manager gets POD_IP from the downward API
// (status.podIP) exactly when want: the address the leader advertises on
// its Lease for followers to forward Event Grid deliveries to.
func checkPodIPEnv(t *testing.T, objs []*unstructured.Unstructured, want bool) {
	t.Helper()
	checked := 0
	for _, d := range ofKind(objs, "Deployment") {
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			checked++
			env, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
			got := false
			for _, e := range env {
				if m := e.(map[string]any); m["name"] == "POD_IP" {
					path, _, _ := unstructured.NestedString(m, "valueFrom", "fieldRef", "fieldPath")
					got = path == "status.podIP"
				}
			}
			if got != want {
				t.Errorf("container %v: POD_IP from status.podIP is %v, want %v", c.(map[string]any)["name"], got, want)
			}
		}
	}
	if checked == 0 {
		t.Error("no Deployment container to check POD_IP in")
	}
}

// checkHardened checks ci/hardened-values.yaml's rendering: the
// NetworkPolicy admits the metrics port from the monitoring namespace, the
// health port from anywhere, the webhook from the Ingress controller's
// namespace and from the tagsync Pods; the extra volume is mounted.
func checkHardened(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	policies := ofKind(objs, "NetworkPolicy")
	if len(policies) != 1 {
		t.Fatalf("%d NetworkPolicies, want 1", len(policies))
	}
	var np networkingv1.NetworkPolicy
	must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(policies[0].Object, &np))
	admits := map[string][]string{}
	for _, rule := range np.Spec.Ingress {
		for _, port := range rule.Ports {
			from := "anyone"
			for _, peer := range rule.From {
				for _, sel := range []*metav1.LabelSelector{peer.NamespaceSelector, peer.PodSelector} {
					if sel != nil {
						from = fmt.Sprint(sel.MatchLabels)
					}
				}
			}
			admits[port.Port.String()] = append(admits[port.Port.String()], from)
		}
	}
	for port, want := range map[string][]string{"https": {"monitoring"}, "health": {"anyone"}, "events-webhook": {"ingress-nginx", "app.kubernetes.io/name:tagsync"}} {
		got := strings.Join(admits[port], " | ")
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("port %s admits %q, want %q among them", port, got, w)
			}
		}
	}
	dep := deployment(t, objs)
	var mounted, volume bool
	for _, m := range dep.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == "proxy-ca" && m.MountPath == "/etc/tagsync/proxy-ca")
	}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		volume = volume || (v.Name == "proxy-ca" && v.ConfigMap != nil && v.ConfigMap.Name == "corp-proxy-ca")
	}
	if !mounted || !volume {
		t.Errorf("the extra volume: mounted %t, in the Pod %t; want both", mounted, volume)
	}
}
