package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

var cleanupRuns atomic.Int32

// cleanupNodes are the Nodes of one cleanup test, all labelled
// cleanup=<id> (the selector that keeps the test to them).
type cleanupNodes struct {
	env *testenv.Env
	kc  string
	id  string
	// legacy has a base in the older format ({env: prod, team: blue, gone:
	// x}); its azure.tags/team was changed to red by a person; it carries
	// both pending taints and a taint of its own.
	legacy string
	// versioned has a base made under prefix corp.example.com.
	versioned string
	// oneWay has a base made under NodeToCloud.
	oneWay string
	// untouched carries nothing of tagsync's.
	untouched string
}

// newCleanupNodes creates the Nodes of a cleanup test.
func newCleanupNodes(t *testing.T) *cleanupNodes {
	t.Helper()
	env, kc := kube(t)
	id := fmt.Sprintf("cleanup-%d", cleanupRuns.Add(1))
	e := &cleanupNodes{env: env, kc: kc, id: id,
		legacy: id + "-legacy", versioned: id + "-versioned", oneWay: id + "-oneway", untouched: id + "-untouched"}
	sel := map[string]string{"cleanup": id}
	with := func(extra map[string]string) map[string]string {
		out := maps.Clone(sel)
		maps.Copy(out, extra)
		return out
	}
	origin := tags.Origin{Sync: "0b6c1b0e-uid", Prefix: "corp.example.com", Direction: tags.TwoWay, Provider: "azure"}
	versionedBase := tags.Base{Origin: origin, Tags: tags.Set{"Cost Center": "4711"}}.Encode()
	origin.Prefix, origin.Direction = "azure.tags", tags.NodeToCloud
	oneWayBase := tags.Base{Origin: origin, Tags: tags.Set{"env": "prod"}}.Encode()
	own := build.NoSchedule("dedicated", "gpu")
	nodes := []*corev1.Node{
		build.Node(e.legacy,
			build.Labels(with(map[string]string{"azure.tags/env": "prod", "azure.tags/team": "red", "owner": "me"})),
			build.Annotations(map[string]string{v1alpha1.LastSyncedTagsAnnotation: `{"env":"prod","gone":"x","team":"blue"}`,
				"example.com/keep": "yes"}),
			build.Taints(build.NoSchedule(v1alpha1.NodeTagsPendingTaintKey, "true"), own, build.NoSchedule(v1alpha1.LabelSyncPendingTaintKey, ""))),
		build.Node(e.versioned,
			build.Labels(with(map[string]string{"corp.example.com/Costx_20Center": "4711", "azure.tags/env": "prod"})),
			build.Annotation(v1alpha1.LastSyncedTagsAnnotation, versionedBase)),
		build.Node(e.oneWay, build.Labels(with(map[string]string{"azure.tags/env": "prod"})),
			build.Annotation(v1alpha1.LastSyncedTagsAnnotation, oneWayBase)),
		build.Node(e.untouched, build.Labels(with(map[string]string{"azure.tags/env": "prod"})), build.Taints(own)),
	}
	for _, n := range nodes {
		if err := env.Client.Create(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	}
	return e
}

// run runs `tagsync cleanup -l cleanup=<id> args...`.
func (e *cleanupNodes) run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return runVerb(context.Background(), NewCleanupCommand(),
		append([]string{"cleanup", "--kubeconfig", e.kc, "-l", "cleanup=" + e.id}, args...)...)
}

// nodes reads the test's Nodes by name.
func (e *cleanupNodes) nodes(t *testing.T) map[string]corev1.Node {
	t.Helper()
	var list corev1.NodeList
	if err := e.env.Client.List(context.Background(), &list, client.MatchingLabels{"cleanup": e.id}); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Node{}
	for _, n := range list.Items {
		out[n.Name] = n
	}
	return out
}

// labels are the Node's labels without the test's selector label.
func labelsOf(n corev1.Node) map[string]string {
	out := maps.Clone(n.Labels)
	delete(out, "cleanup")
	return out
}

// taintKeys are the keys of taints, sorted (the API server adds
// node.kubernetes.io/not-ready to a new Node).
func taintKeys(taints []corev1.Taint) []string {
	var out []string
	for _, t := range taints {
		out = append(out, t.Key)
	}
	slices.Sort(out)
	return out
}

func TestCleanupDryRunChangesNothing(t *testing.T) {
	e := newCleanupNodes(t)
	before := e.nodes(t)
	out, errOut, err := e.run(t, "--labels", "--label-prefix", "azure.tags")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{
		"node " + e.legacy + "\n" +
			"  - annotation tagsync.io/last-synced-tags\n" +
			"  - taint nodetags.tagsync.io/pending:NoSchedule\n" +
			"  - taint labelsync.tagsync.io/pending:NoSchedule\n" +
			"  - label azure.tags/env (was \"prod\")\n" +
			"  = label azure.tags/team kept: \"red\" is not the synced \"blue\" (changed since tagsync wrote it)\n" +
			"  synced labels under prefix azure.tags, from --label-prefix (the merge base records none)\n",
		"node " + e.versioned + "\n" +
			"  - annotation tagsync.io/last-synced-tags\n" +
			"  - label corp.example.com/Costx_20Center (was \"4711\")\n" +
			"  synced labels under prefix corp.example.com, from the merge base\n",
		"node " + e.oneWay + "\n" +
			"  - annotation tagsync.io/last-synced-tags\n" +
			"  ! the merge base was made under direction NodeToCloud, which never writes labels: no label removed\n",
		"Dry run: 3 node(s) would change: 3 annotation(s), 2 taint(s), 2 label(s) removed; nothing was written (--apply writes it).",
		"1 label(s) kept",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks\n%s\n---\n%s", want, out)
		}
	}
	if strings.Contains(out, e.untouched) {
		t.Errorf("a Node with nothing of tagsync's is listed:\n%s", out)
	}
	for name, n := range e.nodes(t) {
		if n.ResourceVersion != before[name].ResourceVersion {
			t.Errorf("the dry run changed node %s", name)
		}
	}

	js, _, err := e.run(t, "--labels", "--label-prefix", "azure.tags", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r cleanupReport
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	want := cleanupSummary{Nodes: 3, Annotations: 3, Taints: 2, Labels: 2, LabelsKept: 1}
	if r.Applied || r.Summary != want {
		t.Errorf("-o json: applied %v, summary %+v, want a dry run with %+v", r.Applied, r.Summary, want)
	}
}

func TestCleanupApplyRemovesAnnotationsAndTaintsKeepsLabels(t *testing.T) {
	e := newCleanupNodes(t)
	before := e.nodes(t)
	out, errOut, err := e.run(t, "--apply")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "Cleaned up 3 node(s): 3 annotation(s), 2 taint(s), 0 label(s) removed; no cloud tag was touched.") ||
		!strings.Contains(out, "Synced labels are kept; --labels") {
		t.Errorf("summary:\n%s", out)
	}
	after := e.nodes(t)
	for name, n := range after {
		if _, ok := n.Annotations[v1alpha1.LastSyncedTagsAnnotation]; ok {
			t.Errorf("node %s keeps %s", name, v1alpha1.LastSyncedTagsAnnotation)
		}
		if !maps.Equal(n.Labels, before[name].Labels) {
			t.Errorf("node %s: labels %v, want them untouched %v", name, n.Labels, before[name].Labels)
		}
	}
	if got := after[e.legacy].Annotations["example.com/keep"]; got != "yes" {
		t.Errorf("an annotation not tagsync's was removed: %v", after[e.legacy].Annotations)
	}
	for _, name := range []string{e.legacy, e.untouched} {
		if taints := after[name].Spec.Taints; !slices.Equal(taintKeys(taints), taintKeys(before[e.untouched].Spec.Taints)) {
			t.Errorf("node %s taints %v, want tagsync's removed and the others kept: %v", name, taints, before[e.untouched].Spec.Taints)
		}
	}
	if after[e.untouched].ResourceVersion != before[e.untouched].ResourceVersion {
		t.Errorf("a Node with nothing of tagsync's was written")
	}
	again, _, err := e.run(t)
	if err != nil || !strings.Contains(again, "nothing to clean up") {
		t.Errorf("a second run: %v\n%s", err, again)
	}
}

func TestCleanupLabelsRemovesOnlyWhatTagsyncWrote(t *testing.T) {
	e := newCleanupNodes(t)
	_, errOut, err := e.run(t, "--apply", "--labels", "--label-prefix", "azure.tags")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	after := e.nodes(t)
	for name, want := range map[string]map[string]string{
		// env had the synced value; team was changed by a person; owner is
		// no synced label; gone is in the base but not on the Node.
		e.legacy: {"azure.tags/team": "red", "owner": "me"},
		// the versioned base's prefix is corp.example.com: azure.tags/env
		// is not its label.
		e.versioned: {"azure.tags/env": "prod"},
		e.oneWay:    {"azure.tags/env": "prod"},
		e.untouched: {"azure.tags/env": "prod"},
	} {
		if got := labelsOf(after[name]); !maps.Equal(got, want) {
			t.Errorf("node %s: labels %v, want %v", name, got, want)
		}
	}
}

func TestCleanupLegacyBasePrefixFromNodeTagSync(t *testing.T) {
	e := newCleanupNodes(t)
	out, _, err := e.run(t, "--labels")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "node "+e.legacy+"\n  - annotation tagsync.io/last-synced-tags\n  - taint nodetags.tagsync.io/pending:NoSchedule\n"+
		"  - taint labelsync.tagsync.io/pending:NoSchedule\n  ! the merge base is in the older format, which records no label prefix, "+
		"and no NodeTagSync selects the node: no label removed (--label-prefix names the prefix)\n") {
		t.Errorf("without a NodeTagSync or --label-prefix:\n%s", out)
	}
	nts := build.NodeTagSync(e.id, build.NodeSelector(map[string]string{"cleanup": e.id}))
	if err := e.env.Client.Create(context.Background(), nts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.env.Client.Delete(context.Background(), nts) })
	if _, errOut, err := e.run(t, "--labels", "--apply"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if got, want := labelsOf(e.nodes(t)[e.legacy]), map[string]string{"azure.tags/team": "red", "owner": "me"}; !maps.Equal(got, want) {
		t.Errorf("with NodeTagSync %s (prefix azure.tags) selecting it: labels %v, want %v", e.id, got, want)
	}
	out, _, _ = e.run(t, "--labels")
	if strings.Contains(out, e.legacy) {
		t.Errorf("listed again after cleanup:\n%s", out)
	}
}

// TestCleanupConcurrentEditIsReplanned: a Node changed between cleanup's
// read and its patch is refused by the resourceVersion guard (on a Node
// without a pending taint too), read again and re-planned, so a label a
// person just changed is kept.
func TestCleanupConcurrentEditIsReplanned(t *testing.T) {
	e := newCleanupNodes(t)
	const key = "corp.example.com/Costx_20Center"
	edited := false
	beforeCleanupPatch = func(node string) {
		if node != e.versioned || edited {
			return
		}
		edited = true
		var n corev1.Node
		if err := e.env.Client.Get(context.Background(), client.ObjectKey{Name: node}, &n); err != nil {
			t.Error(err)
			return
		}
		n.Labels[key] = "4712"
		if err := e.env.Client.Update(context.Background(), &n); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { beforeCleanupPatch = nil })
	out, errOut, err := e.run(t, "--apply", "--labels", "--label-prefix", "azure.tags")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	n := e.nodes(t)[e.versioned]
	if got, want := labelsOf(n), map[string]string{key: "4712", "azure.tags/env": "prod"}; !maps.Equal(got, want) {
		t.Errorf("labels %v, want %v (the edit made during cleanup kept)", got, want)
	}
	if _, ok := n.Annotations[v1alpha1.LastSyncedTagsAnnotation]; ok {
		t.Errorf("after the retry: annotations %v", n.Annotations)
	}
	if !strings.Contains(out, `= label `+key+` kept: "4712" is not the synced "4711"`) {
		t.Errorf("the output does not show the re-planned Node:\n%s", out)
	}
}

func TestCleanupFlags(t *testing.T) {
	_, kc := kube(t)
	for _, args := range [][]string{
		{"--label-prefix", "azure.tags"},
		{"--labels", "--label-prefix", "kubernetes.io"},
		{"-l", "a in (b"},
		{"extra"},
	} {
		_, _, err := runVerb(context.Background(), NewCleanupCommand(), append([]string{"cleanup", "--kubeconfig", kc}, args...)...)
		if ExitCode(err) != ExitUsage {
			t.Errorf("cleanup %v: %v (exit %d), want a usage error", args, err, ExitCode(err))
		}
	}
}
