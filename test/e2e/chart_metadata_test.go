package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/operator"
)

// awsModes are the chart's values files for the metadata controller with
// AWS credentials (the same files `make helm-check` lints and renders).
var awsModes = map[string]string{
	"awsIRSA":       "charts/tagsync/ci/aws-irsa-values.yaml",
	"awsStaticKeys": "charts/tagsync/ci/aws-static-keys-values.yaml",
}

// TestChartValuesFilesAreAllTested: every ci/*-values.yaml is rendered by
// a test here (authModes, awsModes, openshiftValues, labelsyncValues or
// labelsyncClusterWideValues), not only linted.
func TestChartValuesFilesAreAllTested(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(chartDir(), "ci", "*-values.yaml"))
	if len(files) == 0 {
		t.Fatal("charts/tagsync/ci holds no values files")
	}
	for _, f := range files {
		rel := filepath.ToSlash(filepath.Join("charts", "tagsync", "ci", filepath.Base(f)))
		known := []string{openshiftValues, labelsyncValues, labelsyncClusterWideValues}
		for _, m := range []map[string]string{authModes, awsModes} {
			for _, v := range m {
				known = append(known, v)
			}
		}
		if !slices.Contains(known, rel) {
			t.Errorf("%s is not in authModes, awsModes, openshiftValues, labelsyncValues or labelsyncClusterWideValues: add it so a test renders and checks it", rel)
		}
	}
}

// TestChartRendersTheMetadataController renders the chart with the
// metadata controller -- with each AWS values file, and on the defaults --
// and checks the wiring: --controllers from the one helper (nodetags,
// metadata, or metadata alone without nodeTagSync.enabled), the metadata
// flags, the AWS credentials (IRSA annotation; static keys only as
// secretKeyRef env from aws.existingSecret), the audit log volume, the
// RBAC shape (a ClusterRole, or Roles in exactly metadata.namespaces), that
// the node sync's objects go with nodeTagSync.enabled, that every flag is
// one `tagsync run` knows, and that the real API server accepts every
// object (server-side dry-run apply, strict fields).
func TestChartRendersTheMetadataController(t *testing.T) {
	ctx := context.Background()
	const ns = "tagsync-system"
	ensureNamespace(ctx, t, ns)
	runFlags := tagsyncRunFlags(t)
	cases := map[string][]string{"defaults with metadata.enabled": {"--set", "metadata.enabled=true"}}
	for mode, file := range awsModes {
		cases[mode] = []string{"--values", filepath.Join(kube.RootDir, file)}
	}
	for name, flags := range cases {
		t.Run(name, func(t *testing.T) {
			objs := renderChart(t, ns, flags...)
			dep := deployment(t, objs)
			c := dep.Spec.Template.Spec.Containers[0]
			for _, arg := range c.Args[1:] {
				flag, _, _ := strings.Cut(arg, "=")
				if !slices.Contains(runFlags, flag) {
					t.Errorf("the chart passes %s, which `tagsync run` does not know", flag)
				}
			}
			sa := oneOfKind(t, objs, "ServiceAccount")
			scoped := []string{}
			switch name {
			case "awsIRSA":
				wantArgs(t, c.Args, "--controllers=metadata", "--audit-log=stderr", "--namespaces=platform,team-a", "--aws-region=us-east-1")
				noArgs(t, c.Args, "--aws-endpoint", "--audit-log-max-size")
				if got := sa.GetAnnotations()["eks.amazonaws.com/role-arn"]; got != "arn:aws:iam::111122223333:role/tagsync" {
					t.Errorf("IRSA: the ServiceAccount's role annotation is %q", got)
				}
				if len(c.Env) != 0 || len(dep.Spec.Template.Spec.Volumes) != 0 {
					t.Errorf("IRSA: want no env and no volumes, got env %+v volumes %+v", c.Env, dep.Spec.Template.Spec.Volumes)
				}
				scoped = []string{"platform", "team-a"}
				for _, kind := range []string{"NodeTagSync", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
					if n := len(ofKind(objs, kind)); n != 0 {
						t.Errorf("nodeTagSync.enabled=false renders %d %s", n, kind)
					}
				}
				if g := grants(t, append(ofKind(objs, "ClusterRole"), ofKind(objs, "Role")...)); slices.ContainsFunc(g, func(s string) bool {
					return strings.HasSuffix(s, " /nodes") || strings.Contains(s, "nodetagsyncs")
				}) {
					t.Errorf("nodeTagSync.enabled=false still grants the node sync's rules: %v", g)
				}
			case "awsStaticKeys":
				wantArgs(t, c.Args, "--controllers=nodetags,metadata", "--audit-log=/var/log/tagsync/audit.log", "--audit-log-max-size=50",
					"--aws-region=eu-central-1", "--aws-endpoint=https://vpce-0123456789abcdef0.ec2.eu-central-1.vpce.amazonaws.com")
				noArgs(t, c.Args, "--namespaces")
				checkAWSKeysFromSecret(t, c.Env, "tagsync-aws")
				checkAuditVolume(t, dep.Spec.Template.Spec, "/var/log/tagsync", "350Mi")
			default:
				wantArgs(t, c.Args, "--controllers=nodetags,metadata", "--audit-log=stderr")
				noArgs(t, c.Args, "--namespaces", "--aws-region", "--aws-endpoint", "--audit-log-max-size", "--audit-fail-open")
				if len(c.Env) != 0 {
					t.Errorf("want no env, got %+v", c.Env)
				}
			}
			checkMetadataRBACShape(t, objs, scoped)
			for _, n := range scoped {
				ensureNamespace(ctx, t, n)
			}
			var serverSide []*unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() != "ServiceMonitor" {
					serverSide = append(serverSide, o)
				}
			}
			apply(ctx, t, serverSide, client.DryRunAll)
		})
	}

	// metadata.auditFailOpen passes --audit-fail-open.
	open := deployment(t, renderChart(t, ns, "--set", "metadata.enabled=true,metadata.auditFailOpen=true"))
	wantArgs(t, open.Spec.Template.Spec.Containers[0].Args, "--audit-fail-open")

	// Without metadata.enabled the AWS and audit values change nothing.
	off := deployment(t, renderChart(t, ns, "--values", filepath.Join(kube.RootDir, awsModes["awsStaticKeys"]), "--set", "metadata.enabled=false"))
	c := off.Spec.Template.Spec.Containers[0]
	wantArgs(t, c.Args, "--controllers=nodetags")
	noArgs(t, c.Args, "--audit-log", "--audit-log-max-size", "--audit-fail-open", "--aws-region", "--aws-endpoint", "--namespaces")
	if len(c.Env) != 0 || len(off.Spec.Template.Spec.Volumes) != 0 {
		t.Errorf("metadata.enabled=false: want no AWS env and no audit volume, got env %+v volumes %+v", c.Env, off.Spec.Template.Spec.Volumes)
	}
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
		flag, _, _ := strings.Cut(a, "=")
		if slices.Contains(flags, flag) {
			t.Errorf("args %v hold %s", args, a)
		}
	}
}

// checkAWSKeysFromSecret: the AWS keys reach the pod only as references to
// the Secret's keys of the same names, never as values.
func checkAWSKeysFromSecret(t *testing.T, env []corev1.EnvVar, secret string) {
	t.Helper()
	var names []string
	for _, e := range env {
		names = append(names, e.Name)
		ref := e.ValueFrom
		if e.Value != "" || ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != secret || ref.SecretKeyRef.Key != e.Name {
			t.Errorf("env %s = %+v: want the key %s of Secret %s, and no value", e.Name, e, e.Name, secret)
		}
	}
	if !slices.Equal(names, []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}) {
		t.Errorf("env %v, want AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", names)
	}
}

// checkAuditVolume: the audit log file's directory is a writable emptyDir
// with room for the file and its rotated copies (the root filesystem is
// read-only).
func checkAuditVolume(t *testing.T, pod corev1.PodSpec, dir, size string) {
	t.Helper()
	mounts := pod.Containers[0].VolumeMounts
	if len(mounts) != 1 || mounts[0].MountPath != dir || mounts[0].ReadOnly {
		t.Fatalf("mounts %+v, want one writable mount at %s", mounts, dir)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].Name != mounts[0].Name || pod.Volumes[0].EmptyDir == nil ||
		pod.Volumes[0].EmptyDir.SizeLimit == nil || pod.Volumes[0].EmptyDir.SizeLimit.String() != size {
		t.Errorf("volumes %+v, want an emptyDir of %s for the mount", pod.Volumes, size)
	}
}

// checkMetadataRBACShape: the metadata controller's rules are exactly the
// registry's (operator.Controllers), granted by one ClusterRole when
// scoped is empty, else by a Role in each namespace of scoped and nowhere
// else; each bound to the chart's ServiceAccount.
func checkMetadataRBACShape(t *testing.T, objs []*unstructured.Unstructured, scoped []string) {
	t.Helper()
	want := registryGrants(t, "metadata")
	bound := controllerRoles(objs)
	var got []string
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, r := range ofKind(objs, kind) {
			if r.GetName() != "tagsync-metadata" {
				continue
			}
			got = append(got, kind+" "+r.GetNamespace())
			if !bound[kind+"/"+r.GetName()] {
				t.Errorf("%s %s/%s is not bound to the chart's ServiceAccount", kind, r.GetNamespace(), r.GetName())
			}
			if g := grants(t, []*unstructured.Unstructured{r}); !sameSet(g, want) {
				t.Errorf("%s %s/%s grants %v, want the registry's %v", kind, r.GetNamespace(), r.GetName(), g, want)
			}
		}
	}
	var wantWhere []string
	if len(scoped) == 0 {
		wantWhere = []string{"ClusterRole "}
	}
	for _, ns := range scoped {
		wantWhere = append(wantWhere, "Role "+ns)
	}
	if !slices.Equal(got, wantWhere) {
		t.Errorf("the metadata rules are in %q, want %q", got, wantWhere)
	}
}

// TestChartGrantsEachControllerItsRegistryRules: the rules each controller
// declares in the registry (operator.Controllers, from which config/rbac is
// checked too) are granted by the chart when the controller runs, and none
// of them when it does not -- unless a controller that runs declares the
// same rule (the engine kinds' list/watch, which the metadata controller
// and the OpenShift adapter read through one shared cache), or it is an
// events rule (sharedGrant).
// The comparison is by verb, group and resource: a rule the chart narrows
// to resource names (the Infrastructure CRD) counts as granted.
func TestChartGrantsEachControllerItsRegistryRules(t *testing.T) {
	cases := []struct {
		set  string
		runs []string
	}{
		{"metadata.enabled=false", []string{"nodetags"}},
		{"metadata.enabled=true", []string{"nodetags", "metadata"}},
		{"metadata.enabled=true,nodeTagSync.enabled=false", []string{"metadata"}},
		{"metadata.enabled=true,openshift.enabled=true", []string{"nodetags", "metadata", "infratags"}},
		{"metadata.enabled=true,openshift.enabled=true,nodeTagSync.enabled=false", []string{"metadata", "infratags"}},
		{"metadata.enabled=true,openshift.enabled=true,nodeTagSync.enabled=false,metadata.namespaces={tagsync-system}", []string{"metadata", "infratags"}},
		{"labelSync.enabled=true", []string{"nodetags", "labelsync"}},
		{"labelSync.enabled=true,nodeTagSync.enabled=false", []string{"labelsync"}},
		{"labelSync.enabled=true,nodeTagSync.enabled=false,labelSync.namespaces={metal3}", []string{"labelsync"}},
		{"metadata.enabled=true,openshift.enabled=true,labelSync.enabled=true", []string{"nodetags", "metadata", "infratags", "labelsync"}},
	}
	for _, tc := range cases {
		t.Run(tc.set, func(t *testing.T) {
			objs := renderChart(t, "tagsync-system", "--set", tc.set)
			wantArgs(t, deployment(t, objs).Spec.Template.Spec.Containers[0].Args, "--controllers="+strings.Join(tc.runs, ","))
			var chart []string
			bound := controllerRoles(objs)
			for _, kind := range []string{"ClusterRole", "Role"} {
				for _, r := range ofKind(objs, kind) {
					if bound[kind+"/"+r.GetName()] && r.GetName() != "tagsync-leader-election" {
						chart = append(chart, grants(t, []*unstructured.Unstructured{r})...)
					}
				}
			}
			needed := map[string]bool{}
			for _, name := range tc.runs {
				for _, g := range registryGrants(t, name) {
					needed[g] = true
				}
			}
			for _, c := range operator.Controllers() {
				runs := slices.Contains(tc.runs, c.Name)
				for _, g := range registryGrants(t, c.Name) {
					granted := slices.Contains(chart, g)
					if runs && !granted {
						t.Errorf("controller %s runs, but the chart does not grant %s", c.Name, g)
					}
					if !runs && granted && !needed[g] && !sharedGrant(g) {
						t.Errorf("controller %s does not run, but the chart grants its %s, which no running controller needs", c.Name, g)
					}
				}
			}
		})
	}
}

// sharedGrant is a rule more than one controller needs (events: the node
// sync records them too, through the chart's events Role, though its
// registry entry does not list them), granted for any.
func sharedGrant(g string) bool { return strings.HasSuffix(g, " events.k8s.io/events") }

// registryGrants flattens the registry's rules of the named controller into
// "verb group/resource" strings.
func registryGrants(t testing.TB, name string) []string {
	t.Helper()
	for _, c := range operator.Controllers() {
		if c.Name == name {
			return flattenRules(c.RBAC)
		}
	}
	t.Fatalf("no controller %s in the registry", name)
	return nil
}

func flattenRules(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, fmt.Sprintf("%s %s/%s", v, g, res))
				}
			}
		}
	}
	return out
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// TestAWSOnlyValuesStartTheMetadataController runs `tagsync run` with the
// arguments the chart renders for ci/aws-irsa-values.yaml: no Azure
// identity at all (azure.authMode default), the metadata controller alone,
// two namespaces, an AWS region. The process must start (no Azure setting
// is required of it) and serve an AWSMetadata of a served namespace with
// its AWS provider configured: without AWS credentials here (no IRSA token,
// instance metadata off) the pass reports why it could not discover, and
// not ProviderNotConfigured.
func TestAWSOnlyValuesStartTheMetadataController(t *testing.T) {
	ctx := context.Background()
	objs := renderChart(t, "tagsync-system", "--values", filepath.Join(kube.RootDir, awsModes["awsIRSA"]))
	args := deploymentArgs(t, objs)
	wantArgs(t, append([]string{"run"}, args...), "--azure-auth-mode=default", "--controllers=metadata", "--aws-region=us-east-1")
	for _, ns := range []string{"platform", "team-a"} {
		ensureNamespace(ctx, t, ns)
	}
	args = append(args, "--kubeconfig="+writeKubeconfig(t, ""), "--leader-elect=false")
	p := startTagsyncEnv(t, "tagsync (aws-irsa values)", []string{"AWS_EC2_METADATA_DISABLED=true"}, args...)

	req := &v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "irsa-aws"},
		Spec: v1alpha1.AWSMetadataSpec{Opcode: v1alpha1.OpcodeAdd, ResourceTags: map[string]string{"env": "prod"}}}
	cm := &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "irsa"},
		Spec: v1alpha1.CloudMetadataSpec{Classifiers: map[string]string{"kubernetes.io/cluster/irsa": "owned"},
			CloudProvider: v1alpha1.CloudProviderRefs{AWSRef: &v1alpha1.LocalObjectRef{Name: req.Name}}}}
	for _, o := range []client.Object{req, cm} {
		must(t, kube.Client.Create(ctx, o))
		t.Cleanup(func() { _ = kube.Client.Delete(context.Background(), o) })
	}
	eventually(t, "AWSMetadata platform/irsa-aws served with the AWS provider configured", func() string {
		var o v1alpha1.AWSMetadata
		if err := kube.Client.Get(ctx, client.ObjectKeyFromObject(req), &o); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionRequest)
		if c == nil || c.Reason == metadata.ReasonProviderNotConfigured {
			return fmt.Sprintf("conditions %+v", o.Status.Conditions)
		}
		t.Logf("served: Request=%s %s: %s", c.Status, c.Reason, c.Message)
		return ""
	})
	if !p.running() {
		t.Fatalf("the process exited:\n%s", tail(p.logs(), 40))
	}
	p.stop(t)
}
