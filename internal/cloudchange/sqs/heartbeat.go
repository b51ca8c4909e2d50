package sqs

import (
	"context"
	"errors"
	"strconv"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// minVisibility is the shortest visibility timeout the source asks for and
// extends to: a queue's 0 would make every message visible again at once.
const minVisibility = time.Second

// visibility returns the visibility timeout receives ask for and the
// heartbeat extends to: the queue's, as inspect last read it, or
// DefaultVisibilityTimeout.
func (s *Source) visibility() time.Duration {
	return time.Duration(s.visibilitySeconds.Load()) * time.Second
}

// setVisibility records the queue's VisibilityTimeout attribute (seconds;
// "" or not a number keeps the current one) and wakes the heartbeat when
// it changed, so that the messages held are extended to it at once.
func (s *Source) setVisibility(attr string) {
	seconds, err := strconv.ParseInt(attr, 10, 32)
	if err != nil {
		return
	}
	seconds = max(seconds, int64(minVisibility/time.Second))
	if s.visibilitySeconds.Swap(seconds) == seconds {
		return
	}
	select {
	case s.visibilityChanged <- struct{}{}:
	default:
	}
}

// heartbeatLoop extends the visibility of the messages held every half
// visibility timeout, and at once when the timeout changed, until ctx
// ends.
func (s *Source) heartbeatLoop(ctx context.Context) {
	for {
		tick := time.NewTimer(s.visibility() / 2)
		select {
		case <-ctx.Done():
			tick.Stop()
			return
		case <-s.visibilityChanged:
			tick.Stop()
		case <-tick.C:
		}
		s.heartbeat(ctx)
	}
}

// heartbeat extends the visibility of every message held to the full
// timeout, up to 10 in one ChangeMessageVisibilityBatch, and gives up on
// those held for Config.MaxHold, or so long that one more extension would
// reach past the 12 hours SQS hides a message at most (it would refuse it).
func (s *Source) heartbeat(ctx context.Context) {
	extend, expired := s.holds.due(time.Now(), min(s.cfg.MaxHold, MaxMaxHold-s.visibility()))
	for _, h := range expired {
		s.metrics.holdExpired.Inc()
		s.log.Info("an SQS message's passes outlasted the longest hold: it is no longer kept hidden and is received again after its visibility timeout",
			"message", h.id, "maxHold", s.cfg.MaxHold.String())
	}
	timeout := int32(s.visibility() / time.Second)
	for start := 0; start < len(extend); start += maxPerReceive {
		call, cancel := context.WithTimeout(ctx, deleteTimeout)
		s.extend(call, extend[start:min(start+maxPerReceive, len(extend))], timeout)
		cancel()
	}
}

// extend sets the visibility timeout of a batch of messages (at most 10)
// to timeout seconds. A failure is counted and logged at V(1): the message
// may be received again while its passes run. An entry that failed because
// the message was done meanwhile (deleted) is no failure.
func (s *Source) extend(ctx context.Context, batch []message, timeout int32) {
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))
	for i, m := range batch {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: sdkaws.String(strconv.Itoa(i)),
			ReceiptHandle: sdkaws.String(m.receipt), VisibilityTimeout: timeout}
	}
	out, err := s.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &s.cfg.QueueURL, Entries: entries})
	if err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) { // not stopping
			s.metrics.extendErrors.Add(float64(len(batch)))
			s.log.V(1).Info("cannot extend the visibility of SQS messages; they may be received again while their passes run",
				"messages", len(batch), "error", err.Error())
		}
		return
	}
	failed := 0
	for _, f := range out.Failed {
		i, _ := strconv.Atoi(sdkaws.ToString(f.Id))
		if i < 0 || i >= len(batch) || !s.holds.has(batch[i]) {
			continue
		}
		failed++
		s.log.V(1).Info("cannot extend the visibility of an SQS message; it may be received again while its passes run",
			"message", batch[i].id, "code", sdkaws.ToString(f.Code), "error", sdkaws.ToString(f.Message))
	}
	s.metrics.extendErrors.Add(float64(failed))
	s.metrics.extended.Add(float64(len(out.Successful)))
}
