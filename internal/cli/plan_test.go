package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

const (
	planSub     = armsimtest.SubscriptionID
	planRG      = "rg-aks"
	planWait    = 60 * time.Second
	classifier  = "kubernetes.io_cluster.demo"
	computeBase = "/subscriptions/" + planSub + "/resourceGroups/" + planRG + "/providers/Microsoft.Compute/"
	diskBase    = "/subscriptions/" + planSub + "/resourceGroups/" + planRG + "/providers/Microsoft.Compute/disks/"
)

// planEstate is an Azure estate, its Nodes and tagsync objects on a
// control plane of the test's own (the controllers started on it must see
// no other test's objects).
type planEstate struct {
	kube       *testenv.Env
	kubeconfig string
	sim        *armsimtest.Env
	ns         string
	ids        []string
}

// newPlanEstate seeds armsim (a scale set with two instances, a VM, three
// classified disks) and the cluster (four Nodes, a NodeTagSync, a
// CloudMetadata with an AzureMetadata).
func newPlanEstate(t *testing.T) *planEstate {
	t.Helper()
	e := &planEstate{kube: testenv.Start(t), sim: armsimtest.Start(t), ns: "platform"}
	e.kubeconfig = writeFile(t, "kubeconfig", string(e.kube.KubeConfig))
	owned := map[string]string{classifier: "owned"}
	disk := func(name string, extra map[string]string) armsim.Resource {
		tg := map[string]string{classifier: "owned"}
		for k, v := range extra {
			tg[k] = v
		}
		return armsim.Resource{Type: armsim.TypeDisk, Name: name, Tags: tg}
	}
	st := armsim.State{Subscriptions: []armsim.Subscription{{ID: planSub, ResourceGroups: []armsim.ResourceGroup{{
		Name: planRG, Tags: owned,
		ScaleSets:       []armsim.ScaleSet{{Name: "pool1", Tags: map[string]string{"env": "prod", "team": "a"}, Instances: []string{"0", "1"}}},
		VirtualMachines: []armsim.VirtualMachine{{Name: "vm-a", Tags: map[string]string{"env": "dev", "old": "x"}}},
		Resources:       []armsim.Resource{disk("d1", nil), disk("d2", map[string]string{"env": "demo"}), disk("d3", map[string]string{"env": "other"})},
	}}}}}
	if err := e.sim.Server.Add(st); err != nil {
		t.Fatal(err)
	}
	e.ids = []string{"/subscriptions/" + planSub + "/resourceGroups/" + planRG, computeBase + "virtualMachineScaleSets/pool1", computeBase + "virtualMachines/vm-a", diskBase + "d1", diskBase + "d2", diskBase + "d3"}
	e.seedCluster(t)
	return e
}

// seedCluster creates the Nodes and tagsync objects.
func (e *planEstate) seedCluster(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	base := `{"env":"prod","team":"a"}`
	pending := []corev1.Taint{build.NoSchedule(v1alpha1.NodeTagsPendingTaintKey, "true")}
	nodes := []*corev1.Node{
		planNode("pool1-0", computeBase+"virtualMachineScaleSets/pool1/virtualMachines/0", base,
			map[string]string{"azure.tags/env": "prod", "azure.tags/team": "a", "azure.tags/costcenter": "42"}, nil),
		planNode("pool1-1", computeBase+"virtualMachineScaleSets/pool1/virtualMachines/1", base,
			map[string]string{"azure.tags/env": "prod", "azure.tags/team": "a"}, pending),
		planNode("vm-a", computeBase+"virtualMachines/vm-a", "", nil, nil),
		planNode("onprem", "", "", map[string]string{"kubernetes.azure.com/managed": "false"}, nil),
	}
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}},
		build.NodeTagSync("default"),
		build.AzureMetadata("tags", build.Namespace(e.ns), build.Opcode(v1alpha1.OpcodeAdd), build.Subscriptions(planSub),
			build.ResourceTags(map[string]string{"env": "demo", "cost-center": "eng-42"})),
		build.CloudMetadata("cluster", build.Namespace(e.ns), build.Classifiers(map[string]string{classifier: "owned"}), build.AzureRef("tags")),
	}
	for _, n := range nodes {
		objs = append(objs, n)
	}
	for _, o := range objs {
		if err := e.kube.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The object's active tag list says env is its own, but its status.held
	// does not say it holds env on d3: d3's env=other is not the object's,
	// for the controller and for plan alike.
	az := &v1alpha1.AzureMetadata{}
	if err := e.kube.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "tags"}, az); err != nil {
		t.Fatal(err)
	}
	az.Status.ResourceTags = map[string]string{"env": "demo"}
	if err := e.kube.Client.Status().Update(ctx, az); err != nil {
		t.Fatal(err)
	}
}

// planNode is a Node with a providerID, base annotation, labels and taints.
func planNode(name, providerID, base string, labels map[string]string, taints []corev1.Taint) *corev1.Node {
	opts := []build.NodeOption{build.Labels(labels), build.Taints(taints...)}
	if providerID != "" {
		opts = append(opts, build.ProviderID("azure://"+providerID))
	}
	if base != "" {
		opts = append(opts, build.Annotation(v1alpha1.LastSyncedTagsAnnotation, base))
	}
	return build.Node(name, opts...)
}

// azureFlags are the cloud flags that reach the estate's armsim with a
// client secret, through the credential chain tagsync run uses.
func (e *planEstate) azureFlags(t *testing.T) []string {
	t.Helper()
	return armsimCloudFlags(t, e.sim, armsimtest.ClientSecret)
}

// runPlanCLI runs `tagsync plan args...` and returns its output and error.
func runPlanCLI(ctx context.Context, args ...string) (string, string, error) {
	cmd, _ := newPlanCommand()
	return runVerb(ctx, cmd, append([]string{"plan"}, args...)...)
}

// planJSON runs `tagsync plan -o json args...` on the estate and returns
// its report.
func (e *planEstate) planJSON(t *testing.T, args ...string) planReport {
	t.Helper()
	out, errOut, err := runPlanCLI(t.Context(), append(append(e.azureFlags(t), "--kubeconfig="+e.kubeconfig, "-o", "json"), args...)...)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	return parsePlan(t, out)
}

// parsePlan reads the report plan -o json printed.
func parsePlan(t *testing.T, out string) planReport {
	t.Helper()
	var plan planReport
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, out)
	}
	return plan
}

// tagsState reads every seeded resource's tags, by canonical ID.
func (e *planEstate) tagsState(t *testing.T) map[string]tags.Set {
	t.Helper()
	out := map[string]tags.Set{}
	for _, id := range e.ids {
		tg, err := e.sim.Server.Tags(id)
		if err != nil {
			t.Fatal(err)
		}
		out[cloud.CanonicalID(id)] = tags.Set(tg)
	}
	return out
}

// nodeState is what the node sync writes on a Node.
type nodeState struct {
	Labels  map[string]string
	Base    string
	Pending bool
}

// nodesState reads the Nodes' labels, base annotations and pending taints.
func (e *planEstate) nodesState(t *testing.T) map[string]nodeState {
	t.Helper()
	var list corev1.NodeList
	if err := e.kube.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]nodeState{}
	for _, n := range list.Items {
		s := nodeState{Labels: map[string]string{}, Base: n.Annotations[v1alpha1.LastSyncedTagsAnnotation]}
		for k, v := range n.Labels {
			if strings.HasPrefix(k, "azure.tags/") {
				s.Labels[k] = v
			}
		}
		for _, tn := range n.Spec.Taints {
			s.Pending = s.Pending || tn.Key == v1alpha1.NodeTagsPendingTaintKey
		}
		out[n.Name] = s
	}
	return out
}

// applyChanges applies a plan's + ~ - lines to a set.
func applyChanges(nc tags.NameCase, s tags.Set, changes []change) tags.Set {
	var p tags.Patch
	for _, c := range changes {
		if c.Op == opRemove {
			p.Delete = append(p.Delete, c.Name)
			continue
		}
		if p.Set == nil {
			p.Set = tags.Set{}
		}
		p.Set[c.Name] = *c.After
	}
	return p.Apply(nc, s)
}

// TestPlanPredictsWhatTheControllersWrite: on one estate (real API server,
// armsim through the real Azure SDK and credential chain), plan's
// prediction is exactly what the nodetags and metadata controllers then
// write: the cloud's tags, the Nodes' labels, base annotations and pending
// taints, and the metadata controller's audit records. plan itself sends
// only reads to ARM and writes nothing to the cluster.
func TestPlanPredictsWhatTheControllersWrite(t *testing.T) {
	e := newPlanEstate(t)
	tagsBefore, nodesBefore := e.tagsState(t), e.nodesState(t)
	versionsBefore := clusterVersions(t, e.kube.Client)
	e.sim.Server.ResetCalls()

	plan := e.planJSON(t, "-n", e.ns)
	assertOnlyReads(t, e.sim.Server.Calls())
	if after := clusterVersions(t, e.kube.Client); !equalMaps(versionsBefore, after) {
		t.Fatalf("plan wrote to the cluster:\nbefore %v\nafter  %v", versionsBefore, after)
	}
	if n := plan.Writes(); n != 8 {
		t.Errorf("plan counts %d writes, want 8 (pool1, 3 disks, the resource group; pool1-0, pool1-1 and vm-a)", n)
	}
	assertPlanText(t, e)
	wantTags, wantNodes := predicted(t, plan, tagsBefore, nodesBefore)

	auditLog := startControllers(t, e)
	requestPasses(t, e)
	if got := e.tagsState(t); !equalTagStates(got, wantTags) {
		t.Errorf("cloud tags after the passes:\n%v\nplan predicted:\n%v", got, wantTags)
	}
	if got := e.nodesState(t); fmt.Sprint(got) != fmt.Sprint(wantNodes) {
		t.Errorf("Nodes after the passes:\n%v\nplan predicted:\n%v", got, wantNodes)
	}
	if got, want := auditChanges(t, auditLog.String()), planMetadataChanges(plan); got != want {
		t.Errorf("audit records:\n%s\nplan predicted:\n%s", got, want)
	}
}

// assertPlanText checks the text form of the same plan.
func assertPlanText(t *testing.T, e *planEstate) {
	t.Helper()
	out, errOut, err := runPlanCLI(t.Context(), append(e.azureFlags(t), "--kubeconfig="+e.kubeconfig, "-n", e.ns, "--exit-code")...)
	if ExitCode(err) != ExitPlanChanges {
		t.Fatalf("plan --exit-code: exit %d (%v), want %d\n%s", ExitCode(err), err, ExitPlanChanges, errOut)
	}
	for _, want := range []string{
		"NodeTagSync default",
		"azure " + computeBase + "virtualMachineScaleSets/pool1\n    + costcenter = \"42\"",
		"node pool1-1\n    + azure.tags/costcenter = \"42\"",
		"- taint nodetags.tagsync.io/pending:NoSchedule",
		"node vm-a\n    + azure.tags/env = \"dev\"\n    + azure.tags/old = \"x\"",
		"node onprem not synced",
		"AzureMetadata tags (azure, opcode add): 4 matched, 0 in sync",
		"      ! env not written: tag \"env\": not added: the resource has env=\"other\", which this object did not write",
		"Plan: 8 write(s) (nothing was written).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan's text does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("plan coloured output that is not a terminal:\n%s", out)
	}
}

// predicted applies the plan to the states read before it.
func predicted(t *testing.T, plan planReport, tagsBefore map[string]tags.Set, nodesBefore map[string]nodeState) (map[string]tags.Set, map[string]nodeState) {
	t.Helper()
	wantTags := map[string]tags.Set{}
	for id, s := range tagsBefore {
		wantTags[id] = s.Clone()
	}
	apply := func(res resourceDiff) {
		id := cloud.CanonicalID(res.ID)
		wantTags[id] = applyChanges(tags.CaseInsensitive, wantTags[id], res.Changes)
	}
	if len(plan.NodeTagSyncs) != 1 || len(plan.CloudMetadata) != 1 {
		t.Fatalf("plan covers %d NodeTagSyncs and %d CloudMetadata, want 1 and 1: %+v", len(plan.NodeTagSyncs), len(plan.CloudMetadata), plan)
	}
	for _, res := range plan.NodeTagSyncs[0].Resources {
		apply(res)
	}
	for _, q := range plan.CloudMetadata[0].Requests {
		for _, res := range q.Resources {
			apply(res)
		}
	}
	wantNodes := map[string]nodeState{}
	for name, s := range nodesBefore {
		wantNodes[name] = s
	}
	for _, nd := range plan.NodeTagSyncs[0].Nodes {
		s := wantNodes[nd.Name]
		s.Labels = applyChanges(tags.CaseSensitive, tags.Set(s.Labels), nd.Labels)
		if nd.Base != "" {
			s.Base = nd.Base
		}
		s.Pending = s.Pending && !nd.ReleaseTaint
		wantNodes[nd.Name] = s
	}
	return wantTags, wantNodes
}

// startControllers runs the nodetags and metadata controllers on the
// estate with a fresh Azure provider, and returns their audit log.
func startControllers(t *testing.T, e *planEstate) *testenv.SyncBuffer {
	t.Helper()
	url := e.sim.Server.URL()
	az, err := azure.NewProvider(t.Context(), azure.Config{ARMEndpoint: url, ARMAudience: url, DefaultSubscription: planSub,
		HTTPClient: e.sim.HTTPClient}, azure.WithCredential(e.sim.Credential), azure.WithRegisterer(prometheus.NewRegistry()),
		azure.WithPollFrequency(10*time.Millisecond), azure.WithThrottleGates(azure.NewThrottleGates()))
	if err != nil {
		t.Fatal(err)
	}
	log := &testenv.SyncBuffer{}
	mgr, err := operator.Build(t.Context(), e.kube.Config, operator.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Providers: []cloud.Provider{az}, Controllers: []string{nodetags.ControllerName, metadata.ControllerName}, Audit: audit.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, mgr, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}})
	return log
}

// runManager starts a built controller manager until the test ends. It
// starts the manager's event broadcaster in the test's goroutine (by
// emitting an event about the test's namespace): otherwise the manager's
// stop starts it in a goroutine it does not wait for, which reads klog's
// global logger while later tests of the package (tagsync run) set it.
func runManager(t *testing.T, mgr *operator.Manager, about client.Object) {
	mgr.GetEventRecorder("tagsync-test").Eventf(about, nil, corev1.EventTypeNormal, "TestStarted", "Test", "controllers started by %s", t.Name())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	})
}

// requestPasses asks each controller for a pass and waits for it; the node
// sync gets a second one, so the Nodes its first pass wrote have settled.
func requestPasses(t *testing.T, e *planEstate) {
	t.Helper()
	c := e.kube.Client
	ntsServed := func(o client.Object) string { return o.(*v1alpha1.NodeTagSync).Status.LastSyncRequest }
	testenv.RequestPass(t, c, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, v1alpha1.SyncRequestAnnotation, ntsServed, planWait)
	testenv.RequestPass(t, c, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, v1alpha1.SyncRequestAnnotation, ntsServed, planWait)
	testenv.RequestPass(t, c, &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "cluster"}},
		v1alpha1.SyncRequestAnnotation, func(o client.Object) string { return o.(*v1alpha1.CloudMetadata).Status.LastSyncRequest }, planWait)
}

// assertOnlyReads fails when ARM saw anything but token requests and reads.
func assertOnlyReads(t *testing.T, calls armsim.Calls) {
	t.Helper()
	if len(calls) == 0 {
		t.Fatal("plan sent no request to ARM")
	}
	for _, op := range calls.Ops() {
		read := strings.HasPrefix(op, "Identity.") || op == "ResourceGraph.Resources" || op == "Permissions.ListForSubscription" ||
			strings.HasSuffix(op, ".List") || strings.HasSuffix(op, ".ListAll") || strings.HasSuffix(op, ".Get") || strings.HasSuffix(op, ".GetAtScope")
		if !read {
			t.Errorf("plan sent %d %s request(s): not a read", calls.Count(op), op)
		}
	}
}

// clusterVersions are the resourceVersions of every object plan may read
// and the number of events: any write changes them.
func clusterVersions(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	lists := []client.ObjectList{&corev1.NodeList{}, &v1alpha1.NodeTagSyncList{}, &v1alpha1.CloudMetadataList{},
		&v1alpha1.AzureMetadataList{}, &v1alpha1.AWSMetadataList{}}
	for _, l := range lists {
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
		items, err := metaItems(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			out[fmt.Sprintf("%T/%s/%s", l, o.GetNamespace(), o.GetName())] = o.GetResourceVersion()
		}
	}
	var events eventsv1.EventList
	if err := c.List(ctx, &events); err != nil {
		t.Fatal(err)
	}
	out["events"] = fmt.Sprint(len(events.Items))
	return out
}

// metaItems returns a list's items as objects.
func metaItems(l client.ObjectList) ([]metav1.Object, error) {
	objs, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, len(objs))
	for i, o := range objs {
		if out[i], err = meta.Accessor(o); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func equalMaps(a, b map[string]string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func equalTagStates(a, b map[string]tags.Set) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// auditChanges renders the metadata controller's result records (not the
// pending ones, nor the node sync's) as sorted "resource set/deleted"
// lines.
func auditChanges(t *testing.T, log string) string {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var rec audit.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if rec.Result == audit.ResultPending || rec.Object.Kind == "NodeTagSync" {
			continue
		}
		var parts []string
		for n, c := range rec.Set {
			parts = append(parts, fmt.Sprintf("set %s=%s", n, c.After))
		}
		for n := range rec.Deleted {
			parts = append(parts, "delete "+n)
		}
		sort.Strings(parts)
		lines = append(lines, cloud.CanonicalID(rec.Resource)+" "+strings.Join(parts, ","))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// planMetadataChanges renders the plan's metadata writes as auditChanges
// does.
func planMetadataChanges(plan planReport) string {
	var lines []string
	for _, m := range plan.CloudMetadata {
		for _, q := range m.Requests {
			for _, res := range q.Resources {
				var parts []string
				for _, c := range res.Changes {
					if c.Op == opRemove {
						parts = append(parts, "delete "+c.Name)
						continue
					}
					parts = append(parts, fmt.Sprintf("set %s=%s", c.Name, *c.After))
				}
				if len(parts) == 0 {
					continue
				}
				sort.Strings(parts)
				lines = append(lines, cloud.CanonicalID(res.ID)+" "+strings.Join(parts, ","))
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestPlanWithoutCredentialsFails: with a credential that cannot obtain a
// token, plan --exit-code exits 1 with the credential error once, naming
// what to configure, instead of one failure per Node and "0 write(s)".
func TestPlanWithoutCredentialsFails(t *testing.T) {
	e := newPlanEstate(t)
	flags := append(e.azureFlags(t), "--azure-authority-host=https://127.0.0.1:1", "--kubeconfig="+e.kubeconfig, "-n", e.ns, "--exit-code")
	out, errOut, err := runPlanCLI(t.Context(), flags...)
	if ExitCode(err) != 1 {
		t.Fatalf("exit %d (%v), want 1:\n%s%s", ExitCode(err), err, out, errOut)
	}
	msg := err.Error()
	const cause = "connection refused"
	if n := strings.Count(out+errOut, cause); n > 1 || strings.Count(msg, cause) != 1 || !strings.Contains(msg, "azure: no credentials") ||
		!strings.Contains(msg, "--azure-*") || strings.Contains(out, "write(s)") {
		t.Errorf("want one credential error naming the flags, no plan; the output says %q %d times:\n%s\n%s\n%s", cause, n, msg, out, errOut)
	}
}
