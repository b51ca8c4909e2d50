package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

// Object names: one CloudMetadata per cloud, each referencing its request.
const (
	azureName = "azure"
	awsName   = "aws"
	// syncEvery keeps periodic passes out of the measurements (every pass
	// measured is one the harness asked for or a spec change caused).
	syncEvery = "24h"
)

// Scenarios starts the controller, creates the objects, waits for the
// initial pass and runs the selected scenarios in order: steady, aws,
// apply, then the memory verdict over all of them.
func (b *bench) Scenarios(ctx context.Context) error {
	res := b.res
	if err := b.startController(ctx); err != nil {
		return err
	}
	res.Command = b.ctrl.Command
	mem := &MemoryResult{Memory: benchkit.Memory{GoalMiB: 200}}
	res.Memory = mem
	sample := func(at string) benchkit.MemorySample {
		s := b.memory(at)
		mem.Samples = append(mem.Samples, s)
		return s
	}
	sample("informers synced, no objects yet")
	var err error
	if res.Initial, err = b.initial(ctx); err != nil {
		return fmt.Errorf("initial pass: %w", err)
	}
	sample("initial passes done (everything already in sync)")
	err = b.o.RunSteps(ctx, []benchkit.Step{
		{Name: "steady", After: "after the steady resyncs", Run: func(ctx context.Context) (err error) { res.Steady, err = b.steady(ctx); return err }},
		{Name: "aws", After: "after the AWS tag add", Run: func(ctx context.Context) (err error) { res.AWS, err = b.awsApply(ctx); return err }},
		{Name: "apply", After: "after the Azure tag add", Run: func(ctx context.Context) (err error) { res.Apply, err = b.azureApply(ctx); return err }},
	}, func(at string) { sample(at) })
	if err != nil {
		return err
	}
	mem.Settle(b.ctrl, b.o.Scenarios, sample)
	mem.AzureResources, mem.AWSResources = b.azureCount(), len(b.ec2IDs)
	if b.o.auditLog == "file" {
		mem.AuditLog = "file"
	}
	return nil
}

// azureCount is the number of classified Azure resources (0 without armsim).
func (b *bench) azureCount() int {
	if b.arm == nil {
		return 0
	}
	return b.azureResources()
}

// initial creates the requests and CloudMetadata objects and waits until
// each has finished its first pass over every resource (nothing to write:
// the estate already carries env=prod).
func (b *bench) initial(ctx context.Context) (*InitialResult, error) {
	r := &InitialResult{}
	start := time.Now()
	if b.arm != nil {
		b.arm.ResetCalls()
		az := &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: azureName},
			Spec: v1alpha1.AzureMetadataSpec{Opcode: v1alpha1.OpcodeAdd, ResourceTags: map[string]string{"env": "prod"}, Subscriptions: b.estate.Subscriptions}}
		if err := b.c.Create(ctx, az); err != nil {
			return r, err
		}
		if err := b.c.Create(ctx, cloudMetadata(azureName, azureClassifier, &v1alpha1.CloudProviderRefs{AzureRef: &v1alpha1.LocalObjectRef{Name: azureName}})); err != nil {
			return r, err
		}
	}
	if b.moto != nil {
		aw := &v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: awsName},
			Spec: v1alpha1.AWSMetadataSpec{Opcode: v1alpha1.OpcodeAdd, ResourceTags: map[string]string{"env": "prod"}, Regions: []string{"us-east-1"}}}
		if err := b.c.Create(ctx, aw); err != nil {
			return r, err
		}
		if err := b.c.Create(ctx, cloudMetadata(awsName, awsClassifier, &v1alpha1.CloudProviderRefs{AWSRef: &v1alpha1.LocalObjectRef{Name: awsName}})); err != nil {
			return r, err
		}
	}
	if b.arm != nil {
		if err := b.waitMatched(ctx, azureName, b.azureResources()); err != nil {
			return r, err
		}
		r.AzureSeconds = benchkit.Secs(time.Since(start))
		r.AzureARM = benchkit.TallyARM(b.arm.Calls())
		benchkit.Logf("Azure: initial pass over %d resources done after %.1fs; ARM %s", b.azureResources(), r.AzureSeconds, benchkit.OpsLine(r.AzureARM.ByOp))
	}
	if b.moto != nil {
		if err := b.waitMatched(ctx, awsName, len(b.ec2IDs)); err != nil {
			return r, err
		}
		r.AWSSeconds = benchkit.Secs(time.Since(start))
		text, _ := b.ctrl.Metrics()
		r.AWSCalls = cloudCalls(text, "aws")
		benchkit.Logf("AWS: initial pass over %d instances done after %.1fs; calls %s", len(b.ec2IDs), r.AWSSeconds, benchkit.OpsLine(r.AWSCalls))
	}
	return r, nil
}

// cloudMetadata is a CloudMetadata with one classifier and the refs given.
func cloudMetadata(name, classifier string, refs *v1alpha1.CloudProviderRefs) *v1alpha1.CloudMetadata {
	return &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: v1alpha1.CloudMetadataSpec{
		Classifiers:      map[string]string{classifier: "owned"},
		ControllerConfig: v1alpha1.ControllerConfig{Limit: v1alpha1.LimitPartial, SyncEvery: syncEvery},
		CloudProvider:    *refs,
	}}
}

// waitMatched waits until a CloudMetadata is Ready for its generation with
// every resource matched and in sync (benchkit.WaitMatched).
func (b *bench) waitMatched(ctx context.Context, name string, want int) error {
	return benchkit.WaitMatched(ctx, b.c, namespace, name, want, b.ctrl.Running, b.ctrl.LogFile, b.o.Timeout)
}

// requestPass asks a CloudMetadata for a pass and returns the seconds
// until its status said it was served (benchkit.RequestPass).
func (b *bench) requestPass(ctx context.Context, name string) (float64, error) {
	return benchkit.RequestPass(ctx, b.c, namespace, name, b.ctrl.Running, b.o.Timeout)
}

// steady measures unchanged resyncs of the Azure estate (goal A): ARM
// calls per pass by operation, as armsim counts them. One AWS resync is
// measured too (not a goal).
func (b *bench) steady(ctx context.Context) (*SteadyResult, error) {
	n := b.azureResources()
	r := &SteadyResult{Resources: n, Subscriptions: b.o.subs, DiscoveryBudget: (n + 999) / 1000}
	for i := range b.o.resyncs {
		time.Sleep(time.Second)
		b.arm.ResetCalls()
		text, _ := b.ctrl.Metrics()
		passBefore := benchkit.MetricValue(text, "tagsync_metadata_sync_duration_seconds_sum", `cloud="azure"`)
		wall, err := b.requestPass(ctx, azureName)
		if err != nil {
			return r, err
		}
		time.Sleep(2 * time.Second) // any follow-up pass
		text, _ = b.ctrl.Metrics()
		run := SteadyRun{WallSeconds: wall, PassSeconds: benchkit.Round3(benchkit.MetricValue(text, "tagsync_metadata_sync_duration_seconds_sum", `cloud="azure"`) - passBefore),
			ARM: benchkit.TallyARM(b.arm.Calls())}
		r.Runs = append(r.Runs, run)
		benchkit.Logf("steady resync %d: %.2fs (pass %.2fs); ARM %s", i+1, run.WallSeconds, run.PassSeconds, benchkit.OpsLine(run.ARM.ByOp))
		r.Discovery = max(r.Discovery, run.ARM.Discovery)
		r.Writes = max(r.Writes, run.ARM.Writes)
		r.OtherReads = max(r.OtherReads, run.ARM.Reads-run.ARM.Discovery)
	}
	r.Met = len(r.Runs) > 0 && r.Discovery <= r.DiscoveryBudget && r.Writes == 0
	if b.moto != nil {
		before, _ := b.ctrl.Metrics()
		wall, err := b.requestPass(ctx, awsName)
		if err != nil {
			return r, err
		}
		time.Sleep(2 * time.Second)
		after, _ := b.ctrl.Metrics()
		r.AWSRun = &AWSSteady{WallSeconds: wall, Calls: benchkit.DiffCalls(cloudCalls(before, "aws"), cloudCalls(after, "aws"))}
		benchkit.Logf("AWS steady resync: %.2fs; calls %s", wall, benchkit.OpsLine(r.AWSRun.Calls))
	}
	return r, nil
}

// awsApply adds team=platform to the AWSMetadata and measures until every
// instance carries it (goal C): write calls from the controller's metrics,
// the tag counted in moto.
func (b *bench) awsApply(ctx context.Context) (*AWSResult, error) {
	r := &AWSResult{Resources: len(b.ec2IDs), WriteBudget: (len(b.ec2IDs) + 999) / 1000}
	before, _ := b.ctrl.Metrics()
	aw := &v1alpha1.AWSMetadata{}
	start := time.Now()
	if err := b.updateSpec(ctx, awsName, aw, func() { aw.Spec.ResourceTags["team"] = "platform" }); err != nil {
		return r, err
	}
	if err := b.waitServed(ctx, awsName, aw, func() *v1alpha1.ProviderMetadataStatus { return &aw.Status }, len(b.ec2IDs)); err != nil {
		return r, err
	}
	r.Seconds = benchkit.Secs(time.Since(start))
	time.Sleep(time.Second)
	after, _ := b.ctrl.Metrics()
	r.Calls = benchkit.DiffCalls(cloudCalls(before, "aws"), cloudCalls(after, "aws"))
	r.Writes = r.Calls["ec2:CreateTags"] + r.Calls["ec2:DeleteTags"]
	n, err := b.countEC2Tag(ctx, "team", "platform")
	if err != nil {
		return r, err
	}
	r.Tagged = n
	r.Met = r.Writes <= r.WriteBudget && r.Tagged == len(b.ec2IDs)
	benchkit.Logf("AWS: team=platform on %d/%d instances after %.1fs; calls %s", n, len(b.ec2IDs), r.Seconds, benchkit.OpsLine(r.Calls))
	return r, nil
}

// azureApply adds costcenter=cc-42 to the AzureMetadata and measures from
// the spec change to armsim's last tag write (goal B).
func (b *bench) azureApply(ctx context.Context) (*ApplyResult, error) {
	n := b.azureResources()
	perSub := n / b.o.subs
	r := &ApplyResult{Resources: n, Subscriptions: b.o.subs, PerSubscription: perSub, WriteQPSFlag: b.o.writeQPS,
		NetworkPerSubscription: b.networkPerSubscription()}
	r.QuotaSeconds = max(float64(max(0, perSub-armWriteCapacity))/armWriteRefill,
		float64(max(0, r.NetworkPerSubscription-networkWriteCapacity))/networkWriteRefill)
	r.GoalSeconds = benchkit.Round3(1.1 * r.QuotaSeconds)
	b.writes.start()
	b.arm.ResetCalls()
	az := &v1alpha1.AzureMetadata{}
	start := time.Now()
	if err := b.updateSpec(ctx, azureName, az, func() { az.Spec.ResourceTags["costcenter"] = "cc-42" }); err != nil {
		return r, err
	}
	var progress []ApplyProgress
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastLog := time.Now()
	for {
		ok, throttled, _ := b.writes.snapshot()
		el := time.Since(start)
		progress = append(progress, ApplyProgress{AfterSeconds: benchkit.Secs(el), Writes: ok, Throttled: throttled})
		if ok >= n {
			break
		}
		if err := b.ctrl.Running(); err != nil {
			return r, err
		}
		if b.o.applyWait > 0 && el >= b.o.applyWait {
			r.Incomplete = true
			break
		}
		if el > b.o.Timeout && b.o.applyWait == 0 {
			return r, fmt.Errorf("%d of %d writes after %s", ok, n, el.Round(time.Second))
		}
		if time.Since(lastLog) >= 15*time.Second {
			benchkit.Logf("apply: %d/%d writes after %s, %d x 429", ok, n, el.Round(time.Second), throttled)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-tick.C:
		}
	}
	b.writes.mu.Lock()
	ok, throttled, last := 0, b.writes.status[http.StatusTooManyRequests], b.writes.last
	subs := make([]string, 0, len(b.writes.bySub))
	for s := range b.writes.bySub {
		subs = append(subs, s)
	}
	sort.Strings(subs)
	for _, s := range subs {
		ts := b.writes.bySub[s]
		ok += len(ts)
		r.BySubscription = append(r.BySubscription, SubWrites{Subscription: s, Writes: len(ts),
			FirstSeconds: benchkit.Secs(ts[0].Sub(start)), LastSeconds: benchkit.Secs(ts[len(ts)-1].Sub(start))})
	}
	r.WriteOps = maps.Clone(b.writes.ops)
	b.writes.mu.Unlock()
	r.Writes, r.Throttled = ok, throttled
	r.Progress = thin(progress, 120)
	if !r.Incomplete {
		r.Seconds = benchkit.Secs(last.Sub(start))
		r.Met = r.Seconds <= r.GoalSeconds && r.Throttled == 0
		// The status of the pass.
		if err := b.waitServed(ctx, azureName, az, func() *v1alpha1.ProviderMetadataStatus { return &az.Status }, n); err != nil {
			return r, err
		}
		r.StatusSeconds = benchkit.Secs(time.Since(start))
		benchkit.Logf("apply: %d writes, last after %.1fs (status %.1fs), %d x 429", ok, r.Seconds, r.StatusSeconds, throttled)
		return r, nil
	}
	// Extrapolate from the rate of the last half of the wait.
	el := time.Since(start).Seconds()
	var mid ApplyProgress
	for _, p := range progress {
		if p.AfterSeconds <= el/2 {
			mid = p
		}
	}
	rate := float64(ok-mid.Writes) / (el - mid.AfterSeconds)
	r.RatePerSecond = benchkit.Round3(rate)
	if rate > 0 {
		r.ExtrapolatedSeconds = benchkit.Round3(el + float64(n-ok)/rate)
	}
	benchkit.Logf("apply: stopped waiting after %.0fs with %d/%d writes (%.2f/s over the last half, %d x 429); extrapolated completion %.0fs",
		el, ok, n, rate, throttled, r.ExtrapolatedSeconds)
	return r, nil
}

// thin keeps at most n evenly spaced items (and the last).
func thin[T any](xs []T, n int) []T {
	if len(xs) <= n {
		return xs
	}
	var out []T
	step := float64(len(xs)) / float64(n)
	for i := 0.0; int(i) < len(xs)-1; i += step {
		out = append(out, xs[int(i)])
	}
	return append(out, xs[len(xs)-1])
}

// metadataObject is an AzureMetadata or AWSMetadata.
type metadataObject interface {
	client.Object
}

// updateSpec changes a request's spec with fn, retrying on conflicts.
func (b *bench) updateSpec(ctx context.Context, name string, obj metadataObject, fn func()) error {
	for i := 0; ; i++ {
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			return err
		}
		fn()
		err := b.c.Update(ctx, obj)
		if err == nil || i > 5 {
			return err
		}
	}
}

// waitServed waits until a pass has served the request's current
// generation (its Applied condition says so) with want resources in sync.
func (b *bench) waitServed(ctx context.Context, name string, obj metadataObject, status func() *v1alpha1.ProviderMetadataStatus, want int) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, b.o.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := b.ctrl.Running(); err != nil {
			return false, err
		}
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			return false, err
		}
		st := status()
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionApplied)
		last = fmt.Sprintf("generation %d, matched %d, inSync %d, failed %d, applied %+v", obj.GetGeneration(), st.Matched, st.InSync, st.Failed, c)
		return c != nil && c.ObservedGeneration == obj.GetGeneration() && st.ObservedGeneration == obj.GetGeneration() && int(st.InSync) == want, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w (last: %s); controller log:\n%s", name, err, last, benchkit.Tail(b.ctrl.LogFile, 20))
	}
	return nil
}

// networkPerSubscription is how many of a subscription's resources are
// Network's (their tag writes spend Network's write budget).
func (b *bench) networkPerSubscription() int {
	n := 0
	for _, typ := range armsimtest.ClusterTypes {
		if strings.HasPrefix(strings.ToLower(typ), "microsoft.network/") {
			n += b.o.perType
		}
	}
	return n
}
