package sqs

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/testenv"
)

// moto is the moto_server of TestSourceOnMoto, which every test of the
// source shares; each makes its own queues.
var moto *testenv.Moto

// TestSourceOnMoto runs the source's tests, in parallel, on one
// moto_server.
func TestSourceOnMoto(t *testing.T) {
	moto = testenv.StartMoto(t)
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"TagChangeIsDeletedOnlyAfterItsPassesCompleted", testTagChangeIsDeletedOnlyAfterItsPassesCompleted},
		{"MessagesDoneBeforeStopAreDeletedAsStartReturns", testMessagesDoneBeforeStopAreDeletedAsStartReturns},
		{"FailedPassLeavesTheMessageToBeReceivedAgain", testFailedPassLeavesTheMessageToBeReceivedAgain},
		{"MessageAFullQueueRefusesIsReceivedAgain", testMessageAFullQueueRefusesIsReceivedAgain},
		{"QueueNoEnabledRuleSendsToIsDown", testQueueNoEnabledRuleSendsToIsDown},
		{"EventsTagsyncDoesNotReadAreDeletedUnpublished", testEventsTagsyncDoesNotReadAreDeletedUnpublished},
		{"PoisonMessageMovesToTheDeadLetterQueue", testPoisonMessageMovesToTheDeadLetterQueue},
		{"MessageReceivedTooOftenIsCountedAsPoisonAndStillPublished", testMessageReceivedTooOftenIsCountedAsPoisonAndStillPublished},
		{"DeletedQueueTakesTheSourceDownUntilItIsBack", testDeletedQueueTakesTheSourceDownUntilItIsBack},
		{"UnreachableSQSTakesTheSourceDown", testUnreachableSQSTakesTheSourceDown},
		{"MessagesInFlightAreBounded", testMessagesInFlightAreBounded},
		{"MessagesDoneTogetherAreDeletedInOneBatch", testMessagesDoneTogetherAreDeletedInOneBatch},
		{"PassLongerThanTheVisibilityTimeoutKeepsItsMessageHidden", testPassLongerThanTheVisibilityTimeoutKeepsItsMessageHidden},
		{"MessageHeldLongerThanMaxHoldIsReceivedAgain", testMessageHeldLongerThanMaxHoldIsReceivedAgain},
		{"MessageReceivedAgainWhileItsPassRunsIsDeletedOnlyWhenAPassSucceeds", testMessageReceivedAgainWhileItsPassRunsIsDeletedOnlyWhenAPassSucceeds},
		{"RemovalWaitsForItsCloudTrailEvent", testRemovalWaitsForItsCloudTrailEvent},
		{"RemovalTakesTheWriterOfAnEarlierCloudTrailEvent", testRemovalTakesTheWriterOfAnEarlierCloudTrailEvent},
		{"RemovalWithoutCloudTrailEventIsPublishedAfterTheWait", testRemovalWithoutCloudTrailEventIsPublishedAfterTheWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t)
		})
	}
}

// waitLimit bounds every wait of these tests (moto on a loaded machine).
const waitLimit = 60 * time.Second

// newQueue creates a queue with attrs (VisibilityTimeout, RedrivePolicy),
// named after the test (and role, if any).
func newQueue(t *testing.T, role string, attrs map[string]string) testQueue {
	t.Helper()
	name := "tagsync-" + path.Base(t.Name())
	if role != "" {
		name += "-" + role
	}
	return createQueue(t, name, attrs)
}

// testQueue is a queue on moto.
type testQueue struct {
	name, url, arn string
}

// createQueue creates the queue name with attrs.
func createQueue(t *testing.T, name string, attrs map[string]string) testQueue {
	t.Helper()
	c := sqs.NewFromConfig(moto.Config)
	out, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	q := testQueue{name: name, url: *out.QueueUrl}
	q.arn = queueAttrs(t, q.url, types.QueueAttributeNameQueueArn)[string(types.QueueAttributeNameQueueArn)]
	return q
}

// queueAttrs reads attributes of a queue.
func queueAttrs(t *testing.T, url string, names ...types.QueueAttributeName) map[string]string {
	t.Helper()
	out, err := sqs.NewFromConfig(moto.Config).GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: names})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes
}

// counts returns "visible=V notVisible=N" of a queue.
func counts(t *testing.T, url string) string {
	t.Helper()
	a := queueAttrs(t, url, types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	return fmt.Sprintf("visible=%s notVisible=%s", a[string(types.QueueAttributeNameApproximateNumberOfMessages)],
		a[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
}

// waitCounts waits until the queue's counts are want.
func waitCounts(t *testing.T, url, want string) {
	t.Helper()
	testenv.Eventually(t, waitLimit, "queue "+want, func() string {
		if got := counts(t, url); got != want {
			return got
		}
		return ""
	})
}

// waitDeleted waits until the source has counted n messages deleted: it
// counts a delete once SQS has answered it, which may be after the queue
// shows the message gone.
func waitDeleted(t *testing.T, s *Source, n float64) {
	t.Helper()
	testenv.Eventually(t, waitLimit, fmt.Sprintf("%v messages deleted", n), func() string {
		if got := testutil.ToFloat64(s.metrics.deleted); got != n {
			return fmt.Sprintf("deleted metric %v", got)
		}
		return ""
	})
}

// send sends bodies to a queue.
func send(t *testing.T, url string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := sqs.NewFromConfig(moto.Config).SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: sdkaws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
}

// delivery is one Publish the sink took.
type delivery struct {
	changes []cloudchange.Change
	done    func(error)
}

// recordingSink records what is published and leaves done to the test.
type recordingSink struct {
	mu          sync.Mutex
	got         []delivery
	outstanding int // published, done not yet called
	most        int // the most outstanding at once
	refusals    int // Publish calls refused as by a full queue
	refuse      bool
}

// Publish records a delivery, or refuses it while refuse is set.
func (s *recordingSink) Publish(changes []cloudchange.Change, done func(error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse {
		s.refusals++
		return cloudchange.ErrQueueFull
	}
	s.outstanding++
	s.most = max(s.most, s.outstanding)
	var once sync.Once
	s.got = append(s.got, delivery{changes: changes, done: func(err error) {
		once.Do(func() {
			s.mu.Lock()
			s.outstanding--
			s.mu.Unlock()
			done(err)
		})
	}})
	return nil
}

// wait waits until n deliveries were published and returns them.
func (s *recordingSink) wait(t *testing.T, n int) []delivery {
	t.Helper()
	var got []delivery
	testenv.Eventually(t, waitLimit, fmt.Sprintf("%d deliveries", n), func() string {
		got = s.deliveries()
		if len(got) < n {
			return fmt.Sprintf("%d deliveries", len(got))
		}
		return ""
	})
	return got
}

// deliveries returns what was published so far.
func (s *recordingSink) deliveries() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.got...)
}

// config is a source's Config on moto for a queue: 1 s receive waits.
func config(url string) Config {
	return Config{QueueURL: url, WaitTime: time.Second, AWS: aws.Config{Region: testenv.MotoRegion, Endpoint: moto.URL,
		AccessKeyID: testenv.MotoAccessKeyID, SecretAccessKey: testenv.MotoSecretAccessKey}}
}

// start builds a source for cfg publishing to sink and runs it until the
// test ends.
func start(t *testing.T, cfg Config, sink cloudchange.Sink, opts ...Option) *Source {
	t.Helper()
	s, _ := startStoppable(t, cfg, sink, opts...)
	return s
}

// startStoppable is start, and returns a stop that ends Start and waits
// for it to return (also called when the test ends).
func startStoppable(t *testing.T, cfg Config, sink cloudchange.Sink, opts ...Option) (*Source, func()) {
	t.Helper()
	opts = append([]Option{WithRegisterer(prometheus.NewRegistry()), WithLogger(testr.New(t)),
		WithBackoff(50*time.Millisecond, 200*time.Millisecond), WithAWSOptions(aws.WithLoadOptions(moto.LoadOptions()...))}, opts...)
	s, err := New(cfg, sink, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- s.Start(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-ended; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	t.Cleanup(stop)
	return s, stop
}

// waitHealth waits until the source's Health is up or down with a reason
// holding words.
func waitHealth(t *testing.T, s *Source, up bool, words string) {
	t.Helper()
	testenv.Eventually(t, waitLimit, fmt.Sprintf("health up=%t with %q", up, words), func() string {
		if h := s.Health(); h.Up != up || !strings.Contains(h.Reason, words) {
			return fmt.Sprintf("%+v", h)
		}
		return ""
	})
}

func testTagChangeIsDeletedOnlyAfterItsPassesCompleted(t *testing.T) {
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "60"})
	sink := &recordingSink{}
	s := start(t, config(q.url), sink)
	waitHealth(t, s, true, "no dead-letter queue")

	send(t, q.url, tagChangeBody)
	d := sink.wait(t, 1)[0]
	if len(d.changes) != 1 || d.changes[0].Resource != "arn:aws:ec2:us-east-1:123456789012:instance/i-0000000aaaaaaaaaa" ||
		d.changes[0].Kind != cloudchange.KindWrite || d.changes[0].Tags["an-updated-key"] != "tag-value-was-just-changed" || len(d.changes[0].Tags) != 3 {
		t.Fatalf("published %+v, want the tag change with its three tags", d.changes)
	}
	if got := counts(t, q.url); got != "visible=0 notVisible=1" {
		t.Fatalf("before done: queue %s, want the message in flight", got)
	}
	if got := testutil.ToFloat64(s.metrics.deleted); got != 0 {
		t.Fatalf("deleted %v messages before done", got)
	}
	d.done(nil)
	waitCounts(t, q.url, "visible=0 notVisible=0")
	waitDeleted(t, s, 1)
	if h := s.Health(); h.LastDelivery.IsZero() {
		t.Errorf("Health %+v: no last delivery", h)
	}
	if calls := s.Calls(); calls["sqs:ReceiveMessage"] == 0 || calls["sqs:DeleteMessage"] != 1 || calls["sqs:GetQueueAttributes"] != 1 {
		t.Errorf("calls %v, want receives, one delete and one attribute read", calls)
	}
}

func testMessagesDoneBeforeStopAreDeletedAsStartReturns(t *testing.T) {
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "60"})
	sink := &recordingSink{}
	s, stop := startStoppable(t, config(q.url), sink)
	send(t, q.url, tagChangeBody, stateBody("running"))
	got := sink.wait(t, 2)
	got[0].done(nil)
	got[1].done(nil)
	stop()
	if h := s.Health(); h.Up || h.Reason != "stopped" {
		t.Errorf("Health after Start returned: %+v, want down, stopped", h)
	}
	if c := counts(t, q.url); c != "visible=0 notVisible=0" {
		t.Errorf("after Start returned: queue %s, want both messages deleted", c)
	}
	if got := testutil.ToFloat64(s.metrics.deleted); got != 2 {
		t.Errorf("deleted metric %v, want 2", got)
	}
}

func testFailedPassLeavesTheMessageToBeReceivedAgain(t *testing.T) {
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "1"})
	sink := &recordingSink{}
	s := start(t, config(q.url), sink)

	send(t, q.url, stateBody("terminated"))
	first := sink.wait(t, 1)[0]
	first.done(fmt.Errorf("the pass failed"))
	again := sink.wait(t, 2)[1]
	if again.changes[0].ID != first.changes[0].ID || again.changes[0].Kind != cloudchange.KindDelete {
		t.Fatalf("second delivery %+v, want the first's event %+v again", again.changes, first.changes)
	}
	if got := testutil.ToFloat64(s.metrics.failed); got != 1 {
		t.Errorf("failed metric %v, want 1", got)
	}
	if got := testutil.ToFloat64(s.metrics.deleted); got != 0 {
		t.Errorf("deleted metric %v after a failed pass, want 0", got)
	}
	again.done(nil)
	waitCounts(t, q.url, "visible=0 notVisible=0")
}

// A message the hub's full queue refuses is not deleted: it is received
// again, and deleted once a pass of it completed.
func testMessageAFullQueueRefusesIsReceivedAgain(t *testing.T) {
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "1"})
	sink := &recordingSink{refuse: true}
	s := start(t, config(q.url), sink)

	send(t, q.url, stateBody("terminated"))
	testenv.Eventually(t, waitLimit, "the message refused twice (received again)", func() string {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if sink.refusals < 2 {
			return fmt.Sprintf("%d refusals", sink.refusals)
		}
		sink.refuse = false
		return ""
	})
	if got := testutil.ToFloat64(s.metrics.deleted); got != 0 {
		t.Fatalf("deleted metric %v after refusals, want 0", got)
	}
	sink.wait(t, 1)[0].done(nil)
	waitCounts(t, q.url, "visible=0 notVisible=0")
	waitDeleted(t, s, 1)
}

// A queue no enabled EventBridge rule sends to receives nothing, which a
// quiet estate cannot tell from no change: with CheckRules the source is
// down until an enabled rule targets the queue, and down again when the
// rule is disabled.
func testQueueNoEnabledRuleSendsToIsDown(t *testing.T) {
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "60"})
	cfg := config(q.url)
	cfg.CheckRules, cfg.RuleCheckInterval = true, 100*time.Millisecond
	s := start(t, cfg, &recordingSink{})
	waitHealth(t, s, false, "no EventBridge rule on the default event bus sends to the queue "+q.arn)

	eb := eventbridge.NewFromConfig(moto.Config)
	rule := "tagsync-" + q.name
	if _, err := eb.PutRule(t.Context(), &eventbridge.PutRuleInput{Name: &rule,
		EventPattern: sdkaws.String(`{"source":["aws.tag"],"detail-type":["Tag Change on Resource"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := eb.PutTargets(t.Context(), &eventbridge.PutTargetsInput{Rule: &rule,
		Targets: []ebtypes.Target{{Id: sdkaws.String("queue"), Arn: &q.arn}}}); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, s, true, "")
	if _, err := eb.DisableRule(t.Context(), &eventbridge.DisableRuleInput{Name: &rule}); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, s, false, "is disabled")
	if calls := s.Calls(); calls["eventbridge:ListRuleNamesByTarget"] == 0 || calls["eventbridge:DescribeRule"] == 0 {
		t.Errorf("calls %v, want the rule check's ListRuleNamesByTarget and DescribeRule counted", calls)
	}
}

func testEventsTagsyncDoesNotReadAreDeletedUnpublished(t *testing.T) {
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "60"})
	sink := &recordingSink{}
	s := start(t, config(q.url), sink)

	send(t, q.url, invalidPolicyBody, invalidPolicyBody)
	waitCounts(t, q.url, "visible=0 notVisible=0")
	if got := testutil.ToFloat64(s.metrics.ignored); got != 2 {
		t.Errorf("ignored metric %v, want 2", got)
	}
	if got := sink.deliveries(); len(got) != 0 {
		t.Errorf("published %+v, want nothing", got)
	}
}

func testPoisonMessageMovesToTheDeadLetterQueue(t *testing.T) {
	dlq := newQueue(t, "dlq", nil)
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":2}`, dlq.arn)
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "1", "RedrivePolicy": policy})
	sink := &recordingSink{}
	s := start(t, config(q.url), sink)
	waitHealth(t, s, true, "")
	if h := s.Health(); h.Reason != "" {
		t.Errorf("Health %+v: a warning though the queue has a dead-letter queue", h)
	}

	send(t, q.url, "not an event")
	waitCounts(t, dlq.url, "visible=1 notVisible=0")
	waitCounts(t, q.url, "visible=0 notVisible=0")
	if got := testutil.ToFloat64(s.metrics.poison.WithLabelValues(poisonUnparseable)); got != 2 {
		t.Errorf("poison metric %v, want 2 (one per receive before the queue moved it)", got)
	}
	if got := sink.deliveries(); len(got) != 0 {
		t.Errorf("published %+v, want nothing", got)
	}
}

func testMessageReceivedTooOftenIsCountedAsPoisonAndStillPublished(t *testing.T) {
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "1"})
	sink := &recordingSink{}
	cfg := config(q.url)
	cfg.PoisonReceiveCount = 1
	s := start(t, cfg, sink)

	send(t, q.url, tagChangeBody)
	sink.wait(t, 1)[0].done(fmt.Errorf("failed"))
	second := sink.wait(t, 2)[1]
	if got := testutil.ToFloat64(s.metrics.poison.WithLabelValues(poisonReceiveCount)); got != 1 {
		t.Errorf("poison metric %v on the second receive, want 1", got)
	}
	second.done(nil)
	waitCounts(t, q.url, "visible=0 notVisible=0")
}

func testDeletedQueueTakesTheSourceDownUntilItIsBack(t *testing.T) {
	q := newQueue(t, "", nil)
	sink := &recordingSink{}
	s := start(t, config(q.url), sink)
	waitHealth(t, s, true, "")

	if _, err := sqs.NewFromConfig(moto.Config).DeleteQueue(t.Context(), &sqs.DeleteQueueInput{QueueUrl: &q.url}); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, s, false, "does not exist")
	if got := testutil.ToFloat64(s.metrics.receiveErrors.WithLabelValues(reasonQueueGone)); got < 1 {
		t.Errorf("receive errors (queue_gone) %v, want some", got)
	}
	if got := testutil.ToFloat64(s.metrics.up); got != 0 {
		t.Errorf("up gauge %v while down", got)
	}

	createQueue(t, q.name, nil)
	waitHealth(t, s, true, "")
	send(t, q.url, tagChangeBody)
	sink.wait(t, 1)[0].done(nil)
	waitCounts(t, q.url, "visible=0 notVisible=0")
}

func testUnreachableSQSTakesTheSourceDown(t *testing.T) {
	cfg := config("http://127.0.0.1:1/123456789012/nowhere")
	cfg.AWS.Endpoint = "http://127.0.0.1:1"
	// After moto's load options, so that this endpoint wins.
	s := start(t, cfg, &recordingSink{}, WithAWSOptions(aws.WithRetryMaxAttempts(1),
		aws.WithLoadOptions(awsconfig.WithBaseEndpoint(cfg.AWS.Endpoint))))
	waitHealth(t, s, false, "cannot reach SQS")
	if !strings.Contains(s.Health().Reason, "connection refused") {
		t.Errorf("Health %+v, want the connection refused", s.Health())
	}
}

func testMessagesInFlightAreBounded(t *testing.T) {
	const total, bound = 12, 3
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "60"})
	var bodies []string
	for i := range total {
		bodies = append(bodies, strings.Replace(tagChangeBody, "bddcf1d6-0251", "event-"+strconv.Itoa(i), 1))
	}
	send(t, q.url, bodies...)
	sink := &recordingSink{}
	cfg := config(q.url)
	cfg.MaxInFlight = bound
	start(t, cfg, sink)

	for completed := 0; completed < total; {
		want := min(bound, total-completed)
		got := sink.wait(t, completed+want)[completed : completed+want]
		for _, d := range got {
			d.done(nil)
		}
		completed += want
	}
	waitCounts(t, q.url, "visible=0 notVisible=0")
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.got) != total || sink.most != bound {
		t.Errorf("%d deliveries, at most %d outstanding; want %d and %d", len(sink.got), sink.most, total, bound)
	}
}

func testMessagesDoneTogetherAreDeletedInOneBatch(t *testing.T) {
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "60"})
	send(t, q.url, tagChangeBody, stateBody("running"), stateBody("stopped"))
	var batch []message
	testenv.Eventually(t, waitLimit, "three messages received", func() string {
		out, err := sqs.NewFromConfig(moto.Config).ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &q.url, MaxNumberOfMessages: 10})
		if err != nil {
			return err.Error()
		}
		for _, m := range out.Messages {
			batch = append(batch, message{id: *m.MessageId, receipt: *m.ReceiptHandle})
		}
		if len(batch) < 3 {
			return fmt.Sprintf("%d received", len(batch))
		}
		return ""
	})
	s, err := New(config(q.url), &recordingSink{}, WithRegisterer(prometheus.NewRegistry()), WithLogger(testr.New(t)),
		WithAWSOptions(aws.WithLoadOptions(moto.LoadOptions()...)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.slots.Acquire(t.Context(), int64(len(batch))); err != nil { // as receives do
		t.Fatal(err)
	}
	s.delete(t.Context(), batch)
	waitCounts(t, q.url, "visible=0 notVisible=0")
	if calls := s.Calls(); calls["sqs:DeleteMessageBatch"] != 1 || calls["sqs:DeleteMessage"] != 0 {
		t.Errorf("calls %v, want one DeleteMessageBatch", calls)
	}
	if got := testutil.ToFloat64(s.metrics.deleted); got != 3 {
		t.Errorf("deleted metric %v, want 3", got)
	}
}

func testPassLongerThanTheVisibilityTimeoutKeepsItsMessageHidden(t *testing.T) {
	const visibility = 2 * time.Second
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "2"})
	sink := &recordingSink{}
	s := start(t, config(q.url), sink)

	send(t, q.url, tagChangeBody)
	d := sink.wait(t, 1)[0]
	published := time.Now()
	// The pass runs (done held back) for two visibility timeouts of real
	// time, during which the heartbeat extends the message's visibility.
	testenv.Eventually(t, waitLimit, "the pass running for two visibility timeouts, with heartbeats", func() string {
		held, heartbeats := time.Since(published), s.Calls()["sqs:ChangeMessageVisibilityBatch"]
		if held < 2*visibility || heartbeats < 2 {
			return fmt.Sprintf("held %s, %d ChangeMessageVisibilityBatch calls", held.Round(time.Millisecond), heartbeats)
		}
		return ""
	})
	if got := sink.deliveries(); len(got) != 1 {
		t.Fatalf("%d deliveries while the pass ran, want the message received once", len(got))
	}
	if got := counts(t, q.url); got != "visible=0 notVisible=1" {
		t.Fatalf("while the pass runs: queue %s, want the message hidden", got)
	}
	if got := testutil.ToFloat64(s.metrics.extended); got < 2 {
		t.Errorf("extensions metric %v, want one per heartbeat", got)
	}

	d.done(nil)
	waitCounts(t, q.url, "visible=0 notVisible=0")
	waitDeleted(t, s, 1)
	if got, errs := testutil.ToFloat64(s.metrics.received), testutil.ToFloat64(s.metrics.extendErrors); got != 1 || errs != 0 {
		t.Errorf("received metric %v, extension errors %v; want 1 and 0", got, errs)
	}
	if calls := s.Calls(); calls["sqs:ChangeMessageVisibility"] != 0 {
		t.Errorf("calls %v: an extension of one message alone, want batches", calls)
	}
}

func testMessageHeldLongerThanMaxHoldIsReceivedAgain(t *testing.T) {
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "2"})
	sink := &recordingSink{}
	cfg := config(q.url)
	cfg.MaxHold = 3 * time.Second
	s := start(t, cfg, sink)

	send(t, q.url, stateBody("running"))
	// The first pass does not complete; after MaxHold the message is no
	// longer kept hidden and is received again, but not published again
	// nor deleted: it waits for the pass it triggered.
	first := sink.wait(t, 1)[0]
	testenv.Eventually(t, waitLimit, "the message received again", func() string {
		if n := testutil.ToFloat64(s.metrics.rereceived); n < 1 {
			return fmt.Sprintf("received %v times, %v again in flight", testutil.ToFloat64(s.metrics.received), n)
		}
		return ""
	})
	if got := sink.deliveries(); len(got) != 1 {
		t.Errorf("%d deliveries, want the message published once", len(got))
	}
	if n := testutil.ToFloat64(s.metrics.holdExpired); n != 1 {
		t.Errorf("hold expired metric %v, want 1", n)
	}
	if n, errs := testutil.ToFloat64(s.metrics.extended), testutil.ToFloat64(s.metrics.extendErrors); n < 1 || errs != 0 {
		t.Errorf("extensions %v, extension errors %v: want the message extended until MaxHold, without errors", n, errs)
	}
	if n := testutil.ToFloat64(s.metrics.deleted); n != 0 {
		t.Fatalf("deleted %v messages while the pass ran", n)
	}
	// Deleted with the handle of its latest receive.
	first.done(nil)
	waitCounts(t, q.url, "visible=0 notVisible=0")
	waitDeleted(t, s, 1)
}

// passRouter routes every change to one object and records them.
type passRouter struct {
	mu     sync.Mutex
	routed []cloudchange.Change
}

func (r *passRouter) Route(c cloudchange.Change) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.routed = append(r.routed, c)
	return []string{"object"}
}

func (r *passRouter) Overflow() {}

// waitRouted waits until n changes were routed.
func (r *passRouter) waitRouted(t *testing.T, n int) {
	t.Helper()
	testenv.Eventually(t, waitLimit, fmt.Sprintf("%d changes routed", n), func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.routed) < n {
			return fmt.Sprintf("%d routed", len(r.routed))
		}
		return ""
	})
}

// testMessageReceivedAgainWhileItsPassRunsIsDeletedOnlyWhenAPassSucceeds
// publishes to the hub the controllers take changes from: a message
// received again while the pass it triggered runs (its visibility timeout
// ran out) is not deleted then, nor when that pass fails, which leaves it
// for a redelivery; the redelivery's pass succeeds and deletes it.
func testMessageReceivedAgainWhileItsPassRunsIsDeletedOnlyWhenAPassSucceeds(t *testing.T) {
	q := newQueue(t, "", map[string]string{"VisibilityTimeout": "2"})
	hub := cloudchange.NewHub(cloudchange.HubOptions{})
	router := &passRouter{}
	sub := hub.Subscribe("test", router)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = hub.Start(ctx) }()
	cfg := config(q.url)
	cfg.MaxHold = 3 * time.Second
	s := start(t, cfg, hub)

	send(t, q.url, tagChangeBody)
	router.waitRouted(t, 1)
	finished := sub.Started("object") // the pass runs
	testenv.Eventually(t, waitLimit, "the message received again while its pass runs", func() string {
		if n := testutil.ToFloat64(s.metrics.received); n < 2 {
			return fmt.Sprintf("received %v times", n)
		}
		return ""
	})
	if n := testutil.ToFloat64(s.metrics.deleted); n != 0 {
		t.Fatalf("deleted %v messages while their pass ran", n)
	}
	finished(errors.New("throttled: the pass requeued"))
	router.waitRouted(t, 2) // received again once visible, published anew
	if n := testutil.ToFloat64(s.metrics.deleted); n != 0 {
		t.Fatalf("deleted %v messages after their pass failed", n)
	}
	if n := testutil.ToFloat64(s.metrics.failed); n != 1 {
		t.Errorf("failed metric %v, want 1", n)
	}
	sub.Started("object")(nil)
	waitCounts(t, q.url, "visible=0 notVisible=0")
	waitDeleted(t, s, 1)
}

// alice is the writer callBody names.
var alice = cloudchange.Writer{ID: "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/alice@example.com", Person: true}

// attributed waits for one delivery and checks it names want as its
// writer, and that the removal was counted under label.
func attributed(t *testing.T, s *Source, sink *recordingSink, want cloudchange.Writer, label string) {
	t.Helper()
	got := sink.wait(t, 1)
	if len(got) != 1 || got[0].changes[0].Writer != want {
		t.Fatalf("deliveries %+v, want one naming %+v", got, want)
	}
	if n := testutil.ToFloat64(s.metrics.removals.WithLabelValues(label)); n != 1 {
		t.Errorf("%s{writer=%q} = %v, want 1", MetricRemovals, label, n)
	}
	got[0].done(nil)
}

// testRemovalWaitsForItsCloudTrailEvent: a tag change that removed a tag
// is not published until the CloudTrail event of its call names who made
// it (a person, from the console); the call's message is deleted at once,
// the change's once its pass is done.
func testRemovalWaitsForItsCloudTrailEvent(t *testing.T) {
	q := newQueue(t, "", nil)
	sink := &recordingSink{}
	cfg := config(q.url)
	cfg.AttributionWait = time.Minute
	s := start(t, cfg, sink)
	send(t, q.url, tagChangeBody)
	testenv.Eventually(t, waitLimit, "the removal received", func() string {
		if n := testutil.ToFloat64(s.metrics.received); n < 1 {
			return fmt.Sprintf("received %v", n)
		}
		return ""
	})
	if got := sink.deliveries(); len(got) != 0 {
		t.Fatalf("the removal was published before its CloudTrail event: %+v", got)
	}
	send(t, q.url, callBody)
	attributed(t, s, sink, alice, writerPerson)
	waitDeleted(t, s, 2)
}

// testRemovalTakesTheWriterOfAnEarlierCloudTrailEvent: the CloudTrail
// event may come first: the removal takes its writer at once.
func testRemovalTakesTheWriterOfAnEarlierCloudTrailEvent(t *testing.T) {
	q := newQueue(t, "", nil)
	sink := &recordingSink{}
	s := start(t, config(q.url), sink) // no wait: only a call that came first names the writer
	send(t, q.url, callBody)
	waitDeleted(t, s, 1)
	send(t, q.url, tagChangeBody)
	attributed(t, s, sink, alice, writerPerson)
}

// testRemovalWithoutCloudTrailEventIsPublishedAfterTheWait: no CloudTrail
// event comes (the rule does not send them): the removal is published
// without a writer once the wait ends.
func testRemovalWithoutCloudTrailEventIsPublishedAfterTheWait(t *testing.T) {
	q := newQueue(t, "", nil)
	sink := &recordingSink{}
	cfg := config(q.url)
	cfg.AttributionWait = time.Second
	s := start(t, cfg, sink)
	send(t, q.url, tagChangeBody)
	attributed(t, s, sink, cloudchange.Writer{}, writerUnknown)
	waitDeleted(t, s, 1)
}
