package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestTagChangeOnSQSReachesTheLabels runs `tagsync run` with an SQS queue
// on moto as its AWS event source. The NodeTagSync over two EC2 instances
// polls once an hour, so within the test only the event can explain a
// label change. A console tag edit of one instance and the "Tag Change on
// Resource" event EventBridge would send for it to the queue bring the new
// value to that instance's Node through a targeted pass, without a polling
// pass; the message is deleted once the pass is done.
func TestTagChangeOnSQSReachesTheLabels(t *testing.T) {
	cleanupSyncObjects(t)
	moto := testenv.StartMoto(t)
	ids := awstest.RunInstances(t, moto, 2, map[string]string{"env": "prod"})
	ctx := context.Background()
	for i, id := range ids {
		must(t, kube.Client.Create(ctx, build.Node(fmt.Sprintf("sqs-%d", i), build.ProviderID(seed.ProviderID(testenv.MotoRegion, id)))))
	}
	queue := motoQueue(t, moto, "tagsync-events")
	must(t, kube.Client.Create(ctx, build.NodeTagSync("sqs", build.Provider(v1alpha1.ProviderAWS), build.ResyncInterval(time.Hour))))

	env := []string{"AWS_ACCESS_KEY_ID=" + testenv.MotoAccessKeyID, "AWS_SECRET_ACCESS_KEY=" + testenv.MotoSecretAccessKey, "AWS_EC2_METADATA_DISABLED=true"}
	p := startTagsyncEnv(t, "tagsync (sqs)", env, "--kubeconfig="+writeKubeconfig(t, ""), "--controllers=nodetags", "--leader-elect=false",
		"--zap-log-level=debug", "--aws-region="+testenv.MotoRegion, "--aws-endpoint="+moto.URL, "--events-sqs-queue-url="+queue)
	waitNodeTagSync(ctx, t, "sqs", "the initial sync, events on", func(st v1alpha1.NodeTagSyncStatus) bool { return readyWithEvents(st, 2) })
	polls := p.metric(t, "tagsync_nodetags_passes_total", `fresh="true"`)

	seed.SetInstanceTags(t, moto.Config, testenv.MotoRegion, ids[0], map[string]string{"env": "staging"})
	start := time.Now()
	sendTagChange(t, moto, queue, ids[0], map[string]string{"env": "staging"})
	eventually(t, "the console edit on Node sqs-0", func() string {
		var n corev1.Node
		must(t, kube.Client.Get(ctx, client.ObjectKey{Name: "sqs-0"}, &n))
		if v := n.Labels[v1alpha1.AWSLabelPrefix+"/env"]; v != "staging" {
			return fmt.Sprintf("label %q", v)
		}
		return ""
	})
	t.Logf("console edit → SQS → label in %s", time.Since(start).Round(time.Millisecond))
	eventually(t, "the message deleted", func() string {
		if c := queueCounts(t, moto, queue); c != "0/0" {
			return "visible/in flight " + c
		}
		return ""
	})
	if n := p.metric(t, "tagsync_nodetags_targeted_passes_total", `result="ok"`); n < 1 {
		t.Errorf("%v targeted passes, want at least 1", n)
	}
	if n := p.metric(t, "tagsync_nodetags_passes_total", `fresh="true"`); n != polls {
		t.Errorf("%v full passes read the cloud after the event, want none (the NodeTagSync polls hourly)", n-polls)
	}
	p.stop(t)
}

// motoQueue creates an SQS queue on moto, and the EventBridge rule that
// sends tag changes to it as docs/events.md sets it up (the source checks
// that one does), and returns the queue's URL.
func motoQueue(t *testing.T, moto *testenv.Moto, name string) string {
	t.Helper()
	ctx := context.Background()
	c := awssqs.NewFromConfig(moto.Config)
	out, err := c.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: &name})
	must(t, err)
	attrs, err := c.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	must(t, err)
	arn := attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	eb := eventbridge.NewFromConfig(moto.Config)
	rule := name + "-tag-changes"
	_, err = eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: &rule,
		EventPattern: sdkaws.String(`{"source":["aws.tag"],"detail-type":["Tag Change on Resource"]}`)})
	must(t, err)
	_, err = eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: &rule, Targets: []ebtypes.Target{{Id: sdkaws.String("queue"), Arn: &arn}}})
	must(t, err)
	return *out.QueueUrl
}

// sendTagChange sends the "Tag Change on Resource" event EventBridge sends
// for an EC2 instance whose tags are now tags.
func sendTagChange(t *testing.T, moto *testenv.Moto, queue, instance string, tags map[string]string) {
	t.Helper()
	arn := fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", testenv.MotoRegion, testenv.MotoAccountID, instance)
	keys, values := "", ""
	for k, v := range tags {
		keys += fmt.Sprintf("%q,", k)
		values += fmt.Sprintf("%q:%q,", k, v)
	}
	body := fmt.Sprintf(`{"version": "0", "id": "e2e-%d", "detail-type": "Tag Change on Resource", "source": "aws.tag",
  "account": %q, "time": %q, "region": %q, "resources": [%q],
  "detail": {"changed-tag-keys": [%s], "service": "ec2", "resource-type": "instance", "version": 2, "tags": {%s}}}`,
		time.Now().UnixNano(), testenv.MotoAccountID, time.Now().UTC().Format(time.RFC3339), testenv.MotoRegion, arn,
		keys[:len(keys)-1], values[:len(values)-1])
	_, err := awssqs.NewFromConfig(moto.Config).SendMessage(context.Background(), &awssqs.SendMessageInput{QueueUrl: &queue, MessageBody: &body})
	must(t, err)
}

// queueCounts returns "visible/in flight" of a queue.
func queueCounts(t *testing.T, moto *testenv.Moto, queue string) string {
	t.Helper()
	out, err := awssqs.NewFromConfig(moto.Config).GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{QueueUrl: &queue,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	must(t, err)
	return out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)] + "/" +
		out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]
}

// TestAPersonsRemovalOnAWSReachesTheLabels runs `tagsync run` with an SQS
// queue whose rule also sends the CloudTrail events of tag writes, and
// --events-sqs-attribution-wait. A tag that came from a Node's label is
// removed from its instance twice: by a role (Terraform, a controller),
// which CloudTrail names: the tag is put back and the label stays; then by
// a person in the console: the label follows. Each removal's "Tag Change
// on Resource" event is sent before its CloudTrail event, the order that
// needs the wait.
func TestAPersonsRemovalOnAWSReachesTheLabels(t *testing.T) {
	cleanupSyncObjects(t)
	moto := testenv.StartMoto(t)
	ids := awstest.RunInstances(t, moto, 1, map[string]string{"env": "prod"})
	ctx := context.Background()
	label := v1alpha1.AWSLabelPrefix + "/team"
	must(t, kube.Client.Create(ctx, build.Node("who-0", build.ProviderID(seed.ProviderID(testenv.MotoRegion, ids[0])), build.Labels(map[string]string{label: "blue"}))))
	queue := motoQueue(t, moto, "tagsync-who")
	must(t, kube.Client.Create(ctx, build.NodeTagSync("who", build.Provider(v1alpha1.ProviderAWS), build.ResyncInterval(time.Hour))))
	env := []string{"AWS_ACCESS_KEY_ID=" + testenv.MotoAccessKeyID, "AWS_SECRET_ACCESS_KEY=" + testenv.MotoSecretAccessKey, "AWS_EC2_METADATA_DISABLED=true"}
	p := startTagsyncEnv(t, "tagsync (who)", env, "--kubeconfig="+writeKubeconfig(t, ""), "--controllers=nodetags", "--leader-elect=false",
		"--aws-region="+testenv.MotoRegion, "--aws-endpoint="+moto.URL, "--events-sqs-queue-url="+queue, "--events-sqs-attribution-wait=1m")
	waitNodeTagSync(ctx, t, "who", "the initial sync, events on", func(st v1alpha1.NodeTagSyncStatus) bool { return readyWithEvents(st, 1) })
	teamIs := func(want string) func() string {
		return func() string {
			if got := seed.InstanceTags(t, moto.Config, testenv.MotoRegion, ids[0])["team"]; got != want {
				return fmt.Sprintf("team=%q", got)
			}
			return ""
		}
	}
	eventually(t, "team copied up from the label", teamIs("blue"))

	role := `{"type": "AssumedRole", "arn": "arn:aws:sts::` + testenv.MotoAccountID + `:assumed-role/terraform/ci", "principalId": "AROAEXAMPLE:ci"}`
	seed.SetInstanceTags(t, moto.Config, testenv.MotoRegion, ids[0], nil, "team")
	sendRemoval(t, moto, queue, ids[0], "team", map[string]string{"env": "prod"}, role, false, time.Now())
	eventually(t, "the role's removal put back", teamIs("blue"))
	if p.metric(t, "tagsync_events_sqs_removals_total", `writer="other"`) != 1 {
		t.Errorf("the role's removal was not attributed to it")
	}

	person := `{"type": "IAMUser", "arn": "arn:aws:iam::` + testenv.MotoAccountID + `:user/ana", "principalId": "AIDAEXAMPLE"}`
	seed.SetInstanceTags(t, moto.Config, testenv.MotoRegion, ids[0], nil, "team")
	// Dated apart from the role's: a call is matched to the change by time.
	sendRemoval(t, moto, queue, ids[0], "team", map[string]string{"env": "prod"}, person, true, time.Now().Add(30*time.Second))
	eventually(t, "the person's removal on Node who-0", func() string {
		var n corev1.Node
		must(t, kube.Client.Get(ctx, client.ObjectKey{Name: "who-0"}, &n))
		if v, ok := n.Labels[label]; ok {
			return fmt.Sprintf("label %q", v)
		}
		return ""
	})
	if got := seed.InstanceTags(t, moto.Config, testenv.MotoRegion, ids[0]); got["team"] != "" {
		t.Errorf("the person's removal was undone: %v", got)
	}
	p.stop(t)
}

// sendRemoval sends, for the removal of key from an instance whose tags
// are now left, the "Tag Change on Resource" event and then the
// CloudTrail event of the DeleteTags call made by identity (a
// userIdentity element), from the console when console is set, both dated
// at.
func sendRemoval(t *testing.T, moto *testenv.Moto, queue, instance, key string, left map[string]string, identity string, console bool, at time.Time) {
	t.Helper()
	now := at.UTC().Format(time.RFC3339)
	arn := fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", testenv.MotoRegion, testenv.MotoAccountID, instance)
	tags, err := json.Marshal(left)
	must(t, err)
	change := fmt.Sprintf(`{"version": "0", "id": "e2e-change-%d", "detail-type": "Tag Change on Resource", "source": "aws.tag",
  "account": %q, "time": %q, "region": %q, "resources": [%q],
  "detail": {"changed-tag-keys": [%q], "service": "ec2", "resource-type": "instance", "version": 3, "tags": %s}}`,
		time.Now().UnixNano(), testenv.MotoAccountID, now, testenv.MotoRegion, arn, key, tags)
	call := fmt.Sprintf(`{"version": "0", "id": "e2e-call-%d", "detail-type": "AWS API Call via CloudTrail", "source": "aws.ec2",
  "account": %q, "time": %q, "region": %q, "resources": [],
  "detail": {"eventSource": "ec2.amazonaws.com", "eventName": "DeleteTags", "eventTime": %q, "awsRegion": %q,
    "userIdentity": %s, "sessionCredentialFromConsole": "%t",
    "requestParameters": {"resourcesSet": {"items": [{"resourceId": %q}]}, "tagSet": {"items": [{"key": %q}]}}}}`,
		time.Now().UnixNano(), testenv.MotoAccountID, now, testenv.MotoRegion, now, testenv.MotoRegion, identity, console, instance, key)
	c := awssqs.NewFromConfig(moto.Config)
	for _, body := range []string{change, call} {
		_, err := c.SendMessage(context.Background(), &awssqs.SendMessageInput{QueueUrl: &queue, MessageBody: &body})
		must(t, err)
	}
}
