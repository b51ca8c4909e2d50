package e2e_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// checkNodeSyncChart checks a rendering of the node sync alone in an auth
// mode ("defaults" for the chart's defaults): what the issue asks of it
// (replicas and leader election, probes and ports, hardened security
// context, resources, the auth wiring of the mode, the PDB, the metrics
// Service and optional ServiceMonitor, the NodeTagSync and the admission
// policy) and what secure metrics need.
func checkNodeSyncChart(t *testing.T, mode string, objs []*unstructured.Unstructured) {
	t.Helper()
	dep := deployment(t, objs)
	checkDeployment(t, dep)
	checkAuthWiring(t, mode, dep, objs)
	for _, kind := range []string{"Service", "PodDisruptionBudget", "NodeTagSync", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		oneOfKind(t, objs, kind)
	}
	// The manager's ServiceAccount and binding, and with a ServiceMonitor
	// the metrics scraper's.
	scraper := len(ofKind(objs, "ServiceMonitor"))
	for _, kind := range []string{"ServiceAccount", "ClusterRoleBinding"} {
		if n := len(ofKind(objs, kind)); n != 1+scraper {
			t.Errorf("%d %ss, want %d", n, kind, 1+scraper)
		}
	}
	if n := len(ofKind(objs, "ClusterRole")); n != 2 {
		t.Errorf("%d ClusterRoles, want 2 (the manager's, metrics-reader)", n)
	}
	checkSecureMetrics(t, objs)
	if n := len(ofKind(objs, "Role")); n != 2 {
		t.Errorf("%d Roles, want 2 (leader election, events)", n)
	}
	if (mode == "servicePrincipal") != (len(ofKind(objs, "ServiceMonitor")) == 1) {
		t.Errorf("ServiceMonitor rendered %d times; the servicePrincipal values enable it, the others do not", len(ofKind(objs, "ServiceMonitor")))
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
		if ep["port"] != "https" || ep["scheme"] != "https" || !skip {
			t.Errorf("ServiceMonitor endpoint %v: want port https, scheme https and the self-signed certificate accepted", ep)
		}
		checkServiceMonitorToken(t, objs, sm)
	}
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
	sa := managerServiceAccount(t, objs)
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
