package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
)

// rbacFixture is the cluster, cloud and chart the RBAC proof works on.
type rbacFixture struct {
	t        *testing.T
	ctx      context.Context
	ns       string
	objs     []*unstructured.Unstructured // the rendered chart
	cloud    *armsimtest.Env
	args     []string // `tagsync run` flags: the chart's, then test overrides
	scaleSet string   // ARM ID of the scale set behind pool-0 and pool-1
	vm       string   // ARM ID of the VM behind vm-0
	edits    int      // portal edits made so far (gives each a new value)
	requests int      // sync requests made so far
}

// TestChartRBACIsEnoughAndEveryRuleIsNeeded renders the chart, applies its
// ServiceAccount, ClusterRole, Roles and bindings (and its admission policy
// and NodeTagSync) to the real API server, and runs the real `tagsync run`
// binary with the Deployment's own arguments, as the chart's ServiceAccount
// (a kubeconfig impersonating system:serviceaccount:tagsync-system:tagsync),
// against armsim. A full sync succeeds: leader election, labels from tags,
// tags from labels, status, events and an event series, with no request
// forbidden. Then, for every verb of every rule, the rule is re-applied
// without that verb, a fresh process runs, and the test waits until the
// process reports the API server's refusal of exactly that verb on exactly
// that resource (as a failed sync, a failed leader election or a rejected
// event). Each run restores the RBAC afterwards.
func TestChartRBACIsEnoughAndEveryRuleIsNeeded(t *testing.T) {
	f := newRBACFixture(t)

	t.Run("the chart's RBAC is enough for a full sync", f.fullSync)

	for _, a := range f.ablations() {
		t.Run("without "+a.String(), func(t *testing.T) { f.ablate(t, a) })
	}
}

func newRBACFixture(t *testing.T) *rbacFixture {
	ctx := context.Background()
	const ns = "tagsync-system"
	cleanupSyncObjects(t)
	f := &rbacFixture{t: t, ctx: ctx, ns: ns}
	// The chart in service-principal mode: the mode a local process can
	// run (the secret file is armsim's).
	f.objs = renderChart(t, ns, "--set", "azure.authMode=servicePrincipal,azure.clientID=from-chart,azure.tenantID=from-chart,azure.existingSecret=tagsync-azure")
	installRBAC(ctx, t, ns, f.objs)
	policy := oneOfKind(t, f.objs, "ValidatingAdmissionPolicy")
	binding := oneOfKind(t, f.objs, "ValidatingAdmissionPolicyBinding")
	apply(ctx, t, []*unstructured.Unstructured{policy, binding})
	deleteOnCleanup(t, binding, policy)

	f.cloud = armsimtest.Start(t)
	f.seed()
	apply(ctx, t, []*unstructured.Unstructured{oneOfKind(t, f.objs, "NodeTagSync")})

	sa := oneOfKind(t, f.objs, "ServiceAccount").GetName()
	kubeconfig := writeKubeconfig(t, serviceAccountUser(ns, sa), serviceAccountGroups(ns)...)
	f.args = append(deploymentArgs(t, f.objs), "--kubeconfig="+kubeconfig,
		"--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms", "--zap-log-level=debug")
	f.args = append(f.args, armsimFlags(t, f.cloud)...)
	return f
}

// deploymentArgs are the chart Deployment's container arguments, without
// the leading "run" subcommand.
func deploymentArgs(t testing.TB, objs []*unstructured.Unstructured) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(oneOfKind(t, objs, "Deployment").Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(containers))
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("the Deployment's args %v do not start with run", args)
	}
	return args[1:]
}

// seed creates a scale set with two instances and a VM, and their Nodes.
func (f *rbacFixture) seed() {
	t, s := f.t, f.cloud.Server
	sub := f.cloud.SubscriptionID
	_, err := s.CreateResourceGroup(sub, armsim.ResourceGroup{Name: "MC_rbac", Location: "westeurope"})
	must(t, err)
	f.scaleSet, err = s.CreateScaleSet(sub, "MC_rbac", armsim.ScaleSet{Name: "pool", Location: "westeurope", Tags: map[string]string{"env": "prod"}})
	must(t, err)
	instances, err := s.AddInstances(f.scaleSet, 2)
	must(t, err)
	f.vm, err = s.CreateVM(sub, "MC_rbac", armsim.VirtualMachine{Name: "vm-0", Tags: map[string]string{"owner": "ops"}})
	must(t, err)
	nodes := map[string]*corev1.Node{
		"pool-0": {Spec: corev1.NodeSpec{ProviderID: "azure://" + instances[0]}},
		"pool-1": {Spec: corev1.NodeSpec{ProviderID: "azure://" + instances[1]}},
		"vm-0": {ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"azure.tags/from-node": "yes"}},
			Spec: corev1.NodeSpec{ProviderID: "azure://" + f.vm}},
	}
	for name, n := range nodes {
		n.Name = name
		must(t, kube.Client.Create(f.ctx, n))
	}
}

// fullSync runs the controller with the chart's RBAC and checks every
// kind of API call it makes succeeds.
func (f *rbacFixture) fullSync(t *testing.T) {
	p := startTagsync(t, "tagsync (chart RBAC)", f.args...)
	f.waitLabel(t, "pool-0", "azure.tags/env", "prod")
	f.waitLabel(t, "vm-0", "azure.tags/owner", "ops")
	eventually(t, "tag from-node=yes on vm-0's VM", func() string {
		if got := f.tags(f.vm)["from-node"]; got != "yes" {
			return fmt.Sprintf("tag is %q", got)
		}
		return ""
	})
	f.waitReady(t, 3)

	// Portal edits on two resources: one pass writes both resources' Nodes
	// and reports LabelsSynced twice about the NodeTagSync, which makes an
	// event series (a PATCH).
	f.portalEdit(t)
	f.syncNow(t)
	f.waitLabel(t, "pool-1", "azure.tags/env", f.editValue())
	f.waitLabel(t, "vm-0", "azure.tags/owner", f.editValue())
	eventually(t, "an event series about NodeTagSync default in namespace default", func() string {
		var list eventsv1.EventList
		if err := kube.Client.List(f.ctx, &list, client.InNamespace("default")); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.ReportingController == "tagsync-"+nodetags.ControllerName && e.Regarding.Name == "default" &&
				e.Reason == nodetags.ReasonLabelsSynced && e.Series != nil && e.Series.Count >= 2 {
				return ""
			}
		}
		return fmt.Sprintf("none among %d events", len(list.Items))
	})
	// What docs/install-aks.md and the chart's NOTES tell users to run:
	// kubectl get events -n default --field-selector reportingComponent=tagsync-nodetags
	var core corev1.EventList
	must(t, kube.Client.List(f.ctx, &core, client.InNamespace("default"),
		client.MatchingFields{"reportingComponent": "tagsync-" + nodetags.ControllerName}))
	if len(core.Items) == 0 {
		t.Errorf("no events found with the field selector reportingComponent=tagsync-%s the docs give", nodetags.ControllerName)
	}
	eventually(t, "the leader election event in "+f.ns, func() string {
		var list corev1.EventList
		if err := kube.Client.List(f.ctx, &list, client.InNamespace(f.ns)); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" {
				return ""
			}
		}
		return fmt.Sprintf("none among %d events", len(list.Items))
	})
	// Prometheus can read the metrics: the chart lets the controller
	// review its token and its access.
	if body := scrape(t, p); !strings.Contains(body, "tagsync_nodetags_passes_total{") {
		t.Errorf("the metrics lack tagsync_nodetags_passes_total:\n%s", tail(body, 40))
	}
	p.stop(t)
	if strings.Contains(p.logs(), "forbidden") {
		t.Fatalf("with the chart's RBAC some request was forbidden:\n%s", grep(p.logs(), "forbidden"))
	}
}

// ablation is one verb of one rule of one of the chart's roles.
type ablation struct {
	kind, role string // ClusterRole or Role, and its name
	rule       int    // index in .rules
	verb       string
	group      string
	resource   string // with /subresource
	namespace  string // of the Role
	name       string // the rule's resourceName, if any
	// prepare readies the cluster and cloud so the run needs the verb.
	prepare func(t *testing.T)
	// also, if set, checks a further symptom once the refusal was logged.
	also func(t *testing.T)
	// env is extra environment for the process.
	env []string
	// poke, if set, runs while waiting for the refusal: what makes the
	// running process make the request (a metrics scrape).
	poke func(t *testing.T, p *tagsyncProc)
}

func (a ablation) String() string {
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	return fmt.Sprintf("%s %s/%s %s (%s %s)", a.verb, a.group, a.resource, where, a.kind, a.role)
}

// forbidden is how the API server words the refusal of this verb.
func (a ablation) forbidden(user string) string {
	return fmt.Sprintf(`User "%s" cannot %s resource "%s" in API group "%s"`, user, a.verb, a.resource, a.group)
}

// ablations lists every verb of every rule the chart grants the controller,
// each with what makes a run need it. (The metrics-reader ClusterRole is for
// scrapers, not the controller: TestMetricsEndpointServesOnlyAuthorizedScrapers
// shows a scraper without it refused.)
func (f *rbacFixture) ablations() []ablation {
	out := roleAblations(f.t, f.objs, func(string) bool { return true })
	for i := range out {
		f.setTrigger(&out[i])
	}
	return out
}

// roleAblations lists every verb of every rule of the roles objs bind to
// the chart's ServiceAccount whose name keep accepts, without triggers.
func roleAblations(t testing.TB, objs []*unstructured.Unstructured, keep func(role string) bool) []ablation {
	t.Helper()
	var out []ablation
	bound := controllerRoles(objs)
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, role := range ofKind(objs, kind) {
			if !bound[kind+"/"+role.GetName()] || !keep(role.GetName()) {
				continue
			}
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			for i, r := range rules {
				rule := r.(map[string]any)
				groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
				resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
				verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
				names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
				if len(groups) != 1 || len(resources) != 1 || len(names) > 1 {
					t.Fatalf("%s %s rule %d: keep one group, one resource and at most one name per rule so each can be proven needed", kind, role.GetName(), i)
				}
				for _, verb := range verbs {
					a := ablation{kind: kind, role: role.GetName(), rule: i, verb: verb, group: groups[0],
						resource: resources[0], namespace: role.GetNamespace()}
					if len(names) == 1 {
						a.name = names[0]
					}
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// controllerRoles are the roles ("Kind/name") the chart binds to its
// ServiceAccount.
func controllerRoles(objs []*unstructured.Unstructured) map[string]bool {
	sa := ""
	for _, o := range ofKind(objs, "ServiceAccount") {
		sa = o.GetName()
	}
	out := map[string]bool{}
	for _, b := range append(ofKind(objs, "ClusterRoleBinding"), ofKind(objs, "RoleBinding")...) {
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		for _, s := range subjects {
			if s.(map[string]any)["kind"] == "ServiceAccount" && s.(map[string]any)["name"] == sa {
				kind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
				name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
				out[kind+"/"+name] = true
			}
		}
	}
	return out
}

// setTrigger says what a run without the verb must do to need it.
func (f *rbacFixture) setTrigger(a *ablation) {
	switch {
	case a.resource == "tokenreviews" || a.resource == "subjectaccessreviews":
		// A scrape with a token: the secure metrics endpoint asks the API
		// server who sent it (tokenreviews) and whether it may get
		// /metrics (subjectaccessreviews); refused, the scrape fails.
		a.poke = scrapeRefused
	case a.verb == "list":
		// Against this 1.37 API server client-go streams the informers'
		// initial state over WATCH (sendInitialEvents, the WatchListClient
		// feature), and LIST is only its fallback. API servers without
		// streaming lists -- 1.33 for one, where the WatchList gate is off by
		// default, and the chart supports >= 1.30 -- get a LIST; the
		// process is run the way it talks to them.
		a.env = []string{"KUBE_FEATURE_WatchListClient=false"}
	case a.resource == "leases" && a.verb == "create":
		// Only a missing Lease is created.
		a.prepare = func(t *testing.T) {
			err := kube.Client.Delete(f.ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "tagsync-leader"}})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	case a.resource == "nodes" && a.verb == "patch":
		// A portal edit must be written to the Nodes' labels.
		a.prepare = func(t *testing.T) { f.portalEdit(t) }
		a.also = func(t *testing.T) { f.waitDegraded(t) }
	case a.group == "events.k8s.io" || a.resource == "nodetagsyncs/status":
		// Labels to write on two resources' Nodes: a changed status, and
		// two LabelsSynced events about one NodeTagSync in one pass, the
		// second of which is a PATCH of the first (an event series).
		a.prepare = func(t *testing.T) { f.portalEdit(t) }
	}
}

// ablate re-applies a's role without a's verb, runs the controller until it
// reports the refusal, and restores the role.
func (f *rbacFixture) ablate(t *testing.T, a ablation) {
	start := time.Now()
	var role *unstructured.Unstructured
	for _, r := range ofKind(f.objs, a.kind) {
		if r.GetName() == a.role && r.GetNamespace() == a.namespace {
			role = r
		}
	}
	reduced := withoutVerb(t, role, a.rule, a.verb)
	must(t, applyOne(f.ctx, reduced))
	f.waitAllowed(t, a, false)
	t.Cleanup(func() {
		must(t, applyOne(f.ctx, role))
		f.waitAllowed(t, a, true)
	})
	if a.prepare != nil {
		a.prepare(t)
	}

	p := startTagsyncEnv(t, "tagsync without "+a.String(), a.env, f.args...)
	user := serviceAccountUser(f.ns, "tagsync")
	want := a.forbidden(user)
	eventually(t, "the process to report: "+want, func() string {
		if strings.Contains(p.logs(), want) {
			return ""
		}
		if a.poke != nil {
			a.poke(t, p)
		}
		if !p.running() {
			return "the process exited without it"
		}
		return "not reported yet"
	})
	if a.also != nil {
		a.also(t)
	}
	p.stop(t)
	t.Logf("refused as expected: %s (%s)", firstLine(grep(p.logs(), want)), time.Since(start).Round(time.Millisecond))
}

// scrapeRefused scrapes p's metrics as Prometheus and requires the scrape
// to fail with 500: the controller could not ask the API server about the
// token or the access (the refusal it logs is what the ablation waits for).
func scrapeRefused(t *testing.T, p *tagsyncProc) {
	t.Helper()
	status, body, err := get(insecureClient, "https://"+p.metrics+"/metrics", prometheus(t))
	if err != nil {
		t.Fatalf("scraping %s: %v", p.name, err)
	}
	if status != http.StatusInternalServerError {
		t.Fatalf("scraping %s without the review right: HTTP %d %q, want 500", p.name, status, strings.TrimSpace(body))
	}
}

// withoutVerb returns a copy of role whose rule i lacks verb (and that lacks
// rule i altogether when verb was its only one).
func withoutVerb(t testing.TB, role *unstructured.Unstructured, i int, verb string) *unstructured.Unstructured {
	t.Helper()
	out := role.DeepCopy()
	rules, _, _ := unstructured.NestedSlice(out.Object, "rules")
	rule := rules[i].(map[string]any)
	verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
	verbs = slices.DeleteFunc(verbs, func(v string) bool { return v == verb })
	if len(verbs) == 0 {
		rules = slices.Delete(rules, i, i+1)
	} else {
		must(t, unstructured.SetNestedStringSlice(rule, verbs, "verbs"))
		rules[i] = rule
	}
	if len(rules) == 0 {
		// An empty rule list: SSA needs the field present to drop the rules.
		rules = []any{}
	}
	must(t, unstructured.SetNestedSlice(out.Object, rules, "rules"))
	return out
}

// waitAllowed waits until the API server's authorizer answers allowed for
// the ServiceAccount and a's verb (RBAC changes reach the authorizer
// through its informers, a moment after the write).
func (f *rbacFixture) waitAllowed(t *testing.T, a ablation, allowed bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("the authorizer to answer allowed=%v for %s", allowed, a), func() string {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: serviceAccountUser(f.ns, "tagsync"), Groups: serviceAccountGroups(f.ns),
			ResourceAttributes: subjectResource(a),
		}}
		if err := kube.Client.Create(f.ctx, sar); err != nil {
			return err.Error()
		}
		if sar.Status.Allowed != allowed {
			return fmt.Sprintf("allowed=%v (%s)", sar.Status.Allowed, sar.Status.Reason)
		}
		return ""
	})
}

func subjectResource(a ablation) *authorizationv1.ResourceAttributes {
	resource, sub, _ := strings.Cut(a.resource, "/")
	// A ClusterRole's rules are checked cluster-wide (namespace ""), a
	// Role's in its namespace.
	return &authorizationv1.ResourceAttributes{Namespace: a.namespace, Verb: a.verb, Group: a.group,
		Resource: resource, Subresource: sub, Name: a.name}
}

// portalEdit changes the scale set's env tag and the VM's owner tag out of
// band, as a portal user.
func (f *rbacFixture) portalEdit(t testing.TB) {
	t.Helper()
	f.edits++
	must(t, f.cloud.Server.SetTags(f.scaleSet, map[string]string{"env": f.editValue()}))
	must(t, f.cloud.Server.SetTags(f.vm, map[string]string{"owner": f.editValue()}))
}

// editValue is the env tag's value after the latest portal edit.
func (f *rbacFixture) editValue() string {
	if f.edits == 0 {
		return "prod"
	}
	return fmt.Sprintf("edit-%d", f.edits)
}

// syncNow asks for a pass with fresh cloud reads.
func (f *rbacFixture) syncNow(t testing.TB) {
	t.Helper()
	f.requests++
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"rbac-%d"}}}`, nodetags.SyncRequestAnnotation, f.requests)
	must(t, mergePatch(f.ctx, kube.Client, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, patch))
}

func (f *rbacFixture) tags(id string) map[string]string {
	tags, err := f.cloud.Server.Tags(id)
	must(f.t, err)
	return tags
}

func (f *rbacFixture) waitLabel(t testing.TB, node, key, value string) {
	t.Helper()
	eventually(t, fmt.Sprintf("label %s=%s on %s", key, value, node), func() string {
		if got := nodeLabels(f.ctx, t, node)[key]; got != value {
			return fmt.Sprintf("label is %q", got)
		}
		return ""
	})
}

// waitReady waits until NodeTagSync default is Ready with n synced nodes.
func (f *rbacFixture) waitReady(t testing.TB, n int32) {
	t.Helper()
	eventually(t, "NodeTagSync default Ready", func() string {
		var nts v1alpha1.NodeTagSync
		if err := kube.Client.Get(f.ctx, client.ObjectKey{Name: "default"}, &nts); err != nil {
			return err.Error()
		}
		if !meta.IsStatusConditionTrue(nts.Status.Conditions, v1alpha1.ConditionReady) || nts.Status.SyncedNodes != n {
			return fmt.Sprintf("status %+v", nts.Status)
		}
		return ""
	})
}

// waitDegraded waits until NodeTagSync default reports sync errors.
func (f *rbacFixture) waitDegraded(t testing.TB) {
	t.Helper()
	eventually(t, "NodeTagSync default Degraded", func() string {
		var nts v1alpha1.NodeTagSync
		if err := kube.Client.Get(f.ctx, client.ObjectKey{Name: "default"}, &nts); err != nil {
			return err.Error()
		}
		if !meta.IsStatusConditionTrue(nts.Status.Conditions, v1alpha1.ConditionDegraded) || nts.Status.ErrorCount == 0 {
			return fmt.Sprintf("status %+v", nts.Status)
		}
		return ""
	})
}

// grep returns the lines of s containing sub.
func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 400 {
		l = l[:400] + "..."
	}
	return l
}
