package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/operator"
)

// metadataCases are the chart's rows for the metadata controller: with
// each AWS values file, on the defaults, with the audit log failing open,
// and without metadata.enabled (its AWS and audit values then change
// nothing). They check the metadata flags, the AWS credentials (IRSA
// annotation; static keys only as secretKeyRef env from
// aws.existingSecret), the audit log volume, the RBAC shape (a
// ClusterRole, or Roles in exactly metadata.namespaces), and that the node
// sync's objects go with nodeTagSync.enabled.
func metadataCases() []chartCase {
	return []chartCase{{
		name: "defaults with metadata.enabled", set: "metadata.enabled=true", controllers: "nodetags,metadata",
		args: []string{"--audit-log=stderr"}, noArgs: []string{"--namespaces", "--aws-region", "--aws-endpoint", "--audit-log-max-size", "--audit-fail-open"},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkMetadataRBACShape(t, objs, nil)
			if env := deployment(t, objs).Spec.Template.Spec.Containers[0].Env; len(env) != 0 {
				t.Errorf("want no env, got %+v", env)
			}
		},
	}, {
		name: "awsIRSA", values: awsModes["awsIRSA"], controllers: "metadata",
		args:       []string{"--audit-log=stderr", "--namespaces=platform,team-a", "--aws-region=us-east-1"},
		noArgs:     []string{"--aws-endpoint", "--audit-log-max-size"},
		namespaces: []string{"platform", "team-a"},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			if got := managerServiceAccount(t, objs).GetAnnotations()["eks.amazonaws.com/role-arn"]; got != "arn:aws:iam::111122223333:role/tagsync" {
				t.Errorf("IRSA: the ServiceAccount's role annotation is %q", got)
			}
			if pod := deployment(t, objs).Spec.Template.Spec; len(pod.Containers[0].Env) != 0 || len(pod.Volumes) != 0 {
				t.Errorf("IRSA: want no env and no volumes, got env %+v volumes %+v", pod.Containers[0].Env, pod.Volumes)
			}
			checkMetadataRBACShape(t, objs, []string{"platform", "team-a"})
			checkNoNodeSync(t, objs)
		},
	}, {
		name: "awsStaticKeys", values: awsModes["awsStaticKeys"], controllers: "nodetags,metadata",
		args: []string{"--audit-log=/var/log/tagsync/audit.log", "--audit-log-max-size=50",
			"--aws-region=eu-central-1", "--aws-endpoint=https://vpce-0123456789abcdef0.ec2.eu-central-1.vpce.amazonaws.com"},
		noArgs: []string{"--namespaces"},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			pod := deployment(t, objs).Spec.Template.Spec
			checkAWSKeysFromSecret(t, pod.Containers[0].Env, "tagsync-aws")
			checkAuditVolume(t, pod, "/var/log/tagsync", "350Mi")
			checkMetadataRBACShape(t, objs, nil)
		},
	}, {
		name: "metadata.auditFailOpen", set: "metadata.enabled=true,metadata.auditFailOpen=true", controllers: "nodetags,metadata",
		args: []string{"--audit-fail-open"},
	}, {
		name: "awsStaticKeys without metadata.enabled", values: awsModes["awsStaticKeys"], set: "metadata.enabled=false", controllers: "nodetags",
		noArgs: []string{"--audit-log", "--audit-log-max-size", "--audit-fail-open", "--aws-region", "--aws-endpoint", "--namespaces"},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			if pod := deployment(t, objs).Spec.Template.Spec; len(pod.Containers[0].Env) != 0 || len(pod.Volumes) != 0 {
				t.Errorf("metadata.enabled=false: want no AWS env and no audit volume, got env %+v volumes %+v", pod.Containers[0].Env, pod.Volumes)
			}
		},
	}}
}

// checkNoNodeSync: with nodeTagSync.enabled=false the chart renders no
// NodeTagSync and no admission policy, and grants none of the node sync's
// rules.
func checkNoNodeSync(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
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
// registry's (operator.Controllers), granted by one ClusterRole
// tagsync-metadata when scoped is empty, else by a Role in each namespace
// of scoped and nowhere else (rolesNamed checks each is bound where it is).
func checkMetadataRBACShape(t *testing.T, objs []*unstructured.Unstructured, scoped []string) {
	t.Helper()
	if got, want := rolesNamed(t, objs, "tagsync-metadata", registryGrants(t, metadata.ControllerName)), roleSites(scoped); !sameElements(got, want) {
		t.Errorf("the metadata rules are in %q, want %q", got, want)
	}
}

// roleSites are where a controller's role is: "ClusterRole " without
// namespaces, else "Role <namespace>" for each of them.
func roleSites(namespaces []string) []string {
	if len(namespaces) == 0 {
		return []string{"ClusterRole "}
	}
	var out []string
	for _, ns := range namespaces {
		out = append(out, "Role "+ns)
	}
	return out
}

// rolesNamed checks the ClusterRoles and Roles called name: each is bound
// to the chart's ServiceAccount by a binding of its name in its place,
// grants exactly want, one group and resource per rule. It returns where
// they are ("ClusterRole ", or "Role <namespace>").
func rolesNamed(t *testing.T, objs []*unstructured.Unstructured, name string, want []string) []string {
	t.Helper()
	bound := controllerRoles(objs)
	var got []string
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, r := range ofKind(objs, kind) {
			if r.GetName() != name {
				continue
			}
			where := fmt.Sprintf("%s %s/%s", kind, r.GetNamespace(), name)
			got = append(got, kind+" "+r.GetNamespace())
			if !bound[kind+"/"+name] || !slices.ContainsFunc(ofKind(objs, kind+"Binding"), func(b *unstructured.Unstructured) bool {
				return b.GetName() == name && b.GetNamespace() == r.GetNamespace()
			}) {
				t.Errorf("%s is not bound to the chart's ServiceAccount by a %sBinding beside it", where, kind)
			}
			if g := grants(t, []*unstructured.Unstructured{r}); !sameElements(g, want) {
				t.Errorf("%s grants %v, want the registry's %v", where, g, want)
			}
			singleRules(t, r)
		}
	}
	return got
}

// checkRegistryGrants: the rules each controller declares in the registry
// (operator.Controllers, from which config/rbac is checked too) are
// granted by the chart when the controller runs, and none of them when it
// does not -- unless a controller that runs declares the same rule (the
// engine kinds' list/watch, which the metadata controller and the
// OpenShift adapter read through one shared cache), or it is an events
// rule (sharedGrant). The comparison is by verb, group and resource: a
// rule the chart narrows to resource names (the Infrastructure CRD) counts
// as granted.
func checkRegistryGrants(t *testing.T, objs []*unstructured.Unstructured, runs []string) {
	t.Helper()
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
	for _, name := range runs {
		for _, g := range registryGrants(t, name) {
			needed[g] = true
		}
	}
	for _, c := range operator.Controllers() {
		running := slices.Contains(runs, c.Name)
		for _, g := range registryGrants(t, c.Name) {
			granted := slices.Contains(chart, g)
			if running && !granted {
				t.Errorf("controller %s runs, but the chart does not grant %s", c.Name, g)
			}
			if !running && granted && !needed[g] && !sharedGrant(g) {
				t.Errorf("controller %s does not run, but the chart grants its %s, which no running controller needs", c.Name, g)
			}
		}
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
