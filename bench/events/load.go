package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// batch is the events of one generated delivery.
const batch = 10

// eventJSON is an ARM event in the Event Grid schema, as armsim delivers
// it: ID, topic, subject, time, resource.
const eventJSON = `{"id":%q,"topic":%q,"subject":%q,"eventType":"Microsoft.Resources.ResourceWriteSuccess","eventTime":%q,` +
	`"data":{"resourceUri":%q,"operationName":"Microsoft.Resources/tags/write","status":"Succeeded"},"dataVersion":"2","metadataVersion":"1"}`

// generator posts Event Grid deliveries of batch events to the webhook:
// of every 10 events 5 name an owned resource (the estate's and the node
// sync's hosts in turn), 4 an unrelated one, and 1 repeats the previous
// event (a redelivery).
type generator struct {
	url    string
	owned  []string
	seq    int
	prev   string
	status map[int]int
	errs   int
}

func (g *generator) event() string {
	n := g.seq
	g.seq++
	if n%10 == 9 {
		return g.prev
	}
	id := fmt.Sprintf("/subscriptions/20000000-0000-4000-8000-000000000001/resourceGroups/other/providers/Microsoft.Storage/storageAccounts/other%07d", n)
	if n%2 == 0 {
		id = g.owned[(n/2)%len(g.owned)]
	}
	g.prev = fmt.Sprintf(eventJSON, fmt.Sprintf("bench-%09d", n), "/subscriptions/"+subOf(id), id, time.Now().UTC().Format(time.RFC3339Nano), id)
	return g.prev
}

// subOf is the subscription of an ARM ID.
func subOf(id string) string {
	var sub string
	_, _ = fmt.Sscanf(id, "/subscriptions/%36s", &sub)
	return sub
}

// post sends one delivery.
func (g *generator) post(ctx context.Context) {
	evs := make([]string, batch)
	for i := range evs {
		evs[i] = g.event()
	}
	body := "[" + strings.Join(evs, ",") + "]"
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("aeg-event-type", "Notification")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.errs++
		return
	}
	_ = resp.Body.Close()
	g.status[resp.StatusCode]++
}

// loadStats follows the hub through the controller's metrics.
type loadStats struct {
	maxQueue float64
	samples  []benchkit.MemorySample
}

// load posts -load-rate events a minute for -load-for while armsim makes
// a real outside edit every 2 s (env=dev on a classified resource, a new
// tag on a node-sync host, in turn), then waits until every edit is in
// sync and memory has settled.
func (b *bench) load(ctx context.Context) (*LoadResult, error) {
	r := &LoadResult{RatePerMinute: b.o.loadRate, Seconds: b.o.loadFor.Seconds(), QueueCapacity: b.o.queueSize,
		Counters: map[string]int{}, Memory: benchkit.Memory{GoalMiB: 200}}
	before, _ := b.ctrl.Metrics()
	gen := &generator{url: b.az.Webhook, owned: append(append([]string{}, b.az.Owned...), b.az.Hosts...), status: map[int]int{}}
	every := time.Duration(float64(time.Minute) * batch / float64(b.o.loadRate))
	st := &loadStats{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); b.followQueue(ctx, st) }()
	b.az.Arm.ResetCalls()
	start := time.Now()
	tick, editTick := time.NewTicker(every), time.NewTicker(2*time.Second)
	var edits []func(context.Context) error
	for time.Since(start) < b.o.loadFor && ctx.Err() == nil {
		select {
		case <-tick.C:
			gen.post(ctx)
		case <-editTick.C:
			wait, err := b.loadEdit(len(edits))
			if err != nil {
				return r, err
			}
			edits = append(edits, wait)
		}
	}
	tick.Stop()
	editTick.Stop()
	r.Posted, r.Deliveries, r.PostErrors = gen.seq, gen.status, gen.errs
	benchkit.Logf("load: %d events in %d deliveries over %s (HTTP %v, %d errors), %d outside edits; waiting for them", gen.seq, gen.seq/batch, time.Since(start).Round(time.Second), gen.status, gen.errs, len(edits))
	for _, wait := range edits {
		if err := wait(ctx); err != nil {
			return r, err
		}
	}
	r.Edits, r.InSyncSeconds = len(edits), benchkit.Secs(time.Since(start))
	r.ARM = benchkit.TallyARM(b.az.Arm.Calls())
	after, _ := b.ctrl.Metrics()
	for _, m := range []string{"tagsync_events_changes_received_total", "tagsync_events_changes_duplicate_total", "tagsync_events_overflows_total",
		"tagsync_nodetags_passes_total", "tagsync_nodetags_targeted_passes_total", "tagsync_metadata_passes_total", "tagsync_metadata_targeted_passes_total"} {
		r.Counters[m] = int(benchkit.MetricValue(after, m) - benchkit.MetricValue(before, m))
	}
	cancel()
	wg.Wait()
	r.MaxQueue, r.Memory.Samples = int(st.maxQueue), st.samples
	r.Memory.Settle(b.ctrl, "load", func(at string) benchkit.MemorySample {
		s, _ := b.ctrl.Sample(at)
		r.Memory.Samples = append(r.Memory.Samples, s)
		return s
	})
	benchkit.Logf("load: every edit in sync %.1fs after the start; queue at most %d of %d; counters %v; RSS peak %.1f MiB, settled %.1f MiB",
		r.InSyncSeconds, r.MaxQueue, r.QueueCapacity, r.Counters, r.Memory.PeakRSSMiB, r.Memory.RSSMiB)
	return r, nil
}

// followQueue reads the hub's queue length every 250 ms and the process's
// memory every 15 s until ctx ends.
func (b *bench) followQueue(ctx context.Context, st *loadStats) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		text, _ := b.ctrl.Metrics()
		st.maxQueue = max(st.maxQueue, benchkit.MetricValue(text, "tagsync_events_queue_length"))
		if i%60 == 59 {
			s, _ := b.ctrl.Sample(fmt.Sprintf("load, %ds", (i+1)/4))
			st.samples = append(st.samples, s)
		}
	}
}

// loadEdit makes the k-th outside edit of the load and returns how to
// wait until it is in sync.
func (b *bench) loadEdit(k int) (func(context.Context) error, error) {
	if k%2 == 0 {
		id := b.az.Owned[(k*104729+13)%len(b.az.Owned)]
		if err := b.az.Arm.SetTags(id, map[string]string{"env": "dev"}); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			_, err := b.az.Reverted(ctx, id, b.ctrl.Running, b.o.Timeout)
			return err
		}, nil
	}
	host, label, err := b.az.NodeEdit(k, fmt.Sprintf("load-%d", k))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		_, err := b.az.Labelled(ctx, host, label, "v", b.o.Timeout)
		return err
	}, nil
}
