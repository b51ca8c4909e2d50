package nodetags_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/cloudchangetest"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
)

// newMotoEventsHarness is newEventsHarness on moto: the provider keeps its
// reads for an hour, so the AWS calls a test counts are the ones its
// changes cause.
func newMotoEventsHarness(t *testing.T) (*harness, motoCloud, *aws.Provider, *cloudchange.Hub) {
	hub, src := newHub(t, 0)
	var p *aws.Provider
	h, c := newMotoHarnessWith(t, func(h *harness, m *testenv.Moto) {
		p = awstest.Provider(t, m, aws.WithCacheTTL(time.Hour))
		h.provider = func() aProvider { return p }
		h.eventOpts = operator.EventsOptions{Hub: hub, Sources: []operator.EventSource{operator.BuiltSource(src)}}
	})
	return h, c, p, hub
}

// awsCalls are the provider's calls since it had made before.
func awsCalls(p *aws.Provider, before map[string]int) map[string]int {
	out := map[string]int{}
	for op, n := range p.Calls() {
		if n > before[op] {
			out[op] = n - before[op]
		}
	}
	return out
}

// awsWrite is the change EventBridge reports for a tag change of the
// resource arn: carrying its tags when tags is not nil.
func awsWrite(arn, eventID string, tags map[string]string) cloudchange.Change {
	return cloudchangetest.Write("aws", arn, eventID, tags)
}

// TestAWSChangesReadOnlyWhatTheirEventsLack: on AWS a change of an EC2
// instance that carries its tags costs its targeted pass no call at all,
// one without tags a single DescribeInstances, a change of an Auto Scaling
// group a single DescribeAutoScalingGroups (and, as its new tag reaches its
// instances, one DescribeInstances and one CreateTags); a burst of 100 runs one pass;
// duplicates, unrelated resources and tagsync's own writes write nothing.
func TestAWSChangesReadOnlyWhatTheirEventsLack(t *testing.T) {
	h, c, p, hub := newMotoEventsHarness(t)
	const name = "evt-aws"
	label := func(tag string) string { return v1alpha1.ProviderAWS.DefaultLabelPrefix() + "/" + tag }
	groupARN, pids := c.group(h, name, 2, map[string]string{"env": "prod"})
	soloARN, soloPID := c.solo(h, name, map[string]string{"env": "dev"})
	nodes := []string{name + "-0", name + "-1", name + "-solo"}
	for i, pid := range append(pids, soloPID) {
		h.node(nodes[i], pid, map[string]string{"pool": name}, nil)
	}
	h.sync(name, func(s *v1alpha1.NodeTagSyncSpec) {
		s.Provider = v1alpha1.ProviderAWS
		s.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}}
	})
	h.waitLabel(nodes[0], label("env"), "prod")
	h.waitLabel(nodes[2], label("env"), "dev")
	h.passDone(name, 3)

	// publish delivers changes and returns the AWS calls and targeted
	// passes they caused.
	publish := func(changes ...cloudchange.Change) (map[string]int, float64) {
		t.Helper()
		before := p.Calls()
		_, targeted := h.passes(name)
		if err := cloudchangetest.Publish(t, hub, waitFor, changes...); err != nil {
			t.Fatal(err)
		}
		_, after := h.passes(name)
		return awsCalls(p, before), after - targeted
	}
	// A group's new tag reaches its two instances too: one CreateTags,
	// after at most one read of both (none while their cached read is
	// younger than aws.WriteReadAge).
	groupChange := map[string]int{"autoscaling:DescribeAutoScalingGroups": 1, "ec2:CreateTags": 1}
	for i, step := range []struct {
		what  string
		arn   string
		carry bool
		burst int
		node  string
		calls map[string]int
	}{
		{"an instance's change carrying its tags", soloARN, true, 1, nodes[2], map[string]int{}},
		{"an instance's change without tags", soloARN, false, 1, nodes[2], map[string]int{"ec2:DescribeInstances": 1}},
		{"a group's change", groupARN, false, 1, nodes[1], groupChange},
		{"a burst of 100 changes carrying the tags", soloARN, true, 100, nodes[2], map[string]int{}},
		{"a burst of 100 changes of a group", groupARN, false, 100, nodes[0], groupChange},
	} {
		h.settled(name)
		cost := fmt.Sprint(i)
		c.edit(h, step.arn, map[string]string{"cost": cost})
		var carried map[string]string
		if step.carry {
			carried = c.tags(h, step.arn)
		}
		burst := make([]cloudchange.Change, step.burst)
		for j := range burst {
			burst[j] = awsWrite(step.arn, fmt.Sprintf("%d-%d", i, j), carried)
		}
		calls, passes := publish(burst...)
		if step.arn == groupARN && calls["ec2:DescribeInstances"] == 1 {
			delete(calls, "ec2:DescribeInstances")
		}
		if got := h.labels(step.node)[label("cost")]; got != cost {
			t.Errorf("%s: label cost=%q after its pass, want %q", step.what, got, cost)
		}
		if passes != 1 || !maps.Equal(calls, step.calls) {
			t.Errorf("%s: %v targeted passes, AWS calls %v; want 1 pass, calls %v", step.what, passes, calls, step.calls)
		}
		// The full pass the Node writes cause reads the provider's cache:
		// it holds what the targeted pass synced.
		h.settled(name)
		if got := h.labels(step.node)[label("cost")]; got != cost {
			t.Errorf("%s: label cost=%q after the next full pass, want %q", step.what, got, cost)
		}
	}

	// tagsync's own write: a label goes to the instance, and the change
	// EventBridge then reports (carrying the tags) costs no call.
	setLabel(h, nodes[2], label("team"), "blue")
	h.waitValue("tag on "+soloARN, "team", "blue", func() map[string]string { return c.tags(h, soloARN) })
	h.settled(name)
	versions := h.nodeVersions(nodes...)
	own := awsWrite(soloARN, "own-write", c.tags(h, soloARN))
	unrelated := awsWrite(instanceARN("i-0123456789abcdef0"), "unrelated", map[string]string{"cost": "9"})
	for _, step := range []struct {
		what   string
		change cloudchange.Change
		passes float64
	}{{"tagsync's own write", own, 1}, {"a duplicate", own, 0}, {"a change of an unrelated instance", unrelated, 0}} {
		if calls, passes := publish(step.change); passes != step.passes || len(calls) != 0 {
			t.Errorf("%s: %v targeted passes, AWS calls %v; want %v passes, no call", step.what, passes, calls, step.passes)
		}
	}
	if got := h.nodeVersions(nodes...); fmt.Sprint(got) != fmt.Sprint(versions) {
		t.Errorf("own, duplicate and unrelated changes wrote Nodes: versions %v, were %v", got, versions)
	}
}
