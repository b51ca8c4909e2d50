package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// Scenarios runs the controller with events on (events, steady, load),
// then again polling (polling).
func (b *bench) Scenarios(ctx context.Context) error {
	if err := b.createObjects(ctx); err != nil {
		return err
	}
	if b.o.Has("events") || b.o.Has("steady") || b.o.Has("silent") || b.o.Has("load") {
		if err := b.runMode(ctx, true); err != nil {
			return err
		}
	}
	if b.o.Has("polling") {
		return b.runMode(ctx, false)
	}
	return nil
}

// runMode starts the controller with events on or off, waits for its
// first passes and runs the mode's scenarios.
func (b *bench) runMode(ctx context.Context, events bool) error {
	b.arm.ResetCalls()
	start := time.Now()
	if err := b.startController(ctx, events); err != nil {
		return err
	}
	defer b.stopController()
	b.res.Command = b.ctrl.Command
	if err := b.awaitFirstPasses(ctx); err != nil {
		return err
	}
	m := &ModeResult{First: FirstPasses{Seconds: benchkit.Secs(time.Since(start)), ARM: benchkit.TallyARM(b.arm.Calls())}}
	benchkit.Logf("events %v: first passes done after %.1fs; ARM %s", events, m.First.Seconds, benchkit.OpsLine(m.First.ARM.ByOp))
	if !events {
		b.res.Polling = m
		return b.o.RunSteps(ctx, []benchkit.Step{{Name: "polling", Run: func(ctx context.Context) (err error) {
			m.Latency, err = b.latency(ctx, "polling")
			return err
		}}}, func(string) {})
	}
	b.res.Events = m
	return b.o.RunSteps(ctx, []benchkit.Step{
		{Name: "events", Run: func(ctx context.Context) (err error) { m.Latency, err = b.latency(ctx, "events"); return err }},
		{Name: "steady", Run: func(ctx context.Context) (err error) { m.Steady, err = b.steady(ctx, m.First.ARM.Reads); return err }},
		{Name: "silent", Run: func(ctx context.Context) (err error) { m.Silent, err = b.silent(ctx); return err }},
		{Name: "load", Run: func(ctx context.Context) (err error) { m.Load, err = b.load(ctx); return err }},
	}, func(string) {})
}

// createObjects creates the NodeTagSync (every tag to labels, resync
// every -poll) and the CloudMetadata with its AzureMetadata (env=prod on
// every classified resource, sync every -poll).
func (b *bench) createObjects(ctx context.Context) error {
	every := &metav1.Duration{Duration: b.o.poll}
	if err := b.c.Create(ctx, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: objName},
		Spec: v1alpha1.NodeTagSyncSpec{Provider: v1alpha1.ProviderAzure, ResyncInterval: every}}); err != nil {
		return err
	}
	if err := b.c.Create(ctx, &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: objName},
		Spec: v1alpha1.AzureMetadataSpec{Opcode: v1alpha1.OpcodeAdd, ResourceTags: map[string]string{"env": "prod"}, Subscriptions: b.subs[1:]}}); err != nil {
		return err
	}
	return b.c.Create(ctx, &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: objName},
		Spec: v1alpha1.CloudMetadataSpec{Classifiers: map[string]string{classifier: "owned"},
			ControllerConfig: v1alpha1.ControllerConfig{Limit: v1alpha1.LimitPartial, SyncEvery: b.o.poll.String()},
			CloudProvider:    v1alpha1.CloudProviderRefs{AzureRef: &v1alpha1.LocalObjectRef{Name: objName}}}})
}

// awaitFirstPasses waits until the controller process has done a pass of
// each object and every Node carries its host's env label.
func (b *bench) awaitFirstPasses(ctx context.Context) error {
	err := b.until(ctx, func() bool {
		text, _ := b.ctrl.Metrics()
		return benchkit.MetricValue(text, "tagsync_nodetags_passes_total") >= 1 && benchkit.MetricValue(text, "tagsync_metadata_passes_total") >= 1
	}, "the first passes")
	if err != nil {
		return err
	}
	for _, host := range b.hosts {
		if _, err := b.labelled(ctx, host, labelPrefix+"env", "prod"); err != nil {
			return err
		}
	}
	return nil
}

// labelled waits until every Node of host carries label=value and returns
// when the last one did (as the watch saw it).
func (b *bench) labelled(ctx context.Context, host, label, value string) (time.Time, error) {
	var last time.Time
	for _, n := range b.nodesOf[host] {
		at, err := b.nodes.Await(ctx, "/"+n, func(s benchkit.ObjState) bool { return s.Labels[label] == value }, b.o.Timeout)
		if err != nil {
			return last, err
		}
		if at.After(last) {
			last = at
		}
	}
	return last, nil
}

// reverted waits until armsim's tags of id say env=prod again and returns
// when it saw them (polled every 100 ms).
func (b *bench) reverted(ctx context.Context, id string) (time.Time, error) {
	var at time.Time
	err := b.until(ctx, func() bool {
		t, err := b.arm.Tags(id)
		at = time.Now()
		return err == nil && t["env"] == "prod"
	}, "revert of "+id)
	return at, err
}

// nodeEdit is a portal edit of the k-th host of the rotation (scale sets
// and VMs in turn): a new tag name=v. It returns the host and the label
// to wait for.
func (b *bench) nodeEdit(k int, name string) (host, label string, err error) {
	host = b.hosts[(k/2)%b.o.scaleSets]
	if k%2 == 1 && b.o.vms > 0 {
		host = b.hosts[b.o.scaleSets+(k/2)%b.o.vms]
	}
	return host, labelPrefix + name, b.arm.SetTags(host, map[string]string{name: "v"})
}

// latency makes -edits portal edits of node-sync hosts and -edits outside
// edits of an owned tag (env=dev on a classified resource), one of each
// every -spacing, and measures each from the edit (armsim publishes its
// event before SetTags returns) to the labels on every Node of the host,
// or to the revert of env=prod.
func (b *bench) latency(ctx context.Context, mode string) (*LatencyResult, error) {
	b.arm.ResetCalls()
	r := &LatencyResult{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for k := range b.o.edits {
		g.Go(func() error {
			if !pause(gctx, time.Duration(k)*b.o.spacing) {
				return gctx.Err()
			}
			host, label, err := b.nodeEdit(k, fmt.Sprintf("%s-%d", mode, k))
			start := time.Now()
			if err != nil {
				return err
			}
			at, err := b.labelled(gctx, host, label, "v")
			mu.Lock()
			r.Node.Seconds = append(r.Node.Seconds, benchkit.Secs(at.Sub(start)))
			mu.Unlock()
			return err
		})
		g.Go(func() error {
			if !pause(gctx, time.Duration(k)*b.o.spacing+b.o.spacing/2) {
				return gctx.Err()
			}
			id := b.owned[(k*7919+len(mode)*31)%len(b.owned)]
			start := time.Now()
			if err := b.arm.SetTags(id, map[string]string{"env": "dev"}); err != nil {
				return err
			}
			at, err := b.reverted(gctx, id)
			mu.Lock()
			r.Metadata.Seconds = append(r.Metadata.Seconds, benchkit.Secs(at.Sub(start)))
			mu.Unlock()
			return err
		})
	}
	err := g.Wait()
	pause(ctx, 3*time.Second) // passes that follow the last edit
	r.ARM = benchkit.TallyARM(b.arm.Calls())
	r.summarise()
	benchkit.Logf("%s: node sync %s; metadata %s; ARM %s", mode, r.Node, r.Metadata, benchkit.OpsLine(r.ARM.ByOp))
	return r, err
}

// pause waits d (measurement windows, not synchronisation) and reports
// whether ctx is still live.
func pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// steady counts armsim's requests over a quiet window with events on and
// extrapolates the reads an hour: the window's rate plus one full pass
// (the hourly safety net).
func (b *bench) steady(ctx context.Context, fullPassReads int) (*SteadyResult, error) {
	pause(ctx, 5*time.Second)
	b.arm.ResetCalls()
	benchkit.Logf("steady: counting ARM requests for %s", b.o.window)
	if !pause(ctx, b.o.window) {
		return nil, ctx.Err()
	}
	r := &SteadyResult{WindowSeconds: b.o.window.Seconds(), ARM: benchkit.TallyARM(b.arm.Calls()), FullPassReads: fullPassReads}
	r.ReadsPerHour = int(float64(r.ARM.Reads)*3600/r.WindowSeconds) + r.FullPassReads
	r.PollingReadsPerHour = int(3600/b.o.poll.Seconds()) * r.FullPassReads
	benchkit.Logf("steady: %d reads in %s; %d an hour with events (polling every %s: %d)", r.ARM.Reads, b.o.window, r.ReadsPerHour, b.o.poll, r.PollingReadsPerHour)
	return r, ctx.Err()
}

// percentile is the nearest-rank p-th percentile of xs (0 when empty).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
