package main

import (
	"context"
	"time"

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
	if b.o.Has("events") || b.o.Has("steady") || b.o.Has("silent") || b.o.Has("lag") || b.o.Has("load") {
		if err := b.runMode(ctx, true); err != nil {
			return err
		}
	}
	if b.o.Has("polling") {
		if err := b.runMode(ctx, false); err != nil {
			return err
		}
	}
	if b.o.Has("ha") {
		return b.runHA(ctx)
	}
	return nil
}

// runMode starts the controller with events on or off, waits for its
// first passes and runs the mode's scenarios.
func (b *bench) runMode(ctx context.Context, events bool) error {
	b.az.Arm.ResetCalls()
	start := time.Now()
	if err := b.startController(ctx, events); err != nil {
		return err
	}
	defer b.stopController()
	b.res.Command = b.ctrl.Command
	if err := b.awaitFirstPasses(ctx); err != nil {
		return err
	}
	m := &ModeResult{First: FirstPasses{Seconds: benchkit.Secs(time.Since(start)), ARM: benchkit.TallyARM(b.az.Arm.Calls())}}
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
		{Name: "lag", Run: func(ctx context.Context) (err error) { m.Lag, err = b.lag(ctx); return err }},
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
		Spec: v1alpha1.AzureMetadataSpec{Opcode: v1alpha1.OpcodeAdd, ResourceTags: map[string]string{"env": "prod"}, Subscriptions: b.az.SubIDs[1:]}}); err != nil {
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
	for _, host := range b.az.Hosts {
		if _, err := b.az.Labelled(ctx, host, labelPrefix+"env", "prod", b.o.Timeout); err != nil {
			return err
		}
	}
	return nil
}

// latency is goal 1 in one mode (benchkit.Azure.Latency): -edits edits
// of each kind, one every -spacing.
func (b *bench) latency(ctx context.Context, mode string) (*LatencyResult, error) {
	return b.az.Latency(ctx, mode, b.o.edits, b.o.spacing, b.ctrl.Running, b.o.Timeout)
}

// steady counts armsim's requests over a quiet window with events on and
// extrapolates the reads an hour: the window's rate plus one full pass
// (the hourly safety net).
func (b *bench) steady(ctx context.Context, fullPassReads int) (*SteadyResult, error) {
	benchkit.Pause(ctx, 5*time.Second)
	b.az.Arm.ResetCalls()
	benchkit.Logf("steady: counting ARM requests for %s", b.o.window)
	if !benchkit.Pause(ctx, b.o.window) {
		return nil, ctx.Err()
	}
	r := &SteadyResult{WindowSeconds: b.o.window.Seconds(), ARM: benchkit.TallyARM(b.az.Arm.Calls()), FullPassReads: fullPassReads}
	r.ReadsPerHour = int(float64(r.ARM.Reads)*3600/r.WindowSeconds) + r.FullPassReads
	r.PollingReadsPerHour = int(3600/b.o.poll.Seconds()) * r.FullPassReads
	benchkit.Logf("steady: %d reads in %s; %d an hour with events (polling every %s: %d)", r.ARM.Reads, b.o.window, r.ReadsPerHour, b.o.poll, r.PollingReadsPerHour)
	return r, ctx.Err()
}
