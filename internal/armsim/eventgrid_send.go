package armsim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Content types of deliveries.
const (
	contentTypeJSON            = "application/json; charset=utf-8"
	contentTypeCloudEvent      = "application/cloudevents+json; charset=utf-8"
	contentTypeCloudEventBatch = "application/cloudevents-batch+json; charset=utf-8"
)

// maxAnswerBytes bounds how much of a webhook's answer armsim reads.
const maxAnswerBytes = 64 << 10

// take removes from the queue the next batch due now: up to
// maxEventsPerBatch events within preferredBatchSizeInKilobytes (a larger
// single event goes alone), oldest first or, with the reorder fault,
// newest first. With none due it returns how long until one is (0: none
// queued, or delivery is paused).
func (d *deliverer) take(f EventGridFaults) ([]*pendingEvent, time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f.Paused {
		return nil, 0
	}
	now := time.Now()
	d.expire(now)
	if wait := d.delayedUntil.Sub(now); wait > 0 && len(d.queue) > 0 {
		return nil, wait // an unhealthy endpoint: nothing before the delay ends
	}
	dest := d.spec.Properties.Destination.Properties
	chosen := make([]bool, len(d.queue))
	var batch []*pendingEvent
	var size int
	var next time.Duration
	for k := range d.queue {
		i := k
		if f.Reorder {
			i = len(d.queue) - 1 - k
		}
		p := d.queue[i]
		if wait := p.due.Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		if len(batch) == dest.MaxEventsPerBatch || (len(batch) > 0 && size+len(p.body) > dest.PreferredBatchSizeInKilobytes<<10) {
			break
		}
		chosen[i], size = true, size+len(p.body)
		batch = append(batch, p)
	}
	d.queue = keepUnchosen(d.queue, chosen)
	d.inflight += len(batch)
	return batch, next
}

// keepUnchosen returns the events of q not chosen, in order.
func keepUnchosen(q []*pendingEvent, chosen []bool) []*pendingEvent {
	out := q[:0]
	for i, p := range q {
		if !chosen[i] {
			out = append(out, p)
		}
	}
	for i := len(out); i < len(q); i++ {
		q[i] = nil
	}
	return out
}

// expire drops the queued events older than the time to live; the caller
// holds d.mu.
func (d *deliverer) expire(now time.Time) {
	ttl := time.Duration(d.spec.Properties.RetryPolicy.EventTimeToLiveInMinutes) * time.Minute
	chosen := make([]bool, len(d.queue))
	for i, p := range d.queue {
		if now.Sub(p.enqueued) >= ttl {
			chosen[i] = true
			d.count.Dropped++
		}
	}
	d.queue = keepUnchosen(d.queue, chosen)
}

// deliver POSTs a batch (after the latency fault) and settles it.
func (d *deliverer) deliver(batch []*pendingEvent) {
	f := d.eg.currentFaults()
	spec := d.config()
	if f.Latency > 0 && !d.sleepFor(f.Latency) {
		return
	}
	body, ctype := batchBody(spec, batch)
	h := http.Header{}
	h.Set("Content-Type", ctype)
	h.Set("aeg-event-type", "Notification")
	h.Set("aeg-subscription-name", strings.ToUpper(spec.Name))
	h.Set("aeg-delivery-count", strconv.Itoa(batch[0].attempts))
	h.Set("aeg-data-version", resourceDataVersion)
	h.Set("aeg-metadata-version", metadataVersion)
	ctx, cancel := context.WithTimeout(d.ctx, d.eg.opts.DeliveryTimeout)
	defer cancel()
	ans, err := d.eg.send(ctx, http.MethodPost, spec, body, h)
	d.eg.logDelivery(spec, len(batch), ans.status, err)
	d.settle(batch, ans.status, err, f.DuplicateRate)
}

// logDelivery writes one line per delivery to Options.Logf, if set (the
// endpoint without its query, never a token).
func (eg *eventGrid) logDelivery(spec EventSubscription, events, status int, err error) {
	logf := eg.s.opts.Logf
	if logf == nil {
		return
	}
	outcome := strconv.Itoa(status)
	if err != nil {
		outcome = withoutURL(err).Error()
	}
	logf("armsim: eventgrid %s: %d event(s) to %s -> %s", spec.Name, events,
		spec.Properties.Destination.Properties.EndpointBaseURL, outcome)
}

// sleepFor waits d (real time); false if the deliverer stopped meanwhile.
func (d *deliverer) sleepFor(wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.ctx.Done():
		return false
	}
}

// batchBody encodes a delivery: a JSON array in the Event Grid schema; in
// CloudEvents a batch (array) when the subscription batches
// (maxEventsPerBatch > 1), else one structured event.
func batchBody(spec EventSubscription, batch []*pendingEvent) ([]byte, string) {
	cloud := spec.Properties.EventDeliverySchema == SchemaCloudEvents
	if cloud && spec.Properties.Destination.Properties.MaxEventsPerBatch == 1 {
		return batch[0].body, contentTypeCloudEvent
	}
	parts := make([][]byte, len(batch))
	for i, p := range batch {
		parts[i] = p.body
	}
	body := append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']')
	if cloud {
		return body, contentTypeCloudEventBatch
	}
	return body, contentTypeJSON
}

// settle records a delivery's outcome: delivered (and maybe duplicated),
// or each event retried after the schedule's next wait or dropped.
func (d *deliverer) settle(batch []*pendingEvent, status int, err error, dupRate float64) {
	ok := err == nil && status >= 200 && status <= 299
	var dups []bool
	waits := make([]time.Duration, len(batch))
	if ok {
		dups = d.eg.duplicates(len(batch), dupRate)
	} else {
		for i, p := range batch {
			waits[i] = d.eg.backoff(p.attempts + 1)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inflight -= len(batch)
	d.count.Attempts++
	now := time.Now()
	if ok {
		d.count.Delivered += len(batch)
		d.failStreak = 0
		d.queueDuplicates(batch, dups, now)
		return
	}
	d.count.FailedAttempts++
	if d.failStreak++; d.failStreak >= d.eg.opts.DelayAfterFailures {
		d.delayedUntil = now.Add(d.eg.opts.DelayedDelivery)
	}
	d.retryOrDrop(batch, err == nil && noRetryStatus(status), waits, now)
}

// queueDuplicates queues a second copy of each event dups marks; the
// caller holds d.mu.
func (d *deliverer) queueDuplicates(batch []*pendingEvent, dups []bool, now time.Time) {
	for i, p := range batch {
		if dups[i] && !p.dup {
			d.queue = append(d.queue, &pendingEvent{body: p.body, enqueued: now, due: now, dup: true})
			d.count.Duplicated++
		}
	}
}

// retryOrDrop requeues each failed event after its wait, or drops it when
// the failure is final, its attempts are spent or its time to live has
// passed; the caller holds d.mu.
func (d *deliverer) retryOrDrop(batch []*pendingEvent, final bool, waits []time.Duration, now time.Time) {
	rp := d.spec.Properties.RetryPolicy
	ttl := time.Duration(rp.EventTimeToLiveInMinutes) * time.Minute
	for i, p := range batch {
		p.attempts++
		p.due = now.Add(waits[i])
		if final || p.attempts >= rp.MaxDeliveryAttempts || p.due.Sub(p.enqueued) >= ttl {
			d.count.Dropped++
			continue
		}
		d.queue = append(d.queue, p)
	}
}

// noRetryStatus is true for the answers Event Grid never retries for a
// webhook: the event is dropped at once.
func noRetryStatus(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestEntityTooLarge:
		return true
	}
	return false
}

// withoutURL drops the request URL (its query may hold a secret) from a
// client error.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// hookAnswer is a webhook's answer.
type hookAnswer struct {
	status int
	header http.Header
	body   []byte
}

// send makes one request to a subscription's endpoint, with a bearer
// token when the destination is protected by Entra ID.
func (eg *eventGrid) send(ctx context.Context, method string, spec EventSubscription, body []byte, h http.Header) (hookAnswer, error) {
	dest := spec.Properties.Destination.Properties
	req, err := http.NewRequestWithContext(ctx, method, dest.EndpointURL, bytes.NewReader(body))
	if err != nil {
		return hookAnswer{}, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if aud := dest.AzureActiveDirectoryApplicationIDOrURI; aud != "" {
		tok, err := eg.s.deliveryToken(firstNonEmpty(dest.AzureActiveDirectoryTenantID, eg.s.opts.TenantID), aud)
		if err != nil {
			return hookAnswer{}, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := eg.client.Do(req)
	if err != nil {
		return hookAnswer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	return hookAnswer{status: resp.StatusCode, header: resp.Header, body: data}, err
}
