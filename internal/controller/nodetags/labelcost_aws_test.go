package nodetags_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestAWSLabelChangesCostFewCalls: on AWS, NodeToCloud under target
// Instance, with the provider's read cache expired (the test steps the
// provider's clock past the cache's TTL, as when a label changes long after
// the last read), a label changed on one Node costs at most 2 EC2 calls (its
// pass's DescribeInstances and one CreateTags: the write takes the read its
// pass just made), and the same change on 10 Nodes at once at most 3,
// however the controller splits them into passes.
func TestAWSLabelChangesCostFewCalls(t *testing.T) {
	var p *aws.Provider
	var elapsed atomic.Int64 // stepped past the cache's TTL before each change
	start := time.Now()
	clock := func() time.Time { return start.Add(time.Since(start) + time.Duration(elapsed.Load())) }
	h, c := newMotoHarnessWith(t, func(h *harness, m *testenv.Moto) {
		p = awstest.Provider(t, m, aws.WithClock(clock))
		h.provider = func() aProvider { return p }
	})
	o := &onCloud{harness: h, cloud: c, provider: v1alpha1.ProviderAWS, name: "labelcost"}
	const n = 20
	ids := awstest.RunInstances(t, c.m, n, nil)
	nodes := make([]string, n)
	for i, id := range ids {
		nodes[i] = o.node(i, seed.ProviderID(testenv.MotoRegion, id), map[string]string{"team": "blue", "env": "prod"}, nil)
	}
	o.sync(func(s *v1alpha1.NodeTagSyncSpec) {
		s.Direction, s.Target = v1alpha1.DirectionNodeToCloud, v1alpha1.TargetInstance
	})
	for _, id := range ids {
		o.waitTag(instanceARN(id), "team", "blue")
	}
	o.passDone(o.name, n)

	change := func(count int, value string, most int) {
		t.Helper()
		elapsed.Add(int64(aws.DefaultCacheTTL + time.Second)) // the cache's reads age past its TTL
		before := p.Calls()
		for _, node := range nodes[:count] {
			setLabel(h, node, o.label("team"), value)
		}
		for _, id := range ids[:count] {
			o.waitTag(instanceARN(id), "team", value)
		}
		// The tag shows in moto before the provider has counted the call
		// that set it: wait for the count.
		var calls map[string]int
		h.eventually("the provider counting the CreateTags", func() string {
			if calls = awsCalls(p, before); calls["ec2:CreateTags"] == 0 {
				return fmt.Sprintf("calls %v", calls)
			}
			return ""
		})
		total := 0
		for _, k := range calls {
			total += k
		}
		if total > most {
			t.Errorf("team=%s on %d Nodes cost %d EC2 calls %v, want at most %d", value, count, total, calls, most)
		}
		if calls["ec2:CreateTags"] == 0 || strings.Contains(fmt.Sprint(calls), "DeleteTags") {
			t.Errorf("team=%s on %d Nodes: calls %v, want CreateTags and no DeleteTags", value, count, calls)
		}
	}
	change(1, "green", 2)
	change(10, "red", 3)
}

// TestAWSIncludeTagsCompareKeysExactly: on AWS, where tag keys are
// case-sensitive, includeTags [Team, Env] syncs the tag Team and not team,
// and the pattern Env, which matches only the tag env (ignoring case), is
// reported as a SpecWarning and in the Ready message instead of syncing
// nothing silently.
func TestAWSIncludeTagsCompareKeysExactly(t *testing.T) {
	h, c := newMotoHarness(t)
	o := &onCloud{harness: h, cloud: c, provider: v1alpha1.ProviderAWS, name: "keycase"}
	_, pid := c.solo(h, o.name, map[string]string{"Team": "payments", "team": "search", "env": "prod"})
	node := o.node(0, pid, nil, nil)
	o.sync(func(s *v1alpha1.NodeTagSyncSpec) {
		s.Direction, s.IncludeTags = v1alpha1.DirectionCloudToNode, []v1alpha1.TagPattern{"Team", "Env"}
	})
	o.waitLabel(node, o.label("Team"), "payments")
	nts := o.passDone(o.name, 1)
	labels := o.labels(node)
	for _, absent := range []string{"team", "env", "Env"} {
		if v, ok := labels[o.label(absent)]; ok {
			t.Errorf("label %s=%q synced; includeTags [Team, Env] match keys exactly on AWS", o.label(absent), v)
		}
	}
	const want = `includeTags[1] "Env" matches no tag or label of the selected nodes, but matches "env" ignoring case`
	o.eventually("a SpecWarning about includeTags[1]", func() string {
		for _, note := range h.events("SpecWarning", o.name) {
			if strings.Contains(note, want) {
				return ""
			}
		}
		return fmt.Sprintf("events %v", h.events("SpecWarning", o.name))
	})
	if ready := readyMessage(nts); !strings.Contains(ready, want) {
		t.Errorf("Ready message %q, want it to say %q", ready, want)
	}
	if strings.Contains(readyMessage(nts), `"Team"`) {
		t.Errorf("Ready message %q warns about Team, which matches exactly", readyMessage(nts))
	}
}

// readyMessage is the message of the NodeTagSync's Ready condition.
func readyMessage(nts *v1alpha1.NodeTagSync) string {
	if c := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}
