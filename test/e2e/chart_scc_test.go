package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

// openShiftValues is the chart's values file for OpenShift.
const openShiftValues = "charts/tagsync/ci/openshift-values.yaml"

// TestChartOpenShiftPodPassesRestrictedV2 renders the chart with
// ci/openshift-values.yaml and checks its pods (the manager's, and the
// objects Job's where the node sync runs) against the rules of
// OpenShift's restricted-v2 SecurityContextConstraints (restrictedV2
// Violations) and Pod Security "restricted" (the pod-security-admission
// library's own checks, at the latest version and at Kubernetes 1.27, the
// oldest the chart admits): the values that make the chart installable on
// OpenShift must leave out the user, group and fsGroup the SCC assigns. The
// chart's defaults, which fix UID/GID 65532, must fail the SCC and pass Pod
// Security restricted, so the check can tell the two apart.
func TestChartOpenShiftPodPassesRestrictedV2(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags []string
		scc   bool // restricted-v2 admits it
		pods  int  // the manager's, and the objects Job's with the node sync
	}{
		{"ci/openshift-values.yaml", []string{"--values", kube.RootDir + "/" + openShiftValues}, true, 1},
		{"fixedIDs=false with the metadata controller's audit log file", []string{"--set", "fixedIDs=false,metadata.enabled=true,metadata.auditLog=/var/log/tagsync/audit.log"}, true, 2},
		{"defaults", nil, false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			pods := map[string]corev1.PodTemplateSpec{"the manager's": deployment(t, renderChart(t, chartNS, c.flags...)).Spec.Template}
			for _, o := range ofKind(renderChartHooks(t, chartNS, c.flags...), "Job") {
				var job batchv1.Job
				must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &job))
				pods["Job "+job.Name+"'s"] = job.Spec.Template
			}
			if len(pods) != c.pods {
				t.Errorf("checked %d pods, want %d", len(pods), c.pods)
			}
			for name, pod := range pods {
				v := restrictedV2Violations(&pod.Spec)
				if c.scc && len(v) > 0 {
					t.Errorf("restricted-v2 SCC would reject %s pod:\n  %s", name, strings.Join(v, "\n  "))
				}
				if !c.scc && !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, "runAsUser 65532") }) {
					t.Errorf("restricted-v2 violations of %s pod %q, want the fixed runAsUser 65532 among them", name, v)
				}
				checkPodSecurityRestricted(t, &pod.ObjectMeta, &pod.Spec)
			}
		})
	}
}

// checkPodSecurityRestricted evaluates a pod with the Pod Security
// admission's checks at level restricted, at the latest version and at
// v1.27.
func checkPodSecurityRestricted(t *testing.T, meta *metav1.ObjectMeta, spec *corev1.PodSpec) {
	t.Helper()
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []api.Version{api.LatestVersion(), api.MajorMinorVersion(1, 27)} {
		results := policy.AggregateCheckResults(evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: v}, meta, spec))
		if !results.Allowed {
			t.Errorf("Pod Security restricted (%s) forbids the pod: %s: %s", v, results.ForbiddenReason(), results.ForbiddenDetail())
		}
	}
}

// restrictedV2Violations lists how a pod breaks OpenShift's restricted-v2
// SecurityContextConstraints (openshift/cluster-kube-apiserver-operator's
// bootstrap SCCs): runAsUser MustRunAsRange and fsGroup and supplemental
// groups MustRunAs from the namespace's range (annotations the chart cannot
// know, so none may be set), SELinux MustRunAs (the namespace's level: none
// may be set), allowPrivilegeEscalation false, every capability dropped
// (requiredDropCapabilities ALL; only NET_BIND_SERVICE may be added),
// seccomp runtime/default, no privileged container, no host network, PID,
// IPC or ports, and only the volume types it allows.
func restrictedV2Violations(spec *corev1.PodSpec) []string {
	var v []string
	add := func(format string, a ...any) { v = append(v, fmt.Sprintf(format, a...)) }
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		add("host namespaces: hostNetwork=%v hostPID=%v hostIPC=%v", spec.HostNetwork, spec.HostPID, spec.HostIPC)
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if psc.RunAsUser != nil {
		add("pod runAsUser %d: the SCC assigns the user from the namespace's range", *psc.RunAsUser)
	}
	if psc.RunAsGroup != nil {
		add("pod runAsGroup %d: the SCC assigns the group", *psc.RunAsGroup)
	}
	if psc.FSGroup != nil {
		add("pod fsGroup %d: the SCC assigns it from the namespace's range", *psc.FSGroup)
	}
	if len(psc.SupplementalGroups) > 0 {
		add("pod supplementalGroups %v", psc.SupplementalGroups)
	}
	if psc.SELinuxOptions != nil {
		add("pod seLinuxOptions %+v: the SCC assigns the namespace's level", *psc.SELinuxOptions)
	}
	podSeccomp := psc.SeccompProfile
	podNonRoot := psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
	allowed := []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
	for _, vol := range spec.Volumes {
		if typ := volumeType(vol); !slices.Contains(allowed, typ) {
			add("volume %s is %s, not one of %v", vol.Name, typ, allowed)
		}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if sc.RunAsUser != nil {
			add("container %s runAsUser %d: the SCC assigns the user from the namespace's range", c.Name, *sc.RunAsUser)
		}
		if sc.RunAsGroup != nil {
			add("container %s runAsGroup %d: the SCC assigns the group", c.Name, *sc.RunAsGroup)
		}
		if sc.SELinuxOptions != nil {
			add("container %s seLinuxOptions %+v", c.Name, *sc.SELinuxOptions)
		}
		if sc.Privileged != nil && *sc.Privileged {
			add("container %s is privileged", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			add("container %s does not set allowPrivilegeEscalation: false", c.Name)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			add("container %s does not drop ALL capabilities", c.Name)
		} else if added := slices.DeleteFunc(slices.Clone(sc.Capabilities.Add), func(c corev1.Capability) bool { return c == "NET_BIND_SERVICE" }); len(added) > 0 {
			add("container %s adds capabilities %v", c.Name, added)
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = podSeccomp
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			add("container %s: seccomp profile %v, want RuntimeDefault", c.Name, seccomp)
		}
		if nonRoot := sc.RunAsNonRoot; !podNonRoot && (nonRoot == nil || !*nonRoot) {
			add("container %s does not set runAsNonRoot: true", c.Name)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				add("container %s uses host port %d", c.Name, p.HostPort)
			}
		}
	}
	return v
}

// volumeType names the source of a volume as the SCC's volumes list does.
func volumeType(v corev1.Volume) string {
	switch s := v.VolumeSource; {
	case s.ConfigMap != nil:
		return "configMap"
	case s.CSI != nil:
		return "csi"
	case s.DownwardAPI != nil:
		return "downwardAPI"
	case s.EmptyDir != nil:
		return "emptyDir"
	case s.Ephemeral != nil:
		return "ephemeral"
	case s.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case s.Projected != nil:
		return "projected"
	case s.Secret != nil:
		return "secret"
	case s.HostPath != nil:
		return "hostPath"
	default:
		return "another volume type"
	}
}

// TestChartAdmitsOpenShift414 renders the chart as Helm would for
// OpenShift 4.14 to 4.16 (Kubernetes 1.27 to 1.29, no
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy) and for newer
// clusters: the chart's kubeVersion admits 1.27 and refuses 1.26, and the
// admission policy is rendered exactly where the API serves it -- by the
// served kinds against a cluster, by --kube-version without one.
func TestChartAdmitsOpenShift414(t *testing.T) {
	const vap = "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"
	// A cluster's capabilities list kinds; one without the policy's kind
	// still lists the webhooks'.
	const webhooks = "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration"
	for _, c := range []struct {
		name   string
		flags  []string
		policy bool
	}{
		{"no cluster, Kubernetes 1.27 (OpenShift 4.14)", []string{"--kube-version", "1.27.0"}, false},
		{"no cluster, Kubernetes 1.29 (OpenShift 4.16)", []string{"--kube-version", "1.29.4"}, false},
		{"no cluster, Kubernetes 1.30 (OpenShift 4.17)", []string{"--kube-version", "1.30.0"}, true},
		{"no cluster, Helm's default version", nil, true},
		{"cluster 1.29 without the kind", []string{"--kube-version", "1.29.0", "--api-versions", webhooks}, false},
		{"cluster 1.37 without the kind (API disabled)", []string{"--kube-version", "1.37.0", "--api-versions", webhooks}, false},
		{"cluster 1.30 serving the kind", []string{"--kube-version", "1.30.0", "--api-versions", webhooks, "--api-versions", vap}, true},
		{"OpenShift values on 1.27", []string{"--kube-version", "1.27.0", "--values", kube.RootDir + "/" + openShiftValues}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := renderChart(t, chartNS, c.flags...)
			got := len(ofKind(objs, "ValidatingAdmissionPolicy")) + len(ofKind(objs, "ValidatingAdmissionPolicyBinding"))
			if want := map[bool]int{true: 2, false: 0}[c.policy]; got != want {
				t.Errorf("rendered %d of the policy and its binding, want %d", got, want)
			}
			deployment(t, objs) // the rest renders
		})
	}
	out, err := exec.Command(helmBinary(t), "template", "tagsync", chartDir(), "--namespace", chartNS, "--kube-version", "1.26.15").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "kubeVersion") {
		t.Errorf("helm template --kube-version 1.26.15: err %v, output %q; want the chart's kubeVersion to refuse it", err, out)
	}
}

// TestChartServiceMonitorForUserWorkloadMonitoring: with secure metrics
// the ServiceMonitor authenticates as OpenShift user-workload monitoring
// allows (it refuses bearerTokenFile and file paths in tlsConfig): a bearer
// token from a Secret in its own namespace -- the chart's scraper
// ServiceAccount's token Secret, bound to the metrics-reader ClusterRole,
// or an existing Secret (then the chart creates no scraper); with plain
// HTTP metrics, no authorization and no scraper.
func TestChartServiceMonitorForUserWorkloadMonitoring(t *testing.T) {
	t.Run("ci/openshift-values.yaml", func(t *testing.T) {
		objs := renderChart(t, chartNS, "--values", kube.RootDir+"/"+openShiftValues)
		checkServiceMonitorToken(t, objs, oneOfKind(t, objs, "ServiceMonitor"))
	})
	t.Run("existing Secret", func(t *testing.T) {
		objs := renderChart(t, chartNS, "--set", "metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.authorization.existingSecret=scrape,metrics.serviceMonitor.authorization.existingSecretKey=jwt")
		sm := oneOfKind(t, objs, "ServiceMonitor")
		ep := serviceMonitorEndpoint(t, sm)
		if name, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name"); name != "scrape" {
			t.Errorf("authorization credentials from Secret %q, want scrape", name)
		}
		if key, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "key"); key != "jwt" {
			t.Errorf("authorization credentials key %q, want jwt", key)
		}
		if n := len(ofKind(objs, "Secret")); n != 0 {
			t.Errorf("with an existing Secret the chart renders %d Secrets, want none", n)
		}
		if sas := ofKind(objs, "ServiceAccount"); len(sas) != 1 {
			t.Errorf("with an existing Secret the chart renders %d ServiceAccounts, want only the manager's", len(sas))
		}
	})
	t.Run("plain HTTP", func(t *testing.T) {
		objs := renderChart(t, chartNS, "--set", "metrics.serviceMonitor.enabled=true,metrics.secure=false")
		ep := serviceMonitorEndpoint(t, oneOfKind(t, objs, "ServiceMonitor"))
		if ep["authorization"] != nil || ep["bearerTokenFile"] != nil {
			t.Errorf("plain HTTP endpoint %v carries a token", ep)
		}
		if n := len(ofKind(objs, "Secret")); n != 0 {
			t.Errorf("plain HTTP: %d Secrets rendered, want none", n)
		}
	})
}

// serviceMonitorEndpoint returns a ServiceMonitor's single endpoint.
func serviceMonitorEndpoint(t *testing.T, sm *unstructured.Unstructured) map[string]any {
	t.Helper()
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want 1", endpoints)
	}
	return endpoints[0].(map[string]any)
}

// checkServiceMonitorToken: the ServiceMonitor's HTTPS endpoint sends a
// Bearer token from a Secret the chart renders in the same namespace, a
// kubernetes.io/service-account-token Secret of a ServiceAccount bound to
// the metrics-reader ClusterRole, and nothing user-workload monitoring
// refuses (bearerTokenFile; caFile, certFile, keyFile in tlsConfig).
func checkServiceMonitorToken(t *testing.T, objs []*unstructured.Unstructured, sm *unstructured.Unstructured) {
	t.Helper()
	ep := serviceMonitorEndpoint(t, sm)
	for _, refused := range []string{"bearerTokenFile", "bearerTokenSecret"} {
		if ep[refused] != nil {
			t.Errorf("ServiceMonitor endpoint sets %s (user-workload monitoring refuses it): %v", refused, ep)
		}
	}
	for _, file := range []string{"caFile", "certFile", "keyFile"} {
		if v, found, _ := unstructured.NestedFieldNoCopy(ep, "tlsConfig", file); found {
			t.Errorf("ServiceMonitor tlsConfig.%s = %v: user-workload monitoring refuses file paths", file, v)
		}
	}
	typ, _, _ := unstructured.NestedString(ep, "authorization", "type")
	name, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name")
	key, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "key")
	if typ != "Bearer" || name == "" || key != "token" {
		t.Fatalf("ServiceMonitor authorization %v, want Bearer credentials from a Secret's key token", ep["authorization"])
	}
	var secret *unstructured.Unstructured
	for _, s := range ofKind(objs, "Secret") {
		if s.GetName() == name && s.GetNamespace() == sm.GetNamespace() {
			secret = s
		}
	}
	if secret == nil {
		t.Fatalf("the ServiceMonitor's Secret %s/%s is not rendered", sm.GetNamespace(), name)
	}
	sa := secret.GetAnnotations()["kubernetes.io/service-account.name"]
	if secret.Object["type"] != "kubernetes.io/service-account-token" || sa == "" {
		t.Fatalf("Secret %s: type %v, ServiceAccount %q; want a service-account-token Secret", name, secret.Object["type"], sa)
	}
	if !slices.ContainsFunc(ofKind(objs, "ServiceAccount"), func(o *unstructured.Unstructured) bool { return o.GetName() == sa }) {
		t.Errorf("the token Secret's ServiceAccount %s is not rendered", sa)
	}
	if sa == deployment(t, objs).Spec.Template.Spec.ServiceAccountName {
		t.Errorf("the scraper token is the manager's own ServiceAccount %s", sa)
	}
	reader := metricsReaderRole(t, objs).GetName()
	bound := false
	for _, b := range ofKind(objs, "ClusterRoleBinding") {
		role, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		for _, s := range subjects {
			s := s.(map[string]any)
			if s["kind"] == "ServiceAccount" && s["name"] == sa && s["namespace"] == sm.GetNamespace() {
				if role != reader {
					t.Errorf("ServiceAccount %s is bound to %s, want only %s", sa, role, reader)
				}
				bound = true
			}
		}
	}
	if !bound {
		t.Errorf("ServiceAccount %s is not bound to %s", sa, reader)
	}
}

// validationRuleFields127 are the fields of a CRD's x-kubernetes-validations
// rule that Kubernetes 1.27 (OpenShift 4.14, the oldest the chart admits)
// knows. reason and fieldPath came in 1.28 and optionalOldSelf in 1.29: a
// 1.27 API server drops them, and a client validating strictly refuses the
// CRD as having unknown fields.
var validationRuleFields127 = []string{"rule", "message", "messageExpression"}

// TestChartCRDsKeepToKubernetes127 walks every schema of the chart's CRDs
// and fails on a validation rule field that Kubernetes 1.27 lacks, so the
// CRDs install on every cluster the chart's kubeVersion admits.
func TestChartCRDsKeepToKubernetes127(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir(), "files", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the chart's CRDs: %v (%d files)", err, len(files))
	}
	rules := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walkValidations(crd, "", func(at string, rule map[string]any) {
			rules++
			for k := range rule {
				if !slices.Contains(validationRuleFields127, k) {
					t.Errorf("%s: %s: validation rule field %q is unknown to Kubernetes 1.27 (keep to %v)", filepath.Base(f), at, k, validationRuleFields127)
				}
			}
		})
	}
	if rules == 0 {
		t.Fatal("found no x-kubernetes-validations rule: the walk looks in the wrong place")
	}
}

// walkValidations calls fn with every rule of every x-kubernetes-validations
// list under v, and where it sits.
func walkValidations(v any, at string, fn func(at string, rule map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if k == "x-kubernetes-validations" {
				for _, r := range child.([]any) {
					fn(at, r.(map[string]any))
				}
				continue
			}
			walkValidations(child, at+"."+k, fn)
		}
	case []any:
		for i, child := range v {
			walkValidations(child, fmt.Sprintf("%s[%d]", at, i), fn)
		}
	}
}
