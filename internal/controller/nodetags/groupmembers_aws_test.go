package nodetags_test

import (
	"fmt"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestAWSGroupInstancesStayInSync: under target ScaleSet on AWS the Auto
// Scaling group carries the synced tags and its instances follow it: a
// group tag an instance lost or holds with another value is put back by the
// next pass (both instances with one CreateTags), a group tag whose PropagateAtLaunch is false keeps the flag when
// tagsync changes its value and is not copied to the instances, and a
// pass with everything in line writes nothing, and an instance that cannot
// take the group's tag (at the tag limit) is reported, not silently left
// out.
func TestAWSGroupInstancesStayInSync(t *testing.T) {
	h, c, provider := newCountedMotoHarness(t, nil)
	o := &onCloud{harness: h, cloud: c, provider: v1alpha1.ProviderAWS, name: "members"}
	groupARN, pids := c.group(h, o.name, 3, map[string]string{"env": "prod"})
	if _, err := sdkClient(c).CreateOrUpdateTags(h.ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: []astypes.Tag{{
		ResourceId: sdkaws.String(o.name), ResourceType: sdkaws.String("auto-scaling-group"),
		Key: sdkaws.String("owner"), Value: sdkaws.String("a"), PropagateAtLaunch: sdkaws.Bool(false),
	}}}); err != nil {
		t.Fatal(err)
	}
	nodes := o.nodes(pids)
	inst := make([]string, len(pids))
	for i, pid := range pids {
		inst[i] = c.own(pid)
	}
	o.sync(nil)
	o.waitLabels(nodes, map[string]string{"env": "prod", "owner": "a"})

	// Drift: one instance lost env, one holds another value.
	c.edit(h, inst[0], nil, "env")
	c.edit(h, inst[1], map[string]string{"env": "dev"})
	before := provider().Calls()
	o.syncAndWait(o.name)
	after := provider().Calls()
	for _, id := range inst[:2] {
		if got := c.tags(h, id); got["env"] != "prod" {
			t.Errorf("instance %s tags %v, want env=prod repaired from its group", id, got)
		}
	}
	if got := after["ec2:CreateTags"] - before["ec2:CreateTags"]; got != 1 {
		t.Errorf("%d CreateTags for two instances with the identical repair, want 1 (calls before %v, after %v)", got, before, after)
	}
	for i, id := range inst {
		if _, ok := c.tags(h, id)["owner"]; ok {
			t.Errorf("instance %d got owner, a group tag that does not propagate at launch", i)
		}
	}

	// tagsync changes owner's value on the group: the flag stays false.
	setLabel(h, nodes[0], o.label("owner"), "b")
	o.waitTag(groupARN, "owner", "b")
	if tag := seed.GroupTags(t, c.m.Config, testenv.MotoRegion, o.name)["owner"]; tag.PropagateAtLaunch {
		t.Errorf("owner = %+v after tagsync changed its value, want PropagateAtLaunch still false", tag)
	}

	// In line: a fresh pass reads and writes nothing.
	o.syncAndWait(o.name)
	before = provider().Calls()
	o.syncAndWait(o.name)
	after = provider().Calls()
	for op, n := range after {
		if strings.Contains(op, "Tags") && n != before[op] {
			t.Errorf("a pass with every instance in line made %d %s calls (before %v, after %v)", n-before[op], op, before, after)
		}
	}

	// An instance with no room for the group's tag: the pass says so.
	c.edit(h, inst[2], nil, "env")
	full := map[string]string{}
	for i := range motoTagRoom(t, c, inst[2]) {
		full[fmt.Sprintf("x%02d", i)] = "v"
	}
	c.edit(h, inst[2], full)
	nts := o.syncAndWait(o.name)
	degraded := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue || !strings.Contains(degraded.Message, inst[2][strings.LastIndex(inst[2], "/")+1:]) {
		t.Errorf("Degraded = %+v, want it to name the instance %s that cannot take env", degraded, inst[2])
	}
	o.waitEvent("CloudWriteFailed", o.name)
}

// motoTagRoom is how many more tags moto lets the instance id take: moto
// counts AWS's own aws: tags toward the 50 (AWS does not).
func motoTagRoom(t *testing.T, c motoCloud, id string) int {
	return 50 - len(seed.InstanceTags(t, c.m.Config, testenv.MotoRegion, id[strings.LastIndex(id, "/")+1:]))
}

// sdkClient is an Auto Scaling client of the moto behind c.
func sdkClient(c motoCloud) *autoscaling.Client {
	cfg := c.m.Config.Copy()
	cfg.Region = testenv.MotoRegion
	return autoscaling.NewFromConfig(cfg)
}
