package nodetags_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// aProvider is any cloud's provider the harness runs the controller on.
type aProvider = cloud.Provider

// testCloud is a cloud the cross-cloud suite runs the node sync on: it
// creates the resources behind nodes and edits their tags out of band, as
// someone in the cloud's console would.
type testCloud interface {
	// group creates a scale set (Azure) or Auto Scaling group (AWS) of n
	// instances tagged t, and returns its resource ID and its instances'
	// providerIDs.
	group(h *harness, name string, n int, t map[string]string) (string, []string)
	// members creates a group whose instances are resources with tags of
	// their own, each tagged t like the group: a Flexible scale set
	// (Azure), an Auto Scaling group (AWS). It returns the group's ID and
	// its instances' providerIDs.
	members(h *harness, name string, n int, t map[string]string) (string, []string)
	// solo creates a VM (Azure) or EC2 instance in no group (AWS) tagged t,
	// and returns its resource ID and providerID.
	solo(h *harness, name string, t map[string]string) (string, string)
	// own is the resource ID of the node's own instance (a Uniform
	// instance's VM on Azure).
	own(providerID string) string
	// tags reads a resource's tags (on AWS without the aws: ones).
	tags(h *harness, id string) map[string]string
	// edit deletes del from a resource's tags, then sets set.
	edit(h *harness, id string, set map[string]string, del ...string)
	// unmanaged is a node the provider does not sync: its providerID and
	// labels.
	unmanaged() (string, map[string]string)
}

// crossCloud is a provider and how to start the controller on it.
type crossCloud struct {
	provider v1alpha1.Provider
	start    func(t *testing.T) (*harness, testCloud)
}

// crossClouds are the clouds of the cross-cloud suite.
var crossClouds = []crossCloud{
	{v1alpha1.ProviderAzure, func(t *testing.T) (*harness, testCloud) { return newHarness(t), armsimCloud{} }},
	{v1alpha1.ProviderAWS, newMotoHarness},
}

// newMotoHarness starts moto and the controller on the AWS provider.
func newMotoHarness(t *testing.T) (*harness, testCloud) { return newMotoHarnessWith(t, nil) }

// newMotoHarnessWith is newMotoHarness with configure applied to the
// harness before the controller starts.
func newMotoHarnessWith(t *testing.T, configure func(*harness, *testenv.Moto)) (*harness, motoCloud) {
	h, c, _ := newCountedMotoHarness(t, configure)
	return h, c
}

// newCountedMotoHarness is newMotoHarnessWith that also returns the
// controller's provider (the last one started, unless configure replaced
// the harness's provider), whose calls a test counts.
func newCountedMotoHarness(t *testing.T, configure func(*harness, *testenv.Moto)) (*harness, motoCloud, func() *aws.Provider) {
	kube := acquirePlane(t)
	m := testenv.StartMoto(t)
	var last *aws.Provider
	h := &harness{t: t, ctx: context.Background(), kube: kube, c: kube.Client, audit: &testenv.SyncBuffer{},
		provider: func() aProvider {
			last = awstest.Provider(t, m)
			return last
		}}
	if configure != nil {
		configure(h, m)
	}
	h.startController()
	t.Cleanup(func() {
		h.stop()
		h.cleanupObjects()
	})
	return h, motoCloud{m}, func() *aws.Provider { return last }
}

// armsimCloud is Azure on armsim.
type armsimCloud struct{}

func (armsimCloud) group(h *harness, name string, n int, t map[string]string) (string, []string) {
	h.resourceGroup("rg-" + name)
	return h.scaleSet("rg-"+name, "pool", n, t)
}

func (armsimCloud) members(h *harness, name string, n int, t map[string]string) (string, []string) {
	h.t.Helper()
	rg := "rg-" + name
	h.resourceGroup(rg)
	id, err := h.cloud.CreateScaleSet(sub, rg, armsim.ScaleSet{Name: "flex", Location: "westeurope", Mode: armsim.Flexible, Tags: t})
	if err != nil {
		h.t.Fatal(err)
	}
	pids := make([]string, n)
	for i := range n {
		vm, err := h.cloud.CreateVM(sub, rg, armsim.VirtualMachine{Name: fmt.Sprintf("flex-%d", i), ScaleSet: "flex", Tags: t})
		if err != nil {
			h.t.Fatal(err)
		}
		pids[i] = "azure://" + vm
	}
	return id, pids
}

func (armsimCloud) solo(h *harness, name string, t map[string]string) (string, string) {
	h.resourceGroup("rg-" + name)
	return h.vm("rg-"+name, name, t)
}

func (armsimCloud) own(providerID string) string { return strings.TrimPrefix(providerID, "azure://") }

func (armsimCloud) tags(h *harness, id string) map[string]string { return h.tags(id) }

func (armsimCloud) edit(h *harness, id string, set map[string]string, del ...string) {
	h.t.Helper()
	if err := h.cloud.DeleteTags(id, del...); err != nil {
		h.t.Fatal(err)
	}
	if err := h.cloud.SetTags(id, set); err != nil {
		h.t.Fatal(err)
	}
}

func (armsimCloud) unmanaged() (string, map[string]string) {
	return "", map[string]string{"kubernetes.azure.com/managed": "false"}
}

// motoCloud is AWS on moto.
type motoCloud struct{ m *testenv.Moto }

// instanceARN is the ARN of an instance on moto.
func instanceARN(id string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", testenv.MotoRegion, testenv.MotoAccountID, id)
}

// groupName is the name of the Auto Scaling group an ARN names, or "".
func groupName(id string) string {
	_, name, _ := strings.Cut(id, ":autoScalingGroupName/")
	return name
}

func (c motoCloud) group(h *harness, name string, n int, t map[string]string) (string, []string) {
	id, ids := seed.Group(h.t, c.m.Config, testenv.MotoRegion, name, n, t)
	pids := make([]string, len(ids))
	for i, in := range ids {
		pids[i] = seed.ProviderID(testenv.MotoRegion, in)
	}
	return id, pids
}

func (c motoCloud) members(h *harness, name string, n int, t map[string]string) (string, []string) {
	return c.group(h, name, n, t)
}

func (c motoCloud) solo(h *harness, _ string, t map[string]string) (string, string) {
	id := awstest.RunInstances(h.t, c.m, 1, t)[0]
	return instanceARN(id), seed.ProviderID(testenv.MotoRegion, id)
}

func (motoCloud) own(providerID string) string {
	return instanceARN(providerID[strings.LastIndex(providerID, "/")+1:])
}

func (c motoCloud) tags(h *harness, id string) map[string]string {
	out := map[string]string{}
	if name := groupName(id); name != "" {
		for k, t := range seed.GroupTags(h.t, c.m.Config, testenv.MotoRegion, name) {
			out[k] = t.Value
		}
		return out
	}
	for k, v := range seed.InstanceTags(h.t, c.m.Config, testenv.MotoRegion, id[strings.LastIndex(id, "/")+1:]) {
		if !strings.HasPrefix(k, "aws:") {
			out[k] = v
		}
	}
	return out
}

func (c motoCloud) edit(h *harness, id string, set map[string]string, del ...string) {
	if name := groupName(id); name != "" {
		seed.SetGroupTags(h.t, c.m.Config, testenv.MotoRegion, name, set, del...)
		return
	}
	seed.SetInstanceTags(h.t, c.m.Config, testenv.MotoRegion, id[strings.LastIndex(id, "/")+1:], set, del...)
}

func (motoCloud) unmanaged() (string, map[string]string) {
	return "aws:///us-east-1a/fargate-ip-192-168-1-1.ec2.internal", nil
}

// onCloud is one behaviour's view of the suite: its harness (its own
// *testing.T), cloud, label prefix and name.
type onCloud struct {
	*harness
	cloud    testCloud
	provider v1alpha1.Provider
	name     string
}

// label is the label key of tag name.
func (o *onCloud) label(name string) string { return o.provider.DefaultLabelPrefix() + "/" + name }

// node creates Node <case>-<i> on providerID, selected by the case's
// NodeTagSync, with labels given by tag name and a base.
func (o *onCloud) node(i int, providerID string, tags, base map[string]string, taints ...corev1.Taint) string {
	o.t.Helper()
	name := fmt.Sprintf("%s-%d", o.name, i)
	labels := map[string]string{"case": o.name}
	for k, v := range tags {
		labels[o.label(k)] = v
	}
	n := build.Node(name, build.Labels(labels), build.ProviderID(providerID), build.Taints(taints...))
	if base != nil {
		build.Annotation(v1alpha1.LastSyncedTagsAnnotation, jsonObject(base))(n)
	}
	if err := o.c.Create(o.ctx, n); err != nil {
		o.t.Fatalf("creating node %s: %v", name, err)
	}
	return name
}

// nodes creates a Node on each providerID (no labels) and returns their names.
func (o *onCloud) nodes(pids []string) []string {
	names := make([]string, len(pids))
	for i, pid := range pids {
		names[i] = o.node(i, pid, nil, nil)
	}
	return names
}

// sync creates the case's NodeTagSync on the cloud, selecting its Nodes.
func (o *onCloud) sync(mutate func(*v1alpha1.NodeTagSyncSpec)) {
	o.harness.sync(o.name, func(s *v1alpha1.NodeTagSyncSpec) {
		s.Provider = o.provider
		s.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"case": o.name}}
		if mutate != nil {
			mutate(s)
		}
	})
}

// waitLabels waits until every node's label for each tag has its value.
func (o *onCloud) waitLabels(nodes []string, tags map[string]string) {
	o.t.Helper()
	for _, n := range nodes {
		for k, v := range tags {
			o.waitLabel(n, o.label(k), v)
		}
	}
}

// waitTag waits until the resource's tag has the value (or is absent).
func (o *onCloud) waitTag(id, name, value string) {
	o.t.Helper()
	o.waitValueSaying("tag on "+id, name, value, func() map[string]string { return o.cloud.tags(o.harness, id) }, o.statusOf(o.name))
}

// behaviour is one node-sync behaviour the suite checks on every cloud.
type behaviour struct {
	name string
	// differs says how the clouds differ in this behaviour; "" when they
	// behave alike.
	differs string
	run     func(o *onCloud)
}

// behaviours are the cross-cloud suite's table.
var behaviours = []behaviour{
	{name: "merge-deletions", run: mergeDeletions},
	{name: "conflict-ignore", run: conflictCase(v1alpha1.ConflictIgnore, "node", "cloud", true)},
	{name: "conflict-cloudwins", run: conflictCase(v1alpha1.ConflictCloudWins, "cloud", "cloud", false)},
	{name: "conflict-nodewins", run: conflictCase(v1alpha1.ConflictNodeWins, "node", "node", false)},
	{name: "aggregate", run: aggregate},
	{name: "wipe", run: wipe},
	{name: "taints", run: taints},
	{name: "pending-and-unmanaged", run: pendingAndUnmanaged,
		differs: "the unmanaged node: on Azure an on-prem node (kubernetes.azure.com/managed=false), on AWS a Fargate node"},
	{name: "target-instance", run: targetInstance(map[v1alpha1.Provider]bool{v1alpha1.ProviderAzure: true, v1alpha1.ProviderAWS: false}),
		differs: "Azure's Uniform instances have no tags of their own: a node syncs with its scale set (TargetFallback); " +
			"on AWS each node syncs with its own EC2 instance and the group is left alone"},
	// No tag lost (notaglost_test.go).
	{name: "prefix-change", run: prefixChange},
	{name: "recreate", run: recreate},
	{name: "direction-change", run: directionChange},
	{name: "move-between-syncs", run: moveBetweenSyncs},
	{name: "legacy-base", run: legacyBase},
	{name: "mass-deletion", run: massDeletion},
	{name: "suspend", run: suspend},
	{name: "retain", run: retain},
	{name: "platform-tags", run: platformTags,
		differs: "the platform's keys: aks-managed-* on Azure; karpenter.sh/*, eks:* and the like on AWS"},
	// Deletions only by intent (intent_test.go).
	{name: "node-pool-rewrite", run: nodePoolRewrite},
	{name: "restore-fight", run: restoreFight},
	{name: "restore-fight-across-leaders", run: restoreFightAcrossLeaders},
	{name: "label-tidy-up", run: labelTidyUp},
	{name: "spread-deletions", run: spreadDeletions},
	{name: "spread-across-leaders", run: spreadAcrossLeaders},
	{name: "cloud-removal-cascade", run: cloudRemovalCascade},
	{name: "pool-vote", run: poolVote},
	{name: "target-change", run: targetChange,
		differs: "on Azure the Nodes' own VMs lack the group's copied tag (Uniform instances fall back to the scale set, " +
			"Flexible VMs keep their own tags); on AWS the provider copied it to the instances"},
	{name: "suspended-deletions", run: suspendedDeletions},
}

// TestCrossCloud runs every behaviour on Azure (armsim) and AWS (moto):
// one control plane and controller per cloud, one NodeTagSync per
// behaviour selecting its own Nodes, the behaviours in parallel.
func TestCrossCloud(t *testing.T) {
	for _, cc := range crossClouds {
		t.Run(string(cc.provider), func(t *testing.T) {
			h, c := cc.start(t)
			for _, b := range behaviours {
				t.Run(b.name, func(t *testing.T) {
					t.Parallel()
					if b.differs != "" {
						t.Logf("differs by cloud: %s", b.differs)
					}
					b.run(&onCloud{harness: h.forTest(t), cloud: c, provider: cc.provider, name: b.name})
				})
			}
		})
	}
}

// forTest is the harness as seen by a subtest: same cloud, controller and
// API server, failures reported to t.
func (h *harness) forTest(t *testing.T) *harness {
	return &harness{t: t, ctx: h.ctx, kube: h.kube, c: h.c, cloud: h.cloud, env: h.env, stop: h.stop, opts: h.opts,
		hook: h.hook, gates: h.gates, rec: h.rec, emitted: h.emitted, audit: h.audit, provider: h.provider}
}

// mergeDeletions: the three-way merge over a group's two nodes: a tag
// deleted in the cloud (where it came from) removes the labels; a label
// added on one node reaches the group and the other node, and removed
// from both nodes (where it came from) leaves the group.
func mergeDeletions(o *onCloud) {
	id, pids := o.cloud.group(o.harness, o.name, 2, map[string]string{"env": "prod", "gone": "x"})
	nodes := o.nodes(pids)
	o.sync(nil)
	o.waitLabels(nodes, map[string]string{"env": "prod", "gone": "x"})

	o.cloud.edit(o.harness, id, nil, "gone")
	o.syncNow(o.name)
	o.waitLabels(nodes, map[string]string{"gone": absent})

	setLabel(o.harness, nodes[0], o.label("team"), "blue")
	o.waitTag(id, "team", "blue")
	o.waitLabel(nodes[1], o.label("team"), "blue")

	removeLabel(o.harness, nodes[0], o.label("team"))
	removeLabel(o.harness, nodes[1], o.label("team"))
	o.waitTag(id, "team", absent)
	if got := o.cloud.tags(o.harness, id)["env"]; got != "prod" {
		o.t.Fatalf("env=%q, want prod", got)
	}
}

// conflictCase: from the agreed base env=prod, the cloud sets env=cloud and
// the node env=node; the policy decides, and a conflict is reported only
// under Ignore. Tags added on either side cross over.
func conflictCase(policy v1alpha1.ConflictPolicy, label, tag string, conflict bool) func(o *onCloud) {
	return func(o *onCloud) {
		id, pid := o.cloud.solo(o.harness, o.name, map[string]string{"env": "cloud", "fromcloud": "c"})
		node := o.node(0, pid, map[string]string{"env": "node", "fromnode": "n"}, map[string]string{"env": "prod"})
		o.sync(func(s *v1alpha1.NodeTagSyncSpec) { s.ConflictPolicy = policy })
		o.waitLabel(node, o.label("fromcloud"), "c")
		o.waitTag(id, "fromnode", "n")
		o.waitLabel(node, o.label("env"), label)
		o.waitTag(id, "env", tag)
		nts := o.syncAndWait(o.name)
		if got := nts.Status.ConflictCount > 0; got != conflict {
			o.t.Fatalf("conflict reported = %v, want %v: %+v", got, conflict, nts.Status)
		}
	}
}

// aggregate: a group's nodes proposing different values (labelled so
// before the NodeTagSync exists, so no pass sees one without the other)
// are a conflict and nothing is written; once they agree, the value is
// written.
func aggregate(o *onCloud) {
	id, pids := o.cloud.group(o.harness, o.name, 2, map[string]string{"env": "prod"})
	base := map[string]string{"env": "prod"}
	nodes := []string{
		o.node(0, pids[0], map[string]string{"env": "prod", "team": "a"}, base),
		o.node(1, pids[1], map[string]string{"env": "prod", "team": "b"}, base),
	}
	o.sync(nil)
	o.waitStatus(o.name, "a conflict on team", func(nts *v1alpha1.NodeTagSync) string {
		if len(nts.Status.Conflicts) != 1 || nts.Status.Conflicts[0].Tag != "team" {
			return fmt.Sprintf("conflicts %+v", nts.Status.Conflicts)
		}
		return ""
	})
	if got, ok := o.cloud.tags(o.harness, id)["team"]; ok {
		o.t.Fatalf("the group got team=%q although its nodes disagree", got)
	}
	setLabel(o.harness, nodes[1], o.label("team"), "a")
	o.waitTag(id, "team", "a")
}

// wipe: a wholesale rewrite of a group's tags deletes no label, is
// reported, and is repaired from the labels; the new tag reaches the nodes.
func wipe(o *onCloud) {
	want := map[string]string{"env": "prod", "team": "blue"}
	id, pids := o.cloud.group(o.harness, o.name, 2, want)
	nodes := o.nodes(pids)
	o.sync(nil)
	o.waitLabels(nodes, want)
	o.passDone(o.name, 2)

	o.cloud.edit(o.harness, id, map[string]string{"managed-pool": "pool"}, "env", "team")
	o.syncNow(o.name)
	for k, v := range want {
		o.waitTag(id, k, v)
	}
	o.waitEvent("TagsWiped", o.name)
	o.waitLabels(nodes, map[string]string{"env": "prod", "team": "blue", "managed-pool": "pool"})
}

// taints: syncTaints exports a node's taint as a tag, one way, and removes
// it with the taint; other tags stay.
func taints(o *onCloud) {
	id, pid := o.cloud.solo(o.harness, o.name, map[string]string{"env": "prod"})
	node := o.node(0, pid, nil, nil, build.NoSchedule("example.com/gpu", "true"))
	o.sync(func(s *v1alpha1.NodeTagSyncSpec) { s.SyncTaints = true })
	o.waitTag(id, "taint:example.com:gpu", "true:NoSchedule")
	o.waitLabel(node, o.label("env"), "prod")
	setTaints(o.harness, node, `[]`)
	o.waitTag(id, "taint:example.com:gpu", absent)
	if got := o.cloud.tags(o.harness, id); got["env"] != "prod" {
		o.t.Fatalf("removing a taint touched other tags: %v", got)
	}
}

// pendingAndUnmanaged: a synced node loses the pending taint once labelled
// (keeping its other taints); a node the provider cannot sync is counted
// unmanaged and keeps it, with a NodePending event.
func pendingAndUnmanaged(o *onCloud) {
	_, pid := o.cloud.solo(o.harness, o.name, map[string]string{"env": "prod"})
	pending := build.NoSchedule(v1alpha1.NodeTagsPendingTaintKey, "true")
	other := build.NoSchedule("dedicated", "gpu")
	synced := o.node(0, pid, nil, nil, pending, other)
	upid, labels := o.cloud.unmanaged()
	unmanaged := o.node(1, upid, nil, nil, pending)
	for k, v := range labels {
		setLabel(o.harness, unmanaged, k, v)
	}
	o.sync(nil)
	o.eventually("the pending taint gone from "+synced, func() string {
		n := o.getNode(synced)
		switch {
		case hasTaint(n, v1alpha1.NodeTagsPendingTaintKey):
			return "still tainted"
		case n.Labels[o.label("env")] != "prod":
			return "the taint went before the labels came"
		case !hasTaint(n, "dedicated"):
			return "another taint was removed too"
		}
		return ""
	})
	o.waitEvent("NodePending", unmanaged)
	nts := o.syncAndWait(o.name)
	if nts.Status.SyncedNodes != 1 || nts.Status.UnmanagedNodes != 1 {
		o.t.Fatalf("status %+v, want 1 synced and 1 unmanaged", nts.Status)
	}
	if !hasTaint(o.getNode(unmanaged), v1alpha1.NodeTagsPendingTaintKey) {
		o.t.Fatalf("%s lost the pending taint although tagsync cannot sync it", unmanaged)
	}
}

// targetInstance: under target Instance, a label added on one node of a
// group goes to its scale set where the cloud has no per-instance tags
// (fallsBack: Azure's Uniform instances), else to its own instance only.
func targetInstance(fallsBack map[v1alpha1.Provider]bool) func(o *onCloud) {
	return func(o *onCloud) {
		id, pids := o.cloud.group(o.harness, o.name, 2, map[string]string{"env": "prod"})
		nodes := o.nodes(pids)
		o.sync(func(s *v1alpha1.NodeTagSyncSpec) { s.Target = v1alpha1.TargetInstance })
		o.waitLabels(nodes, map[string]string{"env": "prod"})
		setLabel(o.harness, nodes[0], o.label("team"), "blue")
		if fallsBack[o.provider] {
			o.waitTag(id, "team", "blue")
			o.waitLabel(nodes[1], o.label("team"), "blue")
			o.waitEvent("TargetFallback", nodes[0])
			return
		}
		o.waitTag(o.cloud.own(pids[0]), "team", "blue")
		o.syncAndWait(o.name)
		if got := o.cloud.tags(o.harness, id); !maps.Equal(got, map[string]string{"env": "prod"}) {
			o.t.Fatalf("the group's tags became %v; under Instance only the node's own instance changes", got)
		}
		if got, ok := o.labels(nodes[1])[o.label("team")]; ok {
			o.t.Fatalf("%s got team=%q from another node's instance", nodes[1], got)
		}
	}
}

// TestIdenticalInstanceWritesCoalesce: on AWS under target Instance, 20
// standalone instances that need the identical patch (their nodes' label
// and taint, exported once the NodeTagSync turns TwoWay with syncTaints)
// are tagged with one CreateTags, and the audit still has a pending and a
// result record per instance.
func TestIdenticalInstanceWritesCoalesce(t *testing.T) {
	const n = 20
	h, c, provider := newCountedMotoHarness(t, nil)
	o := &onCloud{harness: h, cloud: c, provider: v1alpha1.ProviderAWS, name: "coalesce"}
	taint := build.NoSchedule("example.com/gpu", "true")
	instances := awstest.RunInstances(t, c.m, n, map[string]string{"env": "prod"})
	nodes := make([]string, n)
	for i, id := range instances {
		nodes[i] = o.node(i, seed.ProviderID(testenv.MotoRegion, id), map[string]string{"team": "blue"}, nil, taint)
	}
	o.sync(func(s *v1alpha1.NodeTagSyncSpec) {
		s.Target, s.Direction = v1alpha1.TargetInstance, v1alpha1.DirectionCloudToNode
	})
	o.waitLabels(nodes, map[string]string{"env": "prod"})
	o.passDone(o.name, n)
	before := provider().Calls()

	// One pass (the new generation's) sees every node and proposes the
	// same tags for each instance.
	exportNodes(o)
	const tag = "taint:example.com:gpu"
	for _, id := range instances {
		o.waitTag(instanceARN(id), tag, "true:NoSchedule")
		o.waitTag(instanceARN(id), "team", "blue")
	}
	after := provider().Calls()
	t.Logf("calls before the change %v, after %v", before, after)
	if got := after["ec2:CreateTags"] - before["ec2:CreateTags"]; got != 1 {
		t.Errorf("%d CreateTags calls for %d instances with the identical patch, want 1 (calls before %v, after %v)", got, n, before, after)
	}
	if got := after["ec2:DeleteTags"] - before["ec2:DeleteTags"]; got != 0 {
		t.Errorf("%d DeleteTags calls, want none", got)
	}

	records := map[string][]string{}
	for _, r := range h.auditRecords() {
		if _, ok := r.Set[tag]; ok && r.Object.Name == o.name {
			records[r.Resource] = append(records[r.Resource], r.Result)
		}
	}
	for _, id := range instances {
		got := records[instanceARN(id)]
		if len(got) != 2 || got[0] != "pending" || got[1] != "ok" {
			t.Errorf("audit records of %s = %q, want pending then ok", id, got)
		}
	}
	if len(records) != n {
		t.Errorf("audit names %d resources, want %d", len(records), n)
	}
}

// exportNodes turns the case's NodeTagSync TwoWay with syncTaints.
func exportNodes(o *onCloud) {
	o.t.Helper()
	o.eventually("TwoWay with syncTaints", func() string {
		var nts v1alpha1.NodeTagSync
		if err := o.c.Get(o.ctx, clientKey(o.name), &nts); err != nil {
			return err.Error()
		}
		nts.Spec.Direction, nts.Spec.SyncTaints = v1alpha1.DirectionTwoWay, true
		if err := o.c.Update(o.ctx, &nts); err != nil {
			return err.Error() // a conflict with the status: read again
		}
		return ""
	})
}

// platformKeysOf are, per cloud, keys its platform owns on a node's
// resource: opted is the key the behaviour opts in, fresh one it never
// does, unseen one that is on no resource.
var platformKeysOf = map[v1alpha1.Provider]struct{ opted, fresh, unseen string }{
	v1alpha1.ProviderAzure: {"aks-managed-poolName", "aks-managed-orchestrator", "aks-managed-createOperationID"},
	v1alpha1.ProviderAWS:   {"karpenter.sh/nodepool", "eks:cluster-name", "karpenter.sh/nodeclaim"},
}

// platformTags: tags the platform owns are not the sync's: the resource's
// become no label (its other tags do), a label a user puts under the prefix
// for one is not written to the cloud, and removing such a label deletes
// nothing. includePlatformTags opts a key in: it then syncs both ways; opted
// out again, removing its label still deletes nothing.
func platformTags(o *onCloud) {
	keys := platformKeysOf[o.provider]
	codec := tags.Codec{Prefix: o.provider.DefaultLabelPrefix()}
	label := func(name string) string {
		k, err := codec.LabelKey(name)
		if err != nil {
			o.t.Fatal(err)
		}
		return k
	}
	want := map[string]string{keys.opted: "default", keys.fresh: "prod"}
	id, pid := o.cloud.solo(o.harness, o.name, map[string]string{"env": "prod", keys.opted: "default", keys.fresh: "prod"})
	node := o.node(0, pid, nil, nil)
	o.sync(nil)
	o.waitLabel(node, o.label("env"), "prod")
	noLabels := func(names ...string) {
		o.t.Helper()
		got := o.labels(node)
		for _, n := range names {
			if v, ok := got[label(n)]; ok {
				o.t.Fatalf("platform tag %s became label %s=%q", n, label(n), v)
			}
		}
	}
	cloudKeeps := func(want map[string]string, gone ...string) {
		o.t.Helper()
		got := o.cloud.tags(o.harness, id)
		for k, v := range want {
			if got[k] != v {
				o.t.Fatalf("platform tag %s is %q, want %q: the sync wrote or deleted it (tags %v)", k, got[k], v, got)
			}
		}
		for _, k := range gone {
			if v, ok := got[k]; ok {
				o.t.Fatalf("platform tag %s=%q was written from a label (tags %v)", k, v, got)
			}
		}
	}
	noLabels(keys.opted, keys.fresh)

	// A user's labels for platform keys go nowhere; the label written after
	// them syncs, so the pass that wrote it saw them.
	setLabel(o.harness, node, label(keys.opted), "user")
	setLabel(o.harness, node, label(keys.unseen), "user")
	setLabel(o.harness, node, o.label("team"), "blue")
	o.waitTag(id, "team", "blue")
	cloudKeeps(want, keys.unseen)
	removeLabel(o.harness, node, label(keys.opted))
	removeLabel(o.harness, node, label(keys.unseen))
	setLabel(o.harness, node, o.label("team"), "green")
	o.waitTag(id, "team", "green")
	cloudKeeps(want, keys.unseen)

	// Opted in, the key syncs both ways; the others stay out.
	o.updateSpec(func(s *v1alpha1.NodeTagSyncSpec) {
		s.IncludePlatformTags = []v1alpha1.TagPattern{v1alpha1.TagPattern(keys.opted)}
	})
	o.waitLabel(node, label(keys.opted), "default")
	setLabel(o.harness, node, label(keys.opted), "changed")
	o.waitTag(id, keys.opted, "changed")
	noLabels(keys.fresh)
	want[keys.opted] = "changed"

	// Opted out again (its label and base were the sync's), removing the
	// label deletes nothing.
	o.updateSpec(func(s *v1alpha1.NodeTagSyncSpec) { s.IncludePlatformTags = nil })
	o.passDone(o.name, 1)
	removeLabel(o.harness, node, label(keys.opted))
	setLabel(o.harness, node, o.label("team"), "red")
	o.waitTag(id, "team", "red")
	cloudKeeps(want)
}

// updateSpec changes the case's NodeTagSync's spec (read again after a
// conflict with a status write).
func (o *onCloud) updateSpec(mutate func(*v1alpha1.NodeTagSyncSpec)) {
	o.t.Helper()
	o.eventually("the spec of "+o.name+" updated", func() string {
		var nts v1alpha1.NodeTagSync
		if err := o.c.Get(o.ctx, clientKey(o.name), &nts); err != nil {
			return err.Error()
		}
		mutate(&nts.Spec)
		if err := o.c.Update(o.ctx, &nts); err != nil {
			return err.Error()
		}
		return ""
	})
}
