package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
)

// Timeouts of the calls to SQS.
const (
	// callTimeout bounds a call beyond its long-poll wait, so that a
	// connection that went silent does not hold the source.
	callTimeout = 30 * time.Second
	// deleteTimeout bounds a delete call, and the deletes Start still
	// sends as it returns.
	deleteTimeout = 10 * time.Second
)

// message is one received message in flight.
type message struct {
	id      string
	receipt string
}

// Start receives and publishes until ctx ends, then returns nil, the
// source down ("stopped"). Failures never end it: the source goes down
// (Health), waits (the backoff) and tries again.
func (s *Source) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { s.deleteLoop(ctx) })
	wg.Go(func() { s.heartbeatLoop(ctx) })
	wg.Go(func() { s.learnSelf(ctx) })
	if s.cfg.CheckRules {
		wg.Go(func() { s.ruleLoop(ctx) })
	}
	s.receiveLoop(ctx)
	wg.Wait()
	s.metrics.up.Set(0)
	s.health.set(false, "stopped", time.Now())
	return nil
}

// receiveLoop reads the queue's attributes, then receives until ctx ends,
// as many messages at a time as there are free slots (at most 10). After a
// failure it reads the attributes again (the queue may have been
// recreated) and the first receive after it does not wait for messages,
// so that the source is up again as soon as SQS answers.
func (s *Source) receiveLoop(ctx context.Context) {
	backoff := s.newBackoff()
	inspected := false
	for ctx.Err() == nil {
		var err error
		if !inspected {
			err = s.inspect(ctx)
			inspected = err == nil
		}
		if err == nil {
			err = s.receiveOnce(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.down(err)
			inspected = false
			cloud.Sleep(ctx, backoff.Step())
		default:
			backoff = s.newBackoff()
		}
	}
}

// newBackoff returns the backoff after a first failure.
func (s *Source) newBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: s.first, Factor: 2, Cap: s.max, Steps: math.MaxInt32}
}

// inspect reads the queue's redrive policy and visibility timeout, logs
// them when they changed, keeps the timeout for the receives and the
// heartbeat, and keeps a warning for Health when the queue has no
// dead-letter queue. Being denied sqs:GetQueueAttributes is no failure:
// the source receives without knowing.
func (s *Source) inspect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	out, err := s.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &s.cfg.QueueURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameRedrivePolicy, types.QueueAttributeNameVisibilityTimeout}})
	if err != nil {
		f := classify(err, s.cfg.QueueURL)
		if f.label != reasonAccessDenied {
			return err
		}
		s.warning = "whether the queue has a dead-letter queue is unknown: " + f.reason
		s.logQueue("cannot read the SQS queue's attributes; receiving anyway", "error", f.reason)
		return nil
	}
	dlq, maxReceives := redrivePolicy(out.Attributes[string(types.QueueAttributeNameRedrivePolicy)])
	visibility := out.Attributes[string(types.QueueAttributeNameVisibilityTimeout)]
	s.setVisibility(visibility)
	s.warning = ""
	if dlq == "" {
		s.warning = "the queue has no dead-letter queue (RedrivePolicy): a message that cannot be read is received again and again until the queue's retention period ends"
		s.logQueue("the SQS queue has no dead-letter queue: give it a RedrivePolicy", "visibilityTimeoutSeconds", visibility)
		return nil
	}
	s.logQueue("reading the SQS queue", "visibilityTimeoutSeconds", visibility, "deadLetterQueue", dlq, "maxReceiveCount", maxReceives)
	return nil
}

// logQueue logs what inspect found, unless it found the same last time.
func (s *Source) logQueue(msg string, kv ...any) {
	if said := fmt.Sprint(msg, kv); said != s.lastQueueLog {
		s.lastQueueLog = said
		s.log.Info(msg, append([]any{"queue", s.cfg.QueueURL}, kv...)...)
	}
}

// redrivePolicy returns the dead-letter queue's ARN and the receives after
// which a message moves there, from a queue's RedrivePolicy attribute
// ({"deadLetterTargetArn": ARN, "maxReceiveCount": N}); "" without one.
func redrivePolicy(attr string) (dlq string, maxReceives string) {
	var p struct {
		DeadLetterTargetArn string      `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.Number `json:"maxReceiveCount"`
	}
	if attr == "" || json.Unmarshal([]byte(attr), &p) != nil {
		return "", ""
	}
	return p.DeadLetterTargetArn, p.MaxReceiveCount.String()
}

// receiveOnce waits for a free slot, receives up to as many messages as
// there are free slots (at most 10) and hands each to handle.
func (s *Source) receiveOnce(ctx context.Context) error {
	n, err := s.acquire(ctx)
	if err != nil {
		return nil // ctx ended
	}
	wait := int32(s.cfg.WaitTime / time.Second)
	if !s.health.get().Up {
		wait = 0
	}
	call, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Second+callTimeout)
	defer cancel()
	out, err := s.client.ReceiveMessage(call, &sqs.ReceiveMessageInput{QueueUrl: &s.cfg.QueueURL,
		MaxNumberOfMessages: int32(n), WaitTimeSeconds: wait, VisibilityTimeout: int32(s.visibility() / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}})
	if err != nil {
		s.slots.Release(int64(n))
		return err
	}
	s.slots.Release(int64(n - len(out.Messages)))
	s.metrics.inFlight.Add(float64(len(out.Messages)))
	s.up()
	for _, m := range out.Messages {
		s.handle(m)
	}
	return nil
}

// acquire waits for one free slot and takes up to maxPerReceive, as many as
// are free.
func (s *Source) acquire(ctx context.Context) (int, error) {
	if err := s.slots.Acquire(ctx, 1); err != nil {
		return 0, err
	}
	n := 1
	for n < maxPerReceive && s.slots.TryAcquire(1) {
		n++
	}
	return n, nil
}

// handle publishes a message's change, or acknowledges a message tagsync
// does not read, or counts a poison message and leaves it on the queue for
// its redrive policy. A message received again while the passes of its
// first receive still run (its visibility timeout ran out: the hold
// expired, or an extension failed) is not published again: it is deleted,
// with this receive's handle, when those passes succeed, and left on the
// queue when they fail. Publishing it again would not wait for them: the
// hub takes it for a redelivery and is done with it at once.
func (s *Source) handle(m types.Message) {
	s.metrics.received.Inc()
	msg := message{id: sdkaws.ToString(m.MessageId), receipt: sdkaws.ToString(m.ReceiptHandle)}
	receives, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	ev, err := parse(sdkaws.ToString(m.Body))
	change := ev.change
	switch {
	case errors.Is(err, ErrNotRead):
		s.metrics.ignored.Inc()
		s.log.V(1).Info("ignoring an SQS message", "message", msg.id, "event", err.Error())
		s.acks <- msg
		return
	case err != nil:
		s.metrics.poison.WithLabelValues(poisonUnparseable).Inc()
		s.log.Info("cannot read an SQS message; it stays on the queue, whose redrive policy moves it to the dead-letter queue", "message", msg.id,
			"receiveCount", receives, "error", err.Error())
		s.finish(1)
		return
	}
	if receives > s.cfg.PoisonReceiveCount {
		s.metrics.poison.WithLabelValues(poisonReceiveCount).Inc()
		s.log.Info("an SQS message was received too often: its passes keep failing", "message", msg.id,
			"receiveCount", receives, "resource", change.Resource, "event", change.ID)
	}
	if ev.call != nil {
		s.attribute(*ev.call)
		s.acks <- msg
		return
	}
	if !s.holds.add(msg, time.Now()) {
		s.metrics.rereceived.Inc()
		s.log.V(1).Info("an SQS message was received again while its passes run; it is deleted when they succeed",
			"message", msg.id, "receiveCount", receives, "resource", change.Resource)
		s.finish(1) // the first receive holds the message's slot
		return
	}
	s.health.delivered(time.Now())
	if len(ev.removed) > 0 {
		if w, ok := s.attr.writerOf(change, ev.removed, nil, time.Now()); ok {
			change.Writer = w
		} else if s.cfg.AttributionWait > 0 {
			s.attr.await(msg, change, ev.removed, s.cfg.AttributionWait, s.publishRemoval)
			return
		}
		s.publishRemoval(msg, change)
		return
	}
	if len(ev.set) > 0 {
		if w, ok := s.attr.writerOf(change, nil, ev.set, time.Now()); ok {
			change.Writer = w
		} else {
			s.attr.published(change, ev.set, time.Now())
		}
	}
	s.publish(msg, change)
}

// publishRemoval publishes a change that removed tags, counted by its
// writer.
func (s *Source) publishRemoval(msg message, change cloudchange.Change) {
	writer := writerUnknown
	switch {
	case change.Writer.Person:
		writer = writerPerson
	case change.Writer.ID != "":
		writer = writerOther
	}
	s.metrics.removals.WithLabelValues(writer).Inc()
	s.publish(msg, change)
}

// attribute publishes, naming their writer, the waiting changes the call
// c made, and the changes of values it made that went without a writer
// (again, as changes of their own: a targeted pass reads the resource and
// learns who changed it).
func (s *Source) attribute(c call) {
	s.metrics.calls.Inc()
	ready, named := s.attr.record(c, time.Now())
	for _, w := range ready {
		s.publishRemoval(w.msg, w.change)
	}
	if len(named) > 0 {
		if err := s.sink.Publish(named, func(error) {}); err != nil {
			s.log.V(1).Info("the change queue is full; who changed the values is not told", "resources", len(named), "writer", c.writer.ID)
		}
	}
}

// publish hands a held message's change to the sink.
func (s *Source) publish(msg message, change cloudchange.Change) {
	if err := s.sink.Publish([]cloudchange.Change{change}, s.doneFunc(msg, change)); err != nil {
		// Not taken (a full queue): the message stays on the queue, to be
		// received again once its visibility timeout ends.
		s.holds.remove(msg.id)
		s.metrics.failed.Inc()
		s.log.Info("the change queue is full; the SQS message is received again after its visibility timeout",
			"message", msg.id, "resource", change.Resource)
		s.finish(1)
	}
}

// doneFunc returns the done of a message's Publish: the heartbeat stops
// extending the message's visibility; on nil the message is deleted (with
// the receipt handle of its latest receive), on an error it stays on the
// queue and is received again once its visibility timeout (the last
// extension's) ends. It never blocks, and only its first call counts.
func (s *Source) doneFunc(msg message, change cloudchange.Change) func(error) {
	var once sync.Once
	return func(err error) {
		once.Do(func() {
			if latest, ok := s.holds.remove(msg.id); ok {
				msg = latest
			}
			if err == nil {
				s.acks <- msg
				return
			}
			s.metrics.failed.Inc()
			s.log.V(1).Info("a pass failed; the SQS message is received again after its visibility timeout",
				"message", msg.id, "resource", change.Resource, "error", err.Error())
			s.finish(1)
		})
	}
}

// finish frees the slots of n messages no longer in flight.
func (s *Source) finish(n int) {
	s.metrics.inFlight.Sub(float64(n))
	s.slots.Release(int64(n))
}

// up records a successful receive.
func (s *Source) up() {
	s.metrics.up.Set(1)
	if s.health.set(true, s.warning, time.Now()) && s.lastReason != "" {
		s.log.Info("the SQS event source receives again", "queue", s.cfg.QueueURL)
	}
	s.lastReason = ""
}

// down records a failed call: Health down with its reason, logged once per
// change of reason.
func (s *Source) down(err error) {
	f := classify(err, s.cfg.QueueURL)
	s.metrics.receiveErrors.WithLabelValues(f.label).Inc()
	s.metrics.up.Set(0)
	s.health.set(false, f.reason, time.Now())
	if f.reason != s.lastReason {
		s.log.Error(err, "the SQS event source is down; retrying with backoff", "reason", f.reason)
		s.lastReason = f.reason
	}
}

// deleteLoop deletes the messages done, several in one DeleteMessageBatch
// when several are done together, until ctx ends; then it deletes those
// already done. Deletes outlive ctx by up to deleteTimeout, so that a
// message done before the end is not received again.
func (s *Source) deleteLoop(ctx context.Context) {
	calls := context.WithoutCancel(ctx)
	for {
		select {
		case <-ctx.Done():
			flush, cancel := context.WithTimeout(calls, deleteTimeout)
			defer cancel()
			for batch := s.takeDone(nil); len(batch) > 0; batch = s.takeDone(nil) {
				s.delete(flush, batch)
			}
			return
		case m := <-s.acks:
			call, cancel := context.WithTimeout(calls, deleteTimeout)
			s.delete(call, s.takeDone([]message{m}))
			cancel()
		}
	}
}

// takeDone adds to batch the messages done so far, up to maxPerReceive.
func (s *Source) takeDone(batch []message) []message {
	for len(batch) < maxPerReceive {
		select {
		case m := <-s.acks:
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}

// delete deletes a batch of messages (DeleteMessage for one) and frees
// their slots. A failed delete is counted and logged: the message is
// received again.
func (s *Source) delete(ctx context.Context, batch []message) {
	defer s.finish(len(batch))
	if len(batch) == 1 {
		_, err := s.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &s.cfg.QueueURL, ReceiptHandle: &batch[0].receipt})
		s.deleted(batch, err, 0)
		return
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(batch))
	for i, m := range batch {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: sdkaws.String(strconv.Itoa(i)), ReceiptHandle: sdkaws.String(m.receipt)}
	}
	out, err := s.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &s.cfg.QueueURL, Entries: entries})
	if err != nil {
		s.deleted(batch, err, 0)
		return
	}
	for _, f := range out.Failed {
		s.log.Info("cannot delete an SQS message; it is received again", "entry", sdkaws.ToString(f.Id),
			"code", sdkaws.ToString(f.Code), "error", sdkaws.ToString(f.Message))
	}
	s.deleted(batch, nil, len(out.Failed))
}

// deleted counts a delete of batch: all failed with err, or failed of them.
func (s *Source) deleted(batch []message, err error, failed int) {
	if err != nil {
		failed = len(batch)
		s.log.Info("cannot delete SQS messages; they are received again", "messages", len(batch), "error", err.Error())
	}
	s.metrics.deleteErrors.Add(float64(failed))
	s.metrics.deleted.Add(float64(len(batch) - failed))
}
