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
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// rbacReleaseNS is the namespace the RBAC proofs install the chart in.
const rbacReleaseNS = "tagsync-system"

// servicePrincipalSet is the chart in service-principal mode: the mode a
// local process can run (the secret file is armsim's).
const servicePrincipalSet = "azure.authMode=servicePrincipal,azure.clientID=from-chart,azure.tenantID=from-chart,azure.existingSecret=tagsync-azure"

// rbacProof is one row of the RBAC proofs: the chart rendered with set, the
// shape its RBAC must have, the controller it runs as the chart's
// ServiceAccount, and the roles each of whose verbs is shown needed.
type rbacProof struct {
	name string
	set  string // the helm --set values
	// shape checks the rendered RBAC (which roles, where, granting what).
	shape func(t *testing.T, objs []*unstructured.Unstructured)
	// args are flags the chart's Deployment must pass.
	args []string
	// access are the authorizer's answers for the ServiceAccount once the
	// chart's RBAC is installed: what it must not have beyond the chart.
	access []access
	// azure runs the process against armsim, aws against moto.
	azure, aws bool
	// metric is a metric the full sync must show to a scraper with the
	// chart's metrics-reader role ("": not scraped).
	metric string
	// subject is the controller's part of the proof.
	subject func(f *rbacFixture) rbacSubject
	// ablated picks the roles whose every verb is removed in turn (nil:
	// the RBAC is shown enough, not each verb needed).
	ablated func(role string) bool
	// verbs is how many verbs the ablated roles hold (0: not counted), and
	// verbsAre says which.
	verbs    int
	verbsAre string
}

// rbacSubject is what one controller brings to the RBAC proof.
type rbacSubject interface {
	// setup creates what the controller works on, once the chart's RBAC
	// is installed.
	setup(t *testing.T)
	// fullSync checks, while p runs with the chart's RBAC, that each kind
	// of API call the controller makes succeeded.
	fullSync(t *testing.T, p *tagsyncProc)
	// trigger says what a run without a's verb must do to need it, beyond
	// starting afresh.
	trigger(a *ablation)
	// checks are further subtests run after the full sync.
	checks() []rbacCheck
}

// rbacCheck is a named subtest of an RBAC proof.
type rbacCheck struct {
	name string
	run  func(t *testing.T)
}

// access is an authorizer answer: whether the ServiceAccount may verb
// group/resource in namespace ("": cluster-wide).
type access struct {
	allowed                          bool
	verb, group, resource, namespace string
}

// TestChartRBACIsEnoughAndEveryRuleIsNeeded runs each row of rbacProofs:
// it renders the chart with the row's values, checks the RBAC's shape,
// applies its ServiceAccount, ClusterRoles, Roles and bindings to the real
// API server, and runs the real `tagsync run` binary with the Deployment's
// own arguments, as the chart's ServiceAccount (a kubeconfig impersonating
// system:serviceaccount:tagsync-system:tagsync). A full sync succeeds with
// no request forbidden. Then, for every verb of every rule of the row's
// roles, the rule is re-applied without that verb, a fresh process runs,
// and the test waits until the process reports the API server's refusal of
// exactly that verb on exactly that resource (as a failed sync, a failed
// leader election, a rejected event or a failed scrape). Each run restores
// the RBAC afterwards. The shared API server gets Cluster API's Cluster and
// Machine CRDs (from the module go.mod requires), the Metal3 ones
// (test/crds/metal3), OpenShift's Infrastructure (test/crds/openshift-seed),
// the CSI snapshot CRDs and the AWS Load Balancer Controller's
// IngressClassParams (internal/controller/workloadtags/testdata).
func TestChartRBACIsEnoughAndEveryRuleIsNeeded(t *testing.T) {
	installLabelSyncCRDs(t)
	installInfrastructureCRD(t)
	installWorkloadTagsCRDs(t)
	for _, r := range rbacProofs() {
		t.Run(r.name, r.run)
	}
}

// rbacProofs are the RBAC proofs: the node sync; the label sync and the
// metadata controller in both shapes the chart grants them (a ClusterRole,
// or Roles in the namespaces served); and the OpenShift adapter, shown
// enough only (that each verb is also needed is the metadata controller's
// proof for the engine kinds).
func rbacProofs() []rbacProof {
	labelsync := func(role string) bool { return role == "tagsync-labelsync" || role == "tagsync-labelsync-secrets" }
	const labelsyncVerbs = "list and watch on 6 kinds, patch on profile status, get on secrets, create and patch on events"
	metadata := func(role string) bool { return role == "tagsync-metadata" }
	const metadataVerbs = "list and watch on 3 kinds, patch on 3 statuses, create and patch on events"
	const workloadtagsVerbs = "list and watch on 9 kinds, patch on the policies' status, get on IngressClassParams"
	return []rbacProof{{
		name: "node sync", set: servicePrincipalSet, azure: true, metric: "tagsync_nodetags_passes_total",
		subject: newNodeSyncSubject,
		// Every role the chart binds. (The metrics-reader ClusterRole is
		// for scrapers, not the controller: TestMetricsEndpointServesOnlyAuthorizedScrapers
		// shows a scraper without it refused.)
		ablated: func(string) bool { return true },
	}, {
		name: "label sync, ClusterRole, Secrets in the release namespace",
		set:  "azure.authMode=default,nodeTagSync.enabled=false,labelSync.enabled=true",
		shape: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkLabelsyncRBACShape(t, objs, nil, []string{"Role " + rbacReleaseNS})
		},
		args: []string{"--controllers=labelsync", "--azure-auth-mode=default"},
		access: []access{
			// Secrets only in the release namespace, by default.
			{false, "get", "", "secrets", ""},
			{false, "get", "", "secrets", lsElsewhere},
			{true, "get", "", "secrets", rbacReleaseNS},
			// What the controller writes on Nodes it writes with the
			// kubeconfig Secret's credentials.
			{false, "patch", "", "nodes", ""},
		},
		subject: newLabelSyncSubject(rbacReleaseNS, false),
		ablated: labelsync, verbs: 16, verbsAre: labelsyncVerbs,
	}, {
		name: "label sync, Roles in labelSync.namespaces",
		set:  "azure.authMode=default,nodeTagSync.enabled=false,labelSync.enabled=true,labelSync.namespaces={ls-rbac-scoped}",
		shape: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkLabelsyncRBACShape(t, objs, []string{"ls-rbac-scoped"}, nil)
		},
		args: []string{"--controllers=labelsync", "--azure-auth-mode=default", "--namespaces=ls-rbac-scoped"},
		access: []access{
			// Nothing outside the namespace (and no earlier proof's
			// ClusterRole lingers in the authorizer).
			{false, "list", "metal3.io", "baremetalhosts", ""},
			{false, "get", "", "secrets", "ls-rbac-scoped-elsewhere"},
			{false, "patch", "", "nodes", ""},
		},
		subject: newLabelSyncSubject("ls-rbac-scoped", true),
		ablated: labelsync, verbs: 16, verbsAre: labelsyncVerbs,
	}, {
		name: "metadata controller, ClusterRole",
		set:  servicePrincipalSet + ",nodeTagSync.enabled=false,metadata.enabled=true",
		shape: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkMetadataRBACShape(t, objs, nil)
			checkNoNodeSync(t, objs)
		},
		args: []string{"--controllers=metadata", "--audit-log=stderr"}, azure: true, metric: "tagsync_metadata_passes_total",
		subject: newMetadataSubject("md-rbac-cluster"),
		ablated: metadata, verbs: 11, verbsAre: metadataVerbs,
	}, {
		name: "metadata controller, Roles in metadata.namespaces",
		set:  servicePrincipalSet + ",nodeTagSync.enabled=false,metadata.enabled=true,metadata.namespaces={md-rbac-scoped}",
		shape: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkMetadataRBACShape(t, objs, []string{"md-rbac-scoped"})
			checkNoNodeSync(t, objs)
		},
		args: []string{"--controllers=metadata", "--audit-log=stderr", "--namespaces=md-rbac-scoped"},
		// The Roles grant nothing outside the namespace (and no earlier
		// proof's ClusterRole lingers in the authorizer): the run works
		// with the namespace's rights alone.
		access: []access{
			{false, "list", "tagsync.io", "cloudmetadata", ""},
			{false, "create", "events.k8s.io", "events", "md-rbac-scoped-elsewhere"},
		},
		azure: true, metric: "tagsync_metadata_passes_total",
		subject: newMetadataSubject("md-rbac-scoped"),
		ablated: metadata, verbs: 11, verbsAre: metadataVerbs,
	}, {
		// metadata.namespaces is the release namespace: the engine kinds
		// are granted there only, and the adapter's events about the
		// cluster-scoped Infrastructure have only the events Role in
		// default.
		name: "OpenShift adapter",
		set:  servicePrincipalSet + ",nodeTagSync.enabled=false,metadata.enabled=true,openshift.enabled=true,metadata.namespaces={" + rbacReleaseNS + "}",
		shape: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkInfratagsRBACShape(t, objs, rbacReleaseNS)
		},
		args:    []string{"--controllers=metadata,infratags", "--openshift-namespace=" + rbacReleaseNS, "--namespaces=" + rbacReleaseNS},
		azure:   true,
		subject: newOpenShiftSubject,
	}, {
		name: "workload tags",
		set:  "azure.authMode=default,nodeTagSync.enabled=false,workloadTags.enabled=true,aws.region=" + testenv.MotoRegion,
		args: []string{"--controllers=workloadtags", "--aws-region=" + testenv.MotoRegion},
		// Read-only on Kubernetes but for its policies' status: no write
		// verb on what it reads.
		access: []access{
			{false, "patch", "", "persistentvolumes", ""},
			{false, "update", "networking.k8s.io", "ingresses", ""},
			{false, "list", "", "secrets", ""},
		},
		aws: true, metric: "tagsync_workloadtags_passes_total",
		subject: newWorkloadTagsSubject,
		ablated: func(role string) bool { return role == "tagsync-workloadtags" }, verbs: 20, verbsAre: workloadtagsVerbs,
	}}
}

// rbacFixture is the cluster, cloud and chart an RBAC proof works on.
type rbacFixture struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	objs  []*unstructured.Unstructured // the rendered chart
	cloud *armsimtest.Env              // armsim, for rows with azure
	moto  *testenv.Moto                // moto, for rows with aws
	args  []string                     // `tagsync run` flags: the chart's, then test overrides
	env   []string                     // the process's environment beyond the test's
}

// run is the runner of one row.
func (r rbacProof) run(t *testing.T) {
	ctx := context.Background()
	f := &rbacFixture{t: t, ctx: ctx, ns: rbacReleaseNS}
	f.objs = renderChart(t, f.ns, "--set", r.set)
	if r.shape != nil {
		r.shape(t, f.objs)
	}
	installRBAC(ctx, t, f.ns, f.objs)
	// Roles are namespaced: remove them too, so no later test runs with
	// this one's grants.
	deleteOnCleanup(t, append(ofKind(f.objs, "RoleBinding"), ofKind(f.objs, "Role")...)...)
	for _, a := range r.access {
		f.waitAllowed(t, ablation{verb: a.verb, group: a.group, resource: a.resource, namespace: a.namespace}, a.allowed)
	}
	if r.azure {
		f.cloud = armsimtest.Start(t)
	}
	if r.aws {
		f.moto = testenv.StartMoto(t)
		f.env = []string{"AWS_ACCESS_KEY_ID=" + testenv.MotoAccessKeyID, "AWS_SECRET_ACCESS_KEY=" + testenv.MotoSecretAccessKey, "AWS_EC2_METADATA_DISABLED=true"}
	}
	s := r.subject(f)
	s.setup(t)

	sa := managerServiceAccount(t, f.objs).GetName()
	args := deploymentArgs(t, f.objs)
	if wantArgs(t, args, r.args...); t.Failed() {
		t.FailNow()
	}
	f.args = append(args, "--kubeconfig="+writeKubeconfig(t, serviceAccountUser(f.ns, sa), serviceAccountGroups(f.ns)...),
		"--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms", "--zap-log-level=debug")
	if r.azure {
		f.args = append(f.args, armsimFlags(t, f.cloud)...)
	}
	if r.aws {
		f.args = append(f.args, "--aws-endpoint="+f.moto.URL)
	}

	t.Run("the chart's RBAC is enough for a full sync", func(t *testing.T) { f.fullSync(t, r, s) })
	for _, c := range s.checks() {
		t.Run(c.name, c.run)
	}
	if r.ablated == nil {
		return
	}
	as := roleAblations(t, f.objs, r.ablated)
	if r.verbs != 0 && len(as) != r.verbs {
		t.Fatalf("the ablated roles have %d verbs, want %d (%s)", len(as), r.verbs, r.verbsAre)
	}
	for _, a := range as {
		f.setTrigger(s, &a)
		t.Run("without "+a.String(), func(t *testing.T) { f.ablate(t, a) })
	}
}

// fullSync runs the controller with the chart's RBAC, has the subject check
// every kind of API call it makes succeeded, and finds nothing forbidden.
func (f *rbacFixture) fullSync(t *testing.T, r rbacProof, s rbacSubject) {
	p := startTagsyncEnv(t, "tagsync "+r.name+" (chart RBAC)", f.env, f.args...)
	s.fullSync(t, p)
	// Prometheus can read the metrics: the chart lets the controller
	// review its token and its access.
	if r.metric != "" {
		if body := scrape(t, p); !strings.Contains(body, r.metric+"{") {
			t.Errorf("the metrics lack %s:\n%s", r.metric, tail(body, 40))
		}
	}
	p.stop(t)
	if logs := p.logs(); strings.Contains(logs, "forbidden") {
		t.Fatalf("with the chart's RBAC some request was forbidden:\n%s", grep(logs, "forbidden"))
	}
}

// deploymentArgs are the chart Deployment's container arguments, without
// the leading "run" subcommand.
func deploymentArgs(t testing.TB, objs []*unstructured.Unstructured) []string {
	t.Helper()
	args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("the Deployment's args %v do not start with run", args)
	}
	return args[1:]
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
			for i, rule := range singleRules(t, role) {
				for _, verb := range rule.verbs {
					out = append(out, ablation{kind: kind, role: role.GetName(), rule: i, verb: verb, group: rule.group,
						resource: rule.resource, namespace: role.GetNamespace(), name: rule.name})
				}
			}
		}
	}
	return out
}

// singleRule is a rule of one API group, one resource and at most one
// resource name.
type singleRule struct {
	group, resource, name string
	verbs                 []string
}

// singleRules reads role's rules, failing on one that names several groups,
// resources or resource names: each rule must be provable needed on its
// own.
func singleRules(t testing.TB, role *unstructured.Unstructured) []singleRule {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	out := make([]singleRule, len(rules))
	for i, r := range rules {
		field := func(name string) []string {
			v, _, _ := unstructured.NestedStringSlice(r.(map[string]any), name)
			return v
		}
		groups, resources, names := field("apiGroups"), field("resources"), field("resourceNames")
		if len(groups) != 1 || len(resources) != 1 || len(names) > 1 {
			t.Fatalf("%s %s/%s rule %d has groups %v, resources %v and names %v: keep one group, one resource and at most one name per rule so each can be proven needed",
				role.GetKind(), role.GetNamespace(), role.GetName(), i, groups, resources, names)
		}
		out[i] = singleRule{group: groups[0], resource: resources[0], verbs: field("verbs")}
		if len(names) == 1 {
			out[i].name = names[0]
		}
	}
	return out
}

// controllerRoles are the roles ("Kind/name") the chart binds to its
// ServiceAccount.
func controllerRoles(objs []*unstructured.Unstructured) map[string]bool {
	// The Deployment's ServiceAccount (the chart may render another one,
	// the metrics scraper's).
	sa := ""
	for _, o := range ofKind(objs, "Deployment") {
		sa, _, _ = unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
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

// setTrigger says what a run without the verb must do to need it: what
// every controller's informers need, then what the subject says.
func (f *rbacFixture) setTrigger(s rbacSubject, a *ablation) {
	if a.verb == "list" {
		// Against this 1.37 API server client-go streams the informers'
		// initial state over WATCH (sendInitialEvents, the WatchListClient
		// feature), and LIST is only its fallback. API servers without
		// streaming lists -- 1.33 for one, where the WatchList gate is off by
		// default, and the chart supports >= 1.30 -- get a LIST; the
		// process is run the way it talks to them.
		a.env = []string{"KUBE_FEATURE_WatchListClient=false"}
		return
	}
	s.trigger(a)
}

// clearStatus is a prepare step for a status verb: a status is patched
// only when it changes, and the fixture's are current, so the one the verb
// writes is cleared, as if the object were new.
func clearStatus(ctx context.Context, c client.Client, o client.Object) func(t *testing.T) {
	return func(t *testing.T) {
		must(t, c.Status().Patch(ctx, o, client.RawPatch("application/merge-patch+json", []byte(`{"status":null}`))))
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

	p := startTagsyncEnv(t, "tagsync without "+a.String(), append(slices.Clip(f.env), a.env...), f.args...)
	want := a.forbidden(serviceAccountUser(f.ns, "tagsync"))
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
	if status, body := scrapeStatus(t, p); status != http.StatusInternalServerError {
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
		resource, sub, _ := strings.Cut(a.resource, "/")
		// A ClusterRole's rules are checked cluster-wide (namespace ""), a
		// Role's in its namespace.
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: serviceAccountUser(f.ns, "tagsync"), Groups: serviceAccountGroups(f.ns),
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: a.namespace, Verb: a.verb, Group: a.group,
				Resource: resource, Subresource: sub, Name: a.name},
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

// wantEvent is an event a controller must have recorded: about the object
// regarding, for reason, and as a series (a repeated event, PATCHed) when
// series is set.
type wantEvent struct {
	regarding, reason string
	series            bool
}

// waitEvents waits until namespace holds each of want, reported by
// controller, and checks that the field selector docs/install-aks.md and
// the chart's NOTES give finds its events:
// kubectl get events -n <namespace> --field-selector reportingComponent=tagsync-<controller>
func waitEvents(ctx context.Context, t testing.TB, namespace, controller string, want ...wantEvent) {
	t.Helper()
	eventually(t, fmt.Sprintf("the events of %s in %s: %+v", controller, namespace, want), func() string {
		var list eventsv1.EventList
		if err := kube.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return err.Error()
		}
		for _, w := range want {
			if !slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
				return e.ReportingController == "tagsync-"+controller && e.Regarding.Name == w.regarding && e.Reason == w.reason &&
					(!w.series || e.Series != nil && e.Series.Count >= 2)
			}) {
				return fmt.Sprintf("no %+v among %d events", w, len(list.Items))
			}
		}
		return ""
	})
	var core corev1.EventList
	must(t, kube.Client.List(ctx, &core, client.InNamespace(namespace),
		client.MatchingFields{"reportingComponent": "tagsync-" + controller}))
	if len(core.Items) == 0 {
		t.Errorf("no events found in %s with the field selector reportingComponent=tagsync-%s the docs give", namespace, controller)
	}
}

// waitARMTags waits until every resource of ids carries want in armsim.
func waitARMTags(t testing.TB, cloud *armsimtest.Env, ids []string, want map[string]string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%v on %d resource(s)", want, len(ids)), func() string {
		for _, id := range ids {
			got, err := cloud.Server.Tags(id)
			if err != nil {
				return err.Error()
			}
			if !hasTags(got, want) {
				return fmt.Sprintf("%s has %v", id, got)
			}
		}
		return ""
	})
}

// hasTags reports whether tags hold every key of want with its value.
func hasTags(tags, want map[string]string) bool {
	for k, v := range want {
		if tags[k] != v {
			return false
		}
	}
	return true
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
