package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// authModes are the chart's values files, one per auth mode (the same
// files `make helm-check` lints and renders).
var authModes = map[string]string{
	"workloadIdentity": "charts/tagsync/ci/workload-identity-values.yaml",
	"managedIdentity":  "charts/tagsync/ci/managed-identity-values.yaml",
	"servicePrincipal": "charts/tagsync/ci/service-principal-values.yaml",
}

// TestChartCRDsAreTheGeneratedOnes: the chart ships exactly the CRDs
// controller-gen writes to config/crd/bases (`make generate` copies them,
// `make verify-generated` catches a stale copy; this catches a hand edit).
func TestChartCRDsAreTheGeneratedOnes(t *testing.T) {
	gen, _ := filepath.Glob(filepath.Join(kube.RootDir, "config", "crd", "bases", "*.yaml"))
	shipped, _ := filepath.Glob(filepath.Join(chartDir(), "crds", "*.yaml"))
	if len(gen) == 0 || len(gen) != len(shipped) {
		t.Fatalf("config/crd/bases has %d CRDs, charts/tagsync/crds %d: run `make generate`", len(gen), len(shipped))
	}
	for _, g := range gen {
		want, err := os.ReadFile(g)
		must(t, err)
		got, err := os.ReadFile(filepath.Join(chartDir(), "crds", filepath.Base(g)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("charts/tagsync/crds/%s differs from config/crd/bases (%v): run `make generate`", filepath.Base(g), err)
		}
	}
}

// TestChartRendersForEachAuthMode renders the chart with its defaults and
// with each auth mode's values, checks what the issue asks of it (replicas
// and leader election, probes and ports, hardened security context,
// resources, the auth wiring of each mode, the PDB, the metrics Service and
// optional ServiceMonitor, the NodeTagSync and the admission policy), checks
// every flag it passes is a flag of `tagsync run`, and has the real API
// server validate every object (server-side dry-run apply, strict fields;
// the NodeTagSync against its CRD's schema and CEL rules).
func TestChartRendersForEachAuthMode(t *testing.T) {
	ctx := context.Background()
	const ns = "tagsync-system"
	ensureNamespace(ctx, t, ns)
	runFlags := tagsyncRunFlags(t)
	cases := map[string][]string{"defaults": nil}
	for mode, file := range authModes {
		cases[mode] = []string{"--values", filepath.Join(kube.RootDir, file)}
	}
	for name, flags := range cases {
		t.Run(name, func(t *testing.T) {
			objs := renderChart(t, ns, flags...)
			dep := deployment(t, objs)
			checkDeployment(t, dep)
			checkAuthWiring(t, name, dep, objs)
			for _, arg := range dep.Spec.Template.Spec.Containers[0].Args[1:] {
				flag, _, _ := strings.Cut(arg, "=")
				if !slices.Contains(runFlags, flag) {
					t.Errorf("the chart passes %s, which `tagsync run` does not know", flag)
				}
			}
			for _, kind := range []string{"ServiceAccount", "ClusterRoleBinding", "Service", "PodDisruptionBudget", "NodeTagSync", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
				oneOfKind(t, objs, kind)
			}
			if n := len(ofKind(objs, "ClusterRole")); n != 2 {
				t.Errorf("%d ClusterRoles, want 2 (the manager's, metrics-reader)", n)
			}
			checkSecureMetrics(t, objs)
			if n := len(ofKind(objs, "Role")); n != 2 {
				t.Errorf("%d Roles, want 2 (leader election, events)", n)
			}
			if (name == "servicePrincipal") != (len(ofKind(objs, "ServiceMonitor")) == 1) {
				t.Errorf("ServiceMonitor rendered %d times; the servicePrincipal values enable it, the others do not", len(ofKind(objs, "ServiceMonitor")))
			}
			var serverSide []*unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() != "ServiceMonitor" { // the Prometheus Operator's CRD is not installed here
					serverSide = append(serverSide, o)
				}
			}
			apply(ctx, t, serverSide, client.DryRunAll)
		})
	}
}

// checkSecureMetrics checks what secure metrics need of the chart: the
// flag, the Service's https port, the manager's right to create
// TokenReviews and SubjectAccessReviews, the metrics-reader ClusterRole and,
// when rendered, a ServiceMonitor scraping over HTTPS with its token.
func checkSecureMetrics(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	if args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--metrics-secure=true") {
		t.Errorf("args %v lack --metrics-secure=true", args)
	}
	var svc corev1.Service
	must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(oneOfKind(t, objs, "Service").Object, &svc))
	if ps := svc.Spec.Ports; len(ps) != 1 || ps[0].Name != "https" || ps[0].Port != 8443 || ps[0].TargetPort.String() != "https" {
		t.Errorf("Service ports %+v, want https 8443 -> https", ps)
	}
	var manager []*unstructured.Unstructured
	for _, r := range ofKind(objs, "ClusterRole") {
		if strings.HasSuffix(r.GetName(), "-manager") {
			manager = append(manager, r)
		}
	}
	g := grants(t, manager)
	for _, want := range []string{"create authentication.k8s.io/tokenreviews", "create authorization.k8s.io/subjectaccessreviews"} {
		if !slices.Contains(g, want) {
			t.Errorf("the manager's ClusterRole lacks %s (secure metrics need it): %v", want, g)
		}
	}
	reader := metricsReaderRole(t, objs)
	if rules, _, _ := unstructured.NestedSlice(reader.Object, "rules"); fmt.Sprint(rules) != "[map[nonResourceURLs:[/metrics] verbs:[get]]]" {
		t.Errorf("%s grants %v, want get on /metrics only", reader.GetName(), rules)
	}
	for _, sm := range ofKind(objs, "ServiceMonitor") {
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(endpoints) != 1 {
			t.Fatalf("ServiceMonitor endpoints %v, want 1", endpoints)
		}
		ep := endpoints[0].(map[string]any)
		skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify")
		if ep["port"] != "https" || ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" || !skip {
			t.Errorf("ServiceMonitor endpoint %v: want port https, scheme https, the pod's ServiceAccount token and the self-signed certificate accepted", ep)
		}
	}
}

// TestChartMetricsSettings: metrics.certSecret mounts a TLS Secret and
// points --metrics-cert-dir at it; metrics.secure=false serves plain HTTP,
// with neither the review rights nor the metrics-reader ClusterRole.
func TestChartMetricsSettings(t *testing.T) {
	withCert := deployment(t, renderChart(t, "tagsync-system", "--set", "metrics.certSecret=tagsync-metrics-tls"))
	pod := withCert.Spec.Template.Spec
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

	plain := renderChart(t, "tagsync-system", "--set", "metrics.secure=false,metrics.serviceMonitor.enabled=true")
	if args := deployment(t, plain).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--metrics-secure=false") {
		t.Errorf("metrics.secure=false: args %v lack --metrics-secure=false", args)
	}
	if n := len(ofKind(plain, "ClusterRole")); n != 1 {
		t.Errorf("metrics.secure=false: %d ClusterRoles, want only the manager's", n)
	}
	if g := grants(t, ofKind(plain, "ClusterRole")); slices.Contains(g, "create authentication.k8s.io/tokenreviews") {
		t.Errorf("metrics.secure=false: the manager may still create tokenreviews: %v", g)
	}
	endpoints, _, _ := unstructured.NestedSlice(oneOfKind(t, plain, "ServiceMonitor").Object, "spec", "endpoints")
	if ep := endpoints[0].(map[string]any); ep["port"] != "http" || ep["scheme"] != "http" || ep["bearerTokenFile"] != nil {
		t.Errorf("metrics.secure=false: ServiceMonitor endpoint %v, want plain http without a token", ep)
	}
}

// TestChartRefusesSettingsThatCannotWork: helm template fails, saying what
// to set, on auth settings that cannot work, on replicas without leader
// election, on no controller at all, on audit log paths the chart cannot
// give a volume, on the OpenShift adapter without the metadata controller
// or outside the namespaces it serves, and (the schema) on malformed AWS
// regions, namespaces and Azure owned tags and on AWS keys in the values.
func TestChartRefusesSettingsThatCannotWork(t *testing.T) {
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "tagsync", chartDir()}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			cmd := exec.Command(helmBinary(t), args...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("helm template --set %v succeeded, want a failure", tc.set)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("helm template --set %v failed without saying %q:\n%s", tc.set, tc.want, out)
			}
		})
	}
}

// TestChartRBACStaysWithinTheControllerMarkers compares the chart's
// controller rules with config/rbac/role.yaml, which controller-gen writes
// from the controller's +kubebuilder:rbac markers: the chart grants nothing
// the markers do not declare (the leader-election Role is the manager's, not
// a controller's), and what the markers declare but the chart leaves out is
// exactly what TestChartRBACIsEnoughAndEveryRuleIsNeeded shows unneeded
// (TestChartMetadataRBACIsEnoughAndEveryRuleIsNeeded for the metadata
// controller).
func TestChartRBACStaysWithinTheControllerMarkers(t *testing.T) {
	// Every controller, so every marker has its rule in the chart.
	objs := renderChart(t, "tagsync-system", "--set", "metadata.enabled=true,openshift.enabled=true,labelSync.enabled=true")
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
// chart rendered with its defaults (and the placeholder IDs it asks to
// edit), object for object, apart from Helm's bookkeeping labels; and the
// API server accepts it and the NodeTagSync sample.
func TestSampleIsTheChartWithComments(t *testing.T) {
	ctx := context.Background()
	const ns = "tagsync-system"
	const placeholder = "00000000-0000-0000-0000-000000000000"
	sample := readObjects(t, "config/samples/tagsync-aks.yaml")
	chart := renderChart(t, ns, "--set", "azure.clientID="+placeholder+",azure.tenantID="+placeholder+",azure.subscriptionID="+placeholder)
	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	rendered := map[string]*unstructured.Unstructured{}
	for _, o := range chart {
		rendered[key(o)] = o
	}
	seen := map[string]bool{}
	for _, o := range sample {
		if o.GetKind() == "Namespace" {
			continue
		}
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
	ensureNamespace(ctx, t, ns)
	var rest []*unstructured.Unstructured
	for _, o := range sample {
		if o.GetKind() != "Namespace" {
			rest = append(rest, o)
		}
	}
	rest = append(rest, readObjects(t, "config/samples/tagsync_v1alpha1_nodetagsync.yaml")...)
	apply(ctx, t, rest, client.DryRunAll)
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
			rule := r.(map[string]any)
			groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
			resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
			for _, g := range groups {
				for _, res := range resources {
					for _, v := range verbs {
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

// checkDeployment checks the parts of the Deployment every auth mode shares
// (the node sync alone: metadata.enabled is false by default).
func checkDeployment(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if got := ptr.Deref(d.Spec.Replicas, 0); got != 2 {
		t.Errorf("replicas = %d, want 2", got)
	}
	for _, want := range []string{"--controllers=nodetags", "--leader-elect=true", "--leader-election-namespace=tagsync-system", "--metrics-bind-address=:8443", "--health-probe-bind-address=:8081"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["https"] != 8443 || ports["health"] != 8081 {
		t.Errorf("container ports %v, want https 8443 and health 8081", ports)
	}
	for name, probe := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name || probe.HTTPGet.Port.String() != "health" {
			t.Errorf("probe %s: %+v, want an HTTP GET of %s on port health (8081)", name, probe, name)
		}
	}
	psc, sc := pod.SecurityContext, c.SecurityContext
	switch {
	case psc == nil || !ptr.Deref(psc.RunAsNonRoot, false) || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("pod securityContext %+v: want runAsNonRoot and seccomp RuntimeDefault", psc)
	case sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
		ptr.Deref(sc.Privileged, true) || !ptr.Deref(sc.RunAsNonRoot, false) || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("container securityContext %+v: want non-root, read-only root filesystem, no privilege escalation, all capabilities dropped, seccomp RuntimeDefault", sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit", r)
		}
	}
}

// checkAuthWiring checks each auth mode's pod label, ServiceAccount
// annotation, flags and secret volume.
func checkAuthWiring(t *testing.T, mode string, d *appsv1.Deployment, objs []*unstructured.Unstructured) {
	t.Helper()
	pod := d.Spec.Template.Spec
	args := pod.Containers[0].Args
	sa := oneOfKind(t, objs, "ServiceAccount")
	wiLabel := d.Spec.Template.Labels["azure.workload.identity/use"]
	has := func(prefix string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, prefix) })
	}
	switch mode {
	case "workloadIdentity", "defaults":
		if wiLabel != "true" || !slices.Contains(args, "--azure-auth-mode=workload-identity") {
			t.Errorf("workload identity: pod label %q, args %v", wiLabel, args)
		}
		if mode == "workloadIdentity" && sa.GetAnnotations()["azure.workload.identity/client-id"] == "" {
			t.Errorf("workload identity: the ServiceAccount lacks azure.workload.identity/client-id: %v", sa.GetAnnotations())
		}
	case "managedIdentity":
		if wiLabel != "" || !slices.Contains(args, "--azure-auth-mode=managed-identity") || !has("--azure-client-id=") {
			t.Errorf("managed identity: pod label %q, args %v", wiLabel, args)
		}
	case "servicePrincipal":
		if wiLabel != "" || !slices.Contains(args, "--azure-auth-mode=client-secret") || !has("--azure-client-id=") || !has("--azure-tenant-id=") {
			t.Errorf("service principal: pod label %q, args %v", wiLabel, args)
		}
		mounts := pod.Containers[0].VolumeMounts
		if len(mounts) != 1 || len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != "tagsync-azure" {
			t.Fatalf("service principal: want the Secret tagsync-azure mounted, got volumes %+v mounts %+v", pod.Volumes, mounts)
		}
		file := filepath.Join(mounts[0].MountPath, pod.Volumes[0].Secret.Items[0].Path)
		if !slices.Contains(args, "--azure-client-secret-file="+file) {
			t.Errorf("service principal: args %v do not read the mounted secret %s", args, file)
		}
		if len(pod.Containers[0].Env) != 0 {
			t.Errorf("service principal: the secret must come as a file, not in env %v", pod.Containers[0].Env)
		}
	}
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
